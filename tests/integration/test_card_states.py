"""A stored player's state before a game, read from their card (``worker.boards.states``): on
glicko2 and openskill ladders with the deviation (and glicko2's volatility), and the days
since the last rated game, so that a preview reads a player as rating a game now would.

SPEC 7: glicko2 keeps "per player rating, deviation, volatility" with "deviation growth with
inactivity"; openskill keeps "mu, sigma per player".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from engine import Game, PlayerState
from engine.rating import preview
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import EVERYONE, card
from tests.integration.test_new_rulesets import LADDERS, NOW, played
from worker.boards import reader, states
from worker.entrypoints.api.app import create_app
from worker.ladders import default_config_path


@pytest.fixture
def rt(make_runtime: Any, tmp_path: Path) -> Any:
    """The shipped ladders with a glicko2 ladder (chess) and an openskill one (arena)."""
    path = tmp_path / "ladders.toml"
    path.write_text(default_config_path().read_text(encoding="utf-8") + LADDERS, encoding="utf-8")
    rt = make_runtime(ladder_config=path)
    publish(
        rt,
        played("chess", "alice", "bob", 30),
        played("chess", "alice", "carol", 12),
        played("arena", "alice", "bob", 5),
        game("alice", "bob", ended_at=NOW - timedelta(days=2)),
    )
    drain(rt)
    return rt


@pytest.fixture
def client(rt: Any) -> Iterator[TestClient]:
    app = create_app(rt.config, rt.leaderboard_redis, rt.engine, access=EVERYONE)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_a_glicko2_state_has_the_cards_deviation_volatility_and_days_since_the_last_game(rt):
    """What rating a game an hour from now would read: 12 days and an hour without a game."""
    state = states.player_state(rt.leaderboard_redis, "chess", "alice", NOW + timedelta(hours=1))
    shown = card(rt, "chess", "alice")
    assert (float(shown["deviation"]), float(shown["volatility"])) == (
        state.deviation,
        state.volatility,
    )
    assert (float(shown["rating"]), 2) == (state.rating, state.rated_games)
    assert 12 * 24 + 1 == pytest.approx(state.idle_days * 24)


def test_an_openskill_state_has_sigma_and_a_seed_ruleset_state_none(rt):
    """openskill's sigma is the state's deviation; gammon42 keeps no deviation."""
    arena = states.player_state(rt.leaderboard_redis, "arena", "bob")
    assert float(card(rt, "arena", "bob")["deviation"]) == arena.deviation
    gammon42 = states.player_state(rt.leaderboard_redis, "gammon42", "alice")
    assert (None, None, 1) == (gammon42.deviation, gammon42.volatility, gammon42.rated_games)


def test_the_readers_player_state_is_the_same_and_an_id_without_a_card_is_unknown(rt):
    """``reader.player_state``, which the previews read, is this one; no card, no player."""
    assert reader.player_state is states.player_state
    with pytest.raises(reader.UnknownPlayer, match="no player 'zed' on chess"):
        reader.player_state(rt.leaderboard_redis, "chess", "zed")
    assert {"alice"} == set(states.read(rt.leaderboard_redis, "chess", ["alice", "zed", "\x00"]))


@pytest.mark.parametrize("ladder", ["chess", "arena"])
def test_a_preview_of_stored_players_reads_their_deviation(rt, client, ladder):
    """The preview of two stored glicko2 or openskill players rates with their deviations, not
    the start one (glicko2's grown by their days away)."""
    shown = client.get(f"/ladders/{ladder}/preview", params={"a": "bob", "b": "alice"}).json()
    rules = rt.config.ladders[ladder].current
    bob, alice = (states.player_state(rt.leaderboard_redis, ladder, p) for p in ("bob", "alice"))
    assert shown["win_probability"] == pytest.approx(
        preview(rules, bob, alice, Game()).win_probability, abs=1e-9
    )
    bare = preview(rules, PlayerState(bob.rating), PlayerState(alice.rating), Game())
    assert abs(bare.win_probability - shown["win_probability"]) > 1e-3
