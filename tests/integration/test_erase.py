"""Data-protection requests: ``ladder player export`` and ``ladder player erase``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.conftest import drain, publish
from tests.events import game, tournament
from tests.integration.helpers import board, stored_players
from tests.integration.test_moderation import clean, ladder, ladder_json
from tests.integration.test_privacy import everything_in_postgres, everything_in_redis
from worker import keys
from worker.ops import seasons

ID = "zed-7"
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=10)


def history_of_zed(runtime):
    publish(
        runtime,
        game(ID, "amy", event_id="g1", ended_at=T0),
        game("bob", ID, event_id="g2", ended_at=T0 + timedelta(hours=1)),
        game("amy", "bob", event_id="g3", ended_at=T0 + timedelta(hours=2)),
        tournament("gammon42", "cup", [ID, "bob", "amy"], event_id="t1"),
        game(ID, "bob", event_id="bad", cube=3),  # dead-lettered, naming the player
    )
    drain(runtime)
    cfg = runtime.config.ladders["gammon42"]
    seasons.close(runtime.engine, runtime.leaderboard_redis, cfg, "S1", seasons.Policy())
    assert 0 == ladder(runtime, "void", "gammon42", "g3", "--reason", "test", "--by", "mod")
    since = (T0 + timedelta(hours=1)).isoformat()  # the void of a ban names the player
    assert 0 == ladder(runtime, "ban", "gammon42", ID, "--reason", "x", "--void-since", since)
    assert 0 == ladder(runtime, "unban", "gammon42", ID, "--reason", "appeal")


def test_export_prints_everything_stored_about_the_player(runtime, capsys):
    """state, every event naming them, ledger, dead letters, Redis entries."""
    history_of_zed(runtime)
    capsys.readouterr()
    assert 0 == ladder(runtime, "player", "export", "gammon42", ID)
    shown = json.loads(capsys.readouterr().out)
    stored = shown["postgresql"]
    assert [ID] == [p["player_id"] for p in stored["players"]]
    assert {"g1", "g2", "t1"} == {e["event_id"] for e in stored["events"]}
    assert {"game", "prize", "correction"} == {r["kind"] for r in stored["rating_changes"]}
    assert ["S1"] == [s["season"] for s in stored["season_standings"]]
    assert ["bad"] == [d["event_id"] for d in shown["dead_letters"]]
    assert {"rating", "season:S1"} <= set(shown["redis"]["boards"])
    assert shown["redis"]["card"]["games"] == "1"  # g2 voided by the ban
    assert 2 == ladder(runtime, "player", "export", "gammon42", "nobody")


def test_erase_leaves_no_trace_of_the_id_and_every_other_number_unchanged(runtime, capfd):
    """the id is found nowhere (every table, every Redis key
    and the logs, searched as the raw-IP test searches), the player is off the boards, the
    other players' numbers are unchanged and ``ladder verify`` still passes."""
    history_of_zed(runtime)
    others = {p: v for p, v in stored_players(runtime, "gammon42").items() if p != ID}
    rating = board(runtime, "gammon42")
    assert 2 == ladder(runtime, "player", "erase", "gammon42", ID)  # no --yes: refused
    assert ID in everything_in_postgres(runtime)
    capfd.readouterr()
    assert 0 == ladder(runtime, "player", "erase", "gammon42", ID, "--yes", "--by", "dpo")
    logs = capfd.readouterr()
    stores = {
        "postgres": everything_in_postgres(runtime),
        "redis": everything_in_redis(runtime),
        "logs": logs.out + logs.err,
    }
    assert {} == {where: blob.count(ID) for where, blob in stores.items() if ID in blob}
    del rating[ID]
    assert rating == board(runtime, "gammon42")
    after = stored_players(runtime, "gammon42")
    assert others == {p: v for p, v in after.items() if not p.startswith("erased-")}
    pseudonym = next(p for p in after if p.startswith("erased-"))
    assert after[pseudonym]["banned"] and after[pseudonym]["rated_games"] == 1
    clean(runtime, "gammon42")
    # a second erase of the same id finds it done: nothing left anywhere, nothing refused
    capfd.readouterr()
    assert 0 == ladder(runtime, "player", "erase", "gammon42", ID, "--yes")
    assert "ladder: finished erasing the player on gammon42" in capfd.readouterr().out
    assert ID not in everything_in_postgres(runtime) + everything_in_redis(runtime)
    assert 2 == ladder(runtime, "player", "erase", "gammon42", "never-here", "--yes")


def test_an_erase_that_loses_redis_after_its_commit_is_finished_by_running_it_again(
    runtime, make_runtime, capfd
):
    """PostgreSQL is the record and its part of an erase is one transaction; when Redis
    fails after it, the command says the player is erased there and that running the same
    erase again removes them from Redis, which it then does."""
    history_of_zed(runtime)
    away = make_runtime(leaderboard_redis_url="redis://127.0.0.1:1/0")
    capfd.readouterr()
    assert 1 == ladder(away, "player", "erase", "gammon42", ID, "--yes", "--by", "dpo")
    said = capfd.readouterr()
    (line,) = said.err.strip().splitlines()
    assert line.startswith("ladder: the player is erased in PostgreSQL (now erased-")
    assert line.endswith("run the same erase again once Redis answers to remove it there")
    assert "Traceback" not in said.err and ID not in said.err + said.out
    assert ID not in everything_in_postgres(runtime)
    assert ID in everything_in_redis(runtime)  # not yet
    shown = ladder_json(runtime, capfd, "player", "erase", "gammon42", ID, "--yes")
    assert (True, 0) == (shown["resumed"], shown["rows"])
    assert ID not in everything_in_redis(runtime)
    clean(runtime, "gammon42")


def test_an_erased_pseudonym_is_stable_and_verify_passes_after_more_games(runtime, capsys):
    """The pseudonym is a keyed hash of ladder and id (stable); games after the erase score
    as usual and the ladder still verifies."""
    from worker.ops.erase import pseudonym

    history_of_zed(runtime)
    shown = ladder_json(runtime, capsys, "player", "erase", "gammon42", ID, "--yes")
    key = runtime.settings.network_key.get_secret_value()
    assert pseudonym(key, "gammon42", ID) == shown["pseudonym"]
    publish(runtime, game("amy", "bob", event_id="g9"))
    drain(runtime)
    clean(runtime, "gammon42")


def test_a_copy_of_an_erased_players_game_sent_again_does_not_bring_the_id_back(runtime, capsys):
    """SPEC 2.4 step 1: "an event_id already applied is a duplicate: no change". An erased
    player's games keep their event ids, so a copy of one sent again (or a batch recovered
    after the erase) is a duplicate: it creates no player, card or board entry for the id,
    and its receipt repeats the original's numbers under the pseudonym. A new game naming the
    id is a new player's, as before."""
    history_of_zed(runtime)
    shown = ladder_json(runtime, capsys, "player", "erase", "gammon42", ID, "--yes")
    publish(
        runtime,
        game(ID, "amy", event_id="g1", ended_at=T0),
        game("bob", ID, event_id="g2", ended_at=T0 + timedelta(hours=1)),
    )
    drain(runtime)
    assert ID not in everything_in_postgres(runtime) + everything_in_redis(runtime)
    sent = streamed(runtime)[-2:]
    assert [("g1", "duplicate"), ("g2", "duplicate")] == [
        (r["event_id"], r["outcome"]) for r in sent
    ]
    assert shown["pseudonym"] in json.dumps(sent)
    clean(runtime, "gammon42")

    publish(runtime, game(ID, "amy", event_id="g1", ended_at=T0), game(ID, "amy", event_id="g10"))
    drain(runtime)
    assert ["duplicate", "rated"] == [r["outcome"] for r in streamed(runtime)[-2:]]
    assert 1 == stored_players(runtime, "gammon42")[ID]["rated_games"]
    clean(runtime, "gammon42")


def streamed(rt):
    return [json.loads(f[b"receipt"]) for _, f in rt.redis.xrange(keys.RECEIPTS)]
