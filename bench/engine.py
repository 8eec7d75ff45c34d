"""The engine alone on the hot ladder: ``python -m bench.engine [--events 8000] [--runs 5]``.

No PostgreSQL, no Redis: the hot workload (``bench.events.generate_hot``, one gammon42
ladder, ranked games among ``events / 5`` players) mapped to the engine's events, then

- ``apply``: ``engine.ladder.apply`` batch by batch, as a worker calls it: each batch a fresh
  ``LadderState`` holding the batch's players as the last batch left them (``--batch``);
- ``replay``: ``engine.replay.Replay`` over the whole log, as verify and backtest run it;
- ``forked``: the same replay, forked after the first game, taking each game's players before
  applying it: a void's replay where every game reaches a player it changed (its worst case;
  its window counts shared with the replay it came from until either adds to them).

Each figure is this process's CPU time per event (``time.process_time``: what another
process's load on a shared machine moves least), the best of ``--runs`` rounds, with the
median beside it. Run it alternately against two checkouts to compare them.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from bench.events import generate_hot
from engine import Gammon42Rules, LadderState, Player, Policy, Replay, Ruleset, apply
from engine.ladder import GameFinished, Side, players_of

LADDER = "gammon42"
RULES = Gammon42Rules()
POLICY = Policy()


def events(count: int, ladder: str = LADDER, players: int | None = None) -> list[GameFinished]:
    """The hot workload as the engine's events (every one a valid, unique ranked game), on
    ``ladder`` (the same games whatever the ladder), among ``players`` (default ``count / 5``)."""
    players = max(2, count // 5) if players is None else players
    payloads, _mix = generate_hot(count, players=players, tag="engine")
    out = []
    for payload in payloads:
        raw = json.loads(payload)
        out.append(
            GameFinished(
                raw["event_id"],
                ladder,
                datetime.fromisoformat(raw["ended_at"]).astimezone(UTC),
                raw["mode"],
                Side(raw["winner"]["player_id"]),
                Side(raw["loser"]["player_id"]),
                cube=raw["cube"],
                result=raw["result"],
                digest=raw["event_id"],
            )
        )
    return out


def batches(log: list[GameFinished], size: int, rules: Ruleset = RULES) -> float:
    """CPU seconds of ``apply`` over the log in batches of ``size`` (the state built outside:
    each batch's players as a worker loads them, a copy of what the last batch left)."""
    now = log[-1].ended_at
    ladder = log[0].ladder
    kept: dict[str, Player] = {}
    spent = 0.0
    for first in range(0, len(log), size):
        part = log[first : first + size]
        state = LadderState()
        for event in part:
            for pid in (event.winner.player_id, event.loser.player_id):
                was = kept.get(pid)
                state.players[(ladder, pid)] = (
                    rules.newcomer(ladder, pid, now) if was is None else replace(was, dirty=False)
                )
        started = time.process_time()
        for event in part:
            apply(event, state, rules, POLICY, now)
        spent += time.process_time() - started
        kept.update({pid: player for (_, pid), player in state.players.items()})
    return spent


def replayed(log: list[GameFinished], *, forked: bool) -> float:
    """CPU seconds of one ``Replay`` over the log (forked after its first game if asked)."""
    started = time.process_time()
    replay = Replay(POLICY, lambda _at: RULES)
    for n, event in enumerate(log):
        if replay.base is not None:
            replay.take(players_of(event, {}))
        replay.event(event, event.ended_at)
        if forked and n == 0:
            replay = replay.fork(frozenset(), {})
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=8_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    log = events(args.events)
    gc.freeze()  # the log, as a worker freezes what start-up allocated
    runs: dict[str, Callable[[], float]] = {
        "apply": lambda: batches(log, args.batch),
        "replay": lambda: replayed(log, forked=False),
        "forked": lambda: replayed(log, forked=True),
    }
    for name, run in runs.items():
        spent = [run() * 1e6 / len(log) for _ in range(args.runs)]
        print(
            f"{name:<7} {min(spent):7.2f} us/event best, {statistics.median(spent):7.2f} median "
            f"({args.runs} runs of {len(log)} events)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
