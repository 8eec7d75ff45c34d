"""glicko2 and openskill through the whole pipeline (SPEC 7): published with RPUSH, rated by a
worker, on the boards and cards, in receipts, and verified by replay.

SPEC 7: "Receipts of these rulesets carry each player's uncertainty (deviation or sigma) and
the expected score before the game"; "openskill ... boards rank by mu - k*sigma (k in TOML,
default 3)"; glicko2's TOML has "start rating, start deviation, start volatility, tau,
deviation growth with inactivity, provisional-deviation threshold, board-deviation threshold".
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import display_rating, glicko2, openskill
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board, card, command, ledger, outcome, stored_players
from tests.ladders import ladder, with_shipped
from worker import keys
from worker.ops import reconcile
from worker.ops.verify import verify

NOW = datetime.now(UTC).replace(microsecond=0)

LADDERS = ladder("chess", "glicko2", {"tau": 0.5, "board_deviation": 200}, public_board=True)
LADDERS += ladder("arena", "openskill", {"k": 3})


@pytest.fixture
def rt(make_runtime: Any, tmp_path: Path) -> Any:
    """The shipped ladders with a glicko2 ladder (chess) and an openskill one (arena)."""
    return make_runtime(ladder_config=with_shipped(tmp_path, LADDERS))


def played(ladder: str, winner: str, loser: str, days_ago: float, **extra: Any) -> dict:
    return game(winner, loser, ladder=ladder, ended_at=NOW - timedelta(days=days_ago), **extra)


def clean(rt: Any, name: str) -> None:
    """``ladder verify`` and ``ladder reconcile`` find nothing."""
    assert [] == verify(rt.engine, rt.leaderboard_redis, rt.config.ladders[name]).mismatches
    assert reconcile.check(rt.engine, rt.leaderboard_redis, rt.config.ladders[name]).clean


def receipt(rt: Any, event_id: str) -> dict[str, Any]:
    return json.loads(rt.redis.get(keys.receipt(event_id)))


def test_a_glicko2_game_rates_both_players_as_the_paper_does_and_verify_agrees(rt):
    """Two new players (1500 / 350 / 0.06): each side moves as Glickman's steps 1-8 say."""
    publish(rt, played("chess", "alice", "bob", 1, event_id="c-1"))
    drain(rt)
    won = glicko2.update(1500.0, 350.0, 0.06, [(1500.0, 350.0, 1.0, 1.0)], 0.5)
    lost = glicko2.update(1500.0, 350.0, 0.06, [(1500.0, 350.0, 0.0, 1.0)], 0.5)
    assert {"alice": won[0], "bob": lost[0]} == board(rt, "chess")
    stored = stored_players(rt, "chess")
    assert (won[1], won[2]) == (stored["alice"]["deviation"], stored["alice"]["volatility"])
    shown = card(rt, "chess", "alice")
    assert (repr(won[1]), repr(won[2]), "1") == (
        shown["deviation"],
        shown["volatility"],
        shown["provisional"],
    )
    players = {p["player_id"]: p for p in receipt(rt, "c-1")["players"]}
    assert (won[1], 0.5, None) == (
        players["alice"]["deviation"],
        players["alice"]["expected"],
        players["alice"]["k"],
    )
    assert lost[0] - 1500.0 == players["bob"]["delta"]
    clean(rt, "chess")


def test_a_glicko2_deviation_grows_with_the_days_without_a_game(rt):
    """Deviation growth with inactivity: the second game starts from a grown deviation."""
    publish(rt, played("chess", "alice", "bob", 30, event_id="c-1"))
    publish(rt, played("chess", "alice", "carol", 0.5, event_id="c-2"))
    drain(rt)
    first = ledger(rt, "chess", "alice")[0]
    days = 29.5
    grown = glicko2.grown(first["deviation"], first["volatility"], days * 0.21436, 350.0)
    assert grown > first["deviation"]
    after = glicko2.update(
        first["rating_after"], grown, first["volatility"], [(1500.0, 350.0, 1.0, 1.0)], 0.5
    )
    assert pytest.approx(after[0], abs=1e-9) == ledger(rt, "chess", "alice")[1]["rating_after"]
    clean(rt, "chess")


def test_the_glicko2_public_list_holds_only_players_below_the_board_deviation(rt):
    """A board option lists only players whose deviation is below a threshold (200 here)."""
    events = [played("chess", "alice", f"o{i}", 10 - i * 0.1) for i in range(6)]
    events.append(played("chess", "bob", "o0", 0.1))
    publish(rt, *events)
    drain(rt)
    stored = stored_players(rt, "chess")
    below = {
        pid for pid, p in stored.items() if p["deviation"] is not None and p["deviation"] < 200
    }
    assert "alice" in below and "bob" not in below
    assert below == set(board(rt, "chess", "public"))
    clean(rt, "chess")


def test_an_openskill_board_ranks_by_mu_minus_k_sigma(rt):
    """SPEC 7: boards rank by mu - k*sigma; the card keeps mu as the rating and sigma."""
    publish(rt, played("arena", "alice", "bob", 1, event_id="a-1"))
    drain(rt)
    model = openskill.Model()
    [[(mu_a, sigma_a)], [(mu_b, sigma_b)]] = openskill.rate(
        model, [[(25.0, 25.0 / 3)], [(25.0, 25.0 / 3)]], [1, 2]
    )
    assert {"alice": mu_a - 3 * sigma_a, "bob": mu_b - 3 * sigma_b} == board(rt, "arena")
    assert (repr(mu_a), repr(sigma_a)) == (
        card(rt, "arena", "alice")["rating"],
        card(rt, "arena", "alice")["deviation"],
    )
    players = {p["player_id"]: p for p in receipt(rt, "a-1")["players"]}
    assert sigma_b == players["bob"]["deviation"]
    assert pytest.approx(0.5) == players["alice"]["expected"]
    assert "volatility" not in players["alice"]
    clean(rt, "arena")


@pytest.mark.parametrize("name", ["chess", "arena"])
def test_a_void_re_rates_the_new_rulesets_exactly(rt, name):
    """A void re-rates as if the game had never been played, deviation included: verify
    replays the log without it and finds every stored number."""
    publish(
        rt,
        played(name, "a", "b", 3, event_id="g-1"),
        played(name, "b", "c", 2, event_id="g-2"),
        played(name, "a", "c", 1, event_id="g-3"),
    )
    drain(rt)
    before = stored_players(rt, name)["b"]
    assert 0 == command(rt, "void", name, "g-1", "--reason", "test")
    after = stored_players(rt, name)["b"]
    assert (before["rating"], before["deviation"]) != (after["rating"], after["deviation"])
    assert "correction" == ledger(rt, name, "b")[-1]["kind"]
    assert after["deviation"] == ledger(rt, name, "b")[-1]["deviation"]
    clean(rt, name)


def test_a_seed_ruleset_still_gets_no_deviation(rt):
    """The seed rulesets keep no deviation: no card field, no receipt key, empty columns."""
    publish(rt, played("gammon42", "alice", "bob", 1, event_id="g-1"))
    drain(rt)
    assert "deviation" not in card(rt, "gammon42", "alice")
    assert "deviation" not in receipt(rt, "g-1")["players"][0]
    assert stored_players(rt, "gammon42")["alice"]["deviation"] is None


# -- draws and team games (SPEC 7 shapes) ---------------------------------------------------


def draw(ladder: str, a: str, b: str, days_ago: float, **extra: Any) -> dict:
    """A 1v1 draw: ``result`` draw with ``players`` instead of winner and loser."""
    event = played(ladder, a, b, days_ago, **extra)
    del event["winner"], event["loser"]
    return {**event, "result": "draw", "players": [{"player_id": a}, {"player_id": b}]}


def teams(ladder: str, ranked: list[tuple[int, list[str]]], days_ago: float, **extra: Any) -> dict:
    """A team or free-for-all game: teams of player ids with their finishing ranks."""
    event = played(ladder, "x", "y", days_ago, **extra)
    del event["winner"], event["loser"]
    lineup = [{"rank": r, "players": [{"player_id": p} for p in ids]} for r, ids in ranked]
    return {**event, "teams": lineup}


def test_a_draw_between_equal_glicko2_players_moves_no_rating_and_shrinks_both_deviations(rt):
    """A draw is a score of 0.5 for each side: two equal players keep their rating."""
    publish(rt, draw("chess", "alice", "bob", 1, event_id="d-1"))
    drain(rt)
    expected = glicko2.update(1500.0, 350.0, 0.06, [(1500.0, 350.0, 0.5, 1.0)], 0.5)
    assert {"alice": expected[0], "bob": expected[0]} == board(rt, "chess")
    assert expected[1] < 350.0
    players = {p["player_id"]: p for p in receipt(rt, "d-1")["players"]}
    assert (0.5, expected[1]) == (players["bob"]["expected"], players["bob"]["deviation"])
    assert ("rated", None) == outcome(rt, "chess", "d-1")
    clean(rt, "chess")


def test_an_openskill_team_game_rates_every_player_as_the_package_model_does(rt):
    """A 2v2 and a four-player free-for-all with a tie, each player rated at once."""
    publish(
        rt,
        teams("arena", [(1, ["a", "b"]), (2, ["c", "d"])], 2, event_id="t-1"),
        teams("arena", [(1, ["a"]), (2, ["c"]), (2, ["e"]), (4, ["f"])], 1, event_id="t-2"),
    )
    drain(rt)
    model = openskill.Model()
    new = (25.0, 25.0 / 3)
    [[a, b], [c, d]] = openskill.rate(model, [[new, new], [new, new]], [1, 2])
    [[a2], [c2], [e2], [f2]] = openskill.rate(model, [[a], [c], [new], [new]], [1, 2, 2, 4])
    want = {"a": a2, "b": b, "c": c2, "d": d, "e": e2, "f": f2}
    assert {pid: mu - 3 * sigma for pid, (mu, sigma) in want.items()} == board(rt, "arena")
    assert 4 == len(receipt(rt, "t-2")["players"])
    clean(rt, "arena")


def test_a_glicko2_free_for_all_and_a_void_of_it_verify(rt):
    """Four players, each against the others as teams of one; voiding the game re-rates all."""
    publish(
        rt,
        teams("chess", [(1, ["a"]), (2, ["b"]), (3, ["c"]), (4, ["d"])], 2, event_id="f-1"),
        played("chess", "d", "a", 1, event_id="f-2"),
    )
    drain(rt)
    ratings = board(rt, "chess")
    assert ratings["b"] > 1500.0 > ratings["c"]  # b and c played f-1 alone
    assert 0 < ledger(rt, "chess", "a")[0]["delta"] and 0 > ledger(rt, "chess", "d")[0]["delta"]
    clean(rt, "chess")
    assert 0 == command(rt, "void", "chess", "f-1", "--reason", "test")
    assert {"a", "d"} == set(board(rt, "chess"))
    clean(rt, "chess")


@pytest.mark.parametrize("name", ["gammon42", "fibs", "prostriker"])
def test_a_seed_ruleset_dead_letters_a_draw_and_a_team_game(rt, name):
    """SPEC 7: the seed rulesets rate 1v1 wins only; another shape is dead-lettered as
    ``unsupported_shape`` with a detail that says so (not as an id conflict), and nobody
    is created."""
    publish(
        rt,
        draw(name, "alice", "bob", 1, event_id="d-1"),
        teams(name, [(1, ["a", "b"]), (2, ["c", "d"])], 1, event_id="t-1"),
    )
    drain(rt)
    letters = {d.event_id: (d.reason, d.detail) for d in rt.dead_letters.page(None, limit=10)}
    assert {
        "d-1": ("unsupported_shape", f"ladder {name!r} ({name}) rates 1v1 wins only, not draws"),
        "t-1": (
            "unsupported_shape",
            f"ladder {name!r} ({name}) rates 1v1 wins only, not team games",
        ),
    } == letters
    assert {} == stored_players(rt, name)
    assert {} == board(rt, name)


# -- seasons (SPEC 7: "seasons (a soft reset: deviation raised, not the rating)") -----------


@pytest.mark.parametrize("name", ["chess", "arena"])
def test_a_season_reset_raises_the_deviation_keeps_the_rating_and_verify_agrees(rt, name):
    """Closing a season with --reset toward-start moves each deviation halfway back to the
    start deviation and leaves every rating; the archive ranks as the board does."""
    publish(rt, *(played(name, "a", f"o{i}", 5 - i * 0.5) for i in range(4)))
    drain(rt)
    before = stored_players(rt, name)
    live_board = board(rt, name)
    argv = ["season", "close", name, "--name", "S0", "--reset", "toward-start"]
    assert 0 == command(rt, *argv, "--fraction", "0.5")
    after = stored_players(rt, name)
    start = rt.config.ladders[name].current.start_deviation
    for pid, was in before.items():
        assert was["rating"] == after[pid]["rating"]
        if was["deviation"] is not None:
            assert was["deviation"] + (start - was["deviation"]) * 0.5 == after[pid]["deviation"]
    archive = rt.redis.zrange(keys.season(name, "S0"), 0, -1, withscores=True)
    assert live_board == {m.decode(): s for m, s in archive}
    assert "season" == ledger(rt, name, "a")[-1]["kind"]
    publish(rt, played(name, "a", "o9", 0.1))
    drain(rt)
    clean(rt, name)


def test_a_card_shows_the_deviation_and_on_openskill_the_board_score(rt):
    """The card (``ladder player``, the console, the HTTP card) shows a player's deviation
    beside the rating, and on openskill the board's score mu - k*sigma it is ranked by."""
    from worker.boards import reader
    from worker.service import cards

    publish(rt, *(played(n, "alice", "bob", 1) for n in ("chess", "arena", "gammon42")))
    drain(rt)
    for name in ("chess", "arena"):
        found = reader.card(rt.leaderboard_redis, name, "alice")
        stored = stored_players(rt, name)["alice"]
        assert (stored["deviation"], stored["volatility"]) == (found.deviation, found.volatility)
        lines = dict(cards.facts(rt.config.ladders[name], found, str))
        rules = rt.config.ladders[name].current
        assert f"± {display_rating(rules, stored['deviation'])}" == lines["Deviation"]
        score = board(rt, name)["alice"]
        assert ("Board score" in lines) == (name == "arena")
        if name == "arena":
            assert display_rating(rules, score) == lines["Board score"]
    assert "Deviation" not in dict(
        cards.facts(
            rt.config.ladders["gammon42"],
            reader.card(rt.leaderboard_redis, "gammon42", "alice"),
            str,
        )
    )


# -- import and export of the deviation -----------------------------------------------------


def test_an_import_gives_the_deviation_and_volatility_and_the_first_game_starts_from_them(
    rt, tmp_path
):
    """An import line may give a glicko2 player's deviation and volatility (openskill's sigma
    as its deviation): the card shows them, the first game rates from them (the paper's
    update from 1700 / 80 / 0.05, not from the start deviation), verify replays them from
    the import row, the export carries them, and the same file imported again changes
    nothing."""
    from worker.boards import export
    from worker.ops.importer import import_file

    path = tmp_path / "chess.jsonl"
    path.write_text(
        '{"player_id": "vet", "rating": 1700, "deviation": 80, "volatility": 0.05}\n'
        '{"player_id": "new", "rating": 1500}\n',
        encoding="utf-8",
    )
    cfg = rt.config.ladders["chess"]
    assert 2 == import_file(rt.engine, rt.leaderboard_redis, cfg, path).imported
    assert ("80.0", "0.05") == (
        card(rt, "chess", "vet")["deviation"],
        card(rt, "chess", "vet")["volatility"],
    )
    import_row = ledger(rt, "chess", "vet")[0]
    assert ("import", 80.0, 0.05) == (
        import_row["kind"],
        import_row["deviation"],
        import_row["volatility"],
    )
    publish(rt, played("chess", "vet", "new", 0.5, event_id="c-1"))
    drain(rt)
    won = glicko2.update(1700.0, 80.0, 0.05, [(1500.0, 350.0, 1.0, 1.0)], 0.5)
    assert pytest.approx(won[0], abs=1e-9) == board(rt, "chess")["vet"]
    assert pytest.approx(won[1], abs=1e-9) == stored_players(rt, "chess")["vet"]["deviation"]
    clean(rt, "chess")
    shown = {x["player_id"]: x for x in export.lines(rt.leaderboard_redis, "chess")}
    assert (won[1], won[2]) == pytest.approx(
        (shown["vet"]["deviation"], shown["vet"]["volatility"])
    )
    again = import_file(rt.engine, rt.leaderboard_redis, cfg, path)
    assert (0, 2) == (again.imported, again.unchanged)

    sigma = tmp_path / "arena.jsonl"
    sigma.write_text('{"player_id": "s", "rating": 30, "deviation": 2.5}\n', encoding="utf-8")
    assert (
        1
        == import_file(rt.engine, rt.leaderboard_redis, rt.config.ladders["arena"], sigma).imported
    )
    assert "2.5" == card(rt, "arena", "s")["deviation"]
    assert pytest.approx(30 - 3 * 2.5) == board(rt, "arena")["s"]  # mu - k * sigma
    clean(rt, "arena")


@pytest.mark.parametrize(
    ("ladder", "line", "said"),
    [
        (
            "gammon42",
            '{"player_id": "x", "rating": 1600, "deviation": 80}',
            "deviation: the ladder's ruleset keeps none",
        ),
        (
            "arena",
            '{"player_id": "x", "rating": 30, "volatility": 0.06}',
            "volatility: the ladder's ruleset keeps none",
        ),
        (
            "chess",
            '{"player_id": "x", "rating": 1600, "deviation": 0}',
            "deviation: not a finite number > 0",
        ),
        (
            "chess",
            '{"player_id": "x", "rating": 1600, "volatility": "NaN"}',
            "volatility: not a finite number > 0",
        ),
    ],
)
def test_an_import_line_with_a_deviation_the_ruleset_cannot_take_is_refused(
    rt, tmp_path, ladder, line, said
):
    from worker.ops.importer import import_file

    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    report = import_file(rt.engine, rt.leaderboard_redis, rt.config.ladders[ladder], path)
    assert (0, 1) == (report.imported, report.refused)
    assert [(1, said)] == [(n, r[: len(said)]) for n, r in report.refusals]
