"""A realistic, reproducible sample of events for all three ladders (``make demo``).

``python -m worker.sample --seed 42`` prints JSON lines; ``--redis-cli`` prints
``RPUSH ladder:inbox '<json>'`` commands to pipe into ``redis-cli``. Event ids depend only
on the seed, so publishing the same sample twice changes nothing the second time.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

CUBES = [1, 1, 1, 1, 2, 2, 2, 4, 4, 8, 16, 64]


def sample(seed: int = 42, now: datetime | None = None) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    now = (now or datetime.now(UTC)).replace(microsecond=0)
    start = now - timedelta(days=6)

    def at(i: int, total: int) -> str:
        return (start + (now - start) * (i / total)).strftime("%Y-%m-%dT%H:%M:%SZ")

    # gammon42: ranked games with cubes, a heavy player, bots, a shared network, boosted games.
    players = [f"g-player-{n:02d}" for n in range(12)]
    strength = {p: rng.gauss(0, 1) for p in players}
    total = 160
    for i in range(total):
        a, b = rng.sample(players, 2)
        if i % 3 == 0:
            a = "g-player-00"  # plays a lot: over 50 ranked games this week, K drops to 16
        if a == b:
            b = players[-1] if a != players[-1] else players[0]
        winner, loser = (
            (a, b) if rng.random() < 0.5 + 0.15 * (strength[a] - strength[b]) else (b, a)
        )
        mode = "ranked" if i % 10 else "boosted"
        event: dict[str, Any] = {
            "type": "game.finished",
            "event_id": f"gammon42-{seed}-{i:04d}",
            "ladder": "gammon42",
            "ended_at": at(i, total),
            "mode": mode,
            "winner": {"player_id": winner},
            "loser": {"player_id": loser},
            "cube": rng.choice(CUBES),
            "result": rng.choice(["single", "single", "gammon", "backgammon"]),
            "end_reason": rng.choice(["normal", "normal", "normal", "resign", "timeout"]),
        }
        if i % 23 == 0:
            event["loser"]["is_bot"] = True
        if i % 29 == 0:
            event["winner"]["ip"] = "198.51.100.7"
            event["loser"]["ip"] = "198.51.100.99"  # same /24: shared network, not rated
        yield event
    yield {
        "type": "tournament.finished",
        "event_id": f"gammon42-{seed}-cup",
        "ladder": "gammon42",
        "tournament_id": "autumn-cup",
        "public": True,
        "podium": ["g-player-03", "g-player-07", "g-player-01"],
    }

    # fibs: matches of 1 to 7 points between newcomers and regulars.
    fibs_players = [f"f-player-{n:02d}" for n in range(8)]
    for n, pid in enumerate(fibs_players):
        yield {
            "type": "player.updated",
            "event_id": f"fibs-{seed}-profile-{n}",
            "ladder": "fibs",
            "player_id": pid,
            "email_verified": n % 3 != 0,
            "display_name_chosen": n % 4 != 1,
        }
    total = 90
    for i in range(total):
        a, b = rng.sample(fibs_players, 2)
        yield {
            "type": "game.finished",
            "event_id": f"fibs-{seed}-{i:04d}",
            "ladder": "fibs",
            "ended_at": at(i, total),
            "mode": "ranked",
            "winner": {"player_id": a},
            "loser": {"player_id": b},
            "match_length": rng.choice([1, 3, 5, 5, 7]),
        }

    # a newcomer: a few short matches, still provisional (experience under 50)
    for i, opponent in enumerate(["f-player-02", "f-player-05"]):
        yield {
            "type": "game.finished",
            "event_id": f"fibs-{seed}-newcomer-{i}",
            "ladder": "fibs",
            "ended_at": at(total - 2 + i, total),
            "mode": "ranked",
            "winner": {"player_id": "f-newcomer"},
            "loser": {"player_id": opponent},
            "match_length": 3,
        }

    # prostriker: anonymous device ids, one linked to a new account, a bot.
    ps_players = [f"anon-{n:02d}" for n in range(6)] + ["acct-mia", "acct-leo"]
    total = 80
    for i in range(total):
        a, b = rng.sample(ps_players, 2)
        event = {
            "type": "game.finished",
            "event_id": f"prostriker-{seed}-{i:04d}",
            "ladder": "prostriker",
            "ended_at": at(i, total),
            "mode": "ranked",
            "winner": {"player_id": a, "is_bot": i % 17 == 0},
            "loser": {"player_id": b},
        }
        yield event
        if i == 40:
            yield {
                "type": "identity.linked",
                "event_id": f"prostriker-{seed}-link-1",
                "ladder": "prostriker",
                "anonymous_id": "anon-00",
                "account_id": "acct-new",
            }

    # A few events that must be refused: cube 3, a player against themself, bad JSON. Their
    # timestamps are fixed, so publishing the sample again leaves one dead letter each.
    yield {
        "type": "game.finished",
        "event_id": f"bad-{seed}-cube",
        "ladder": "gammon42",
        "ended_at": "2026-11-01T12:00:00Z",
        "mode": "ranked",
        "winner": {"player_id": "g-player-01"},
        "loser": {"player_id": "g-player-02"},
        "cube": 3,
    }
    yield {
        "type": "game.finished",
        "event_id": f"bad-{seed}-self",
        "ladder": "fibs",
        "ended_at": "2026-11-01T12:00:00Z",
        "mode": "ranked",
        "winner": {"player_id": "f-player-01"},
        "loser": {"player_id": "f-player-01"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--redis-cli", action="store_true", help="print redis-cli commands")
    args = parser.parse_args()
    for event in sample(args.seed):
        line = json.dumps(event, separators=(",", ":"))
        print(f"RPUSH ladder:inbox '{line}'" if args.redis_cli else line)
    if args.redis_cli:
        print('RPUSH ladder:inbox \'{"type": "game.finished", truncated\'')


if __name__ == "__main__":
    main()
