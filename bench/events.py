"""A large, realistic, reproducible mix of events for benchmarks.

Unlike ``worker.sample`` (a few hundred events for the demo), this scales to any count and
spreads players over large pools so that two workers contend for players the way a busy
production ladder does. The mix, by share of the stream:

- all three ladders: gammon42 ~45 %, fibs ~25 %, prostriker ~30 %;
- gammon42: ranked games with cubes, boosted games, a few tournament games, heavy players
  (more than 50 ranked games a week, so K drops to 16), public and private tournament ends
  (some settled twice: refused);
- fibs: matches of 1 to 7 points, ``player.updated`` profile events;
- prostriker: anonymous ids and accounts, a few ``identity.linked`` events (some refused);
- fair play everywhere: bot players, shared networks (an opaque token or raw IPs in one
  /24), "grinder" pairs that replay each other many times a day (pair limit);
- ~1 % duplicates (an earlier event published again, byte for byte) and ~0.5 % invalid
  events (cube 3, a player against themself, bad JSON, an unknown ladder, a missing field).

``ended_at`` rises through the stream over ``span`` (two days by default) ending now, so
24-hour and 7-day windows hold real history.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

CUBES = [1, 1, 1, 1, 2, 2, 2, 4, 4, 8, 16, 64]
RESULTS = ["single", "single", "single", "gammon", "backgammon"]
REASONS = ["normal", "normal", "normal", "resign", "leave", "disconnect", "timeout"]


@dataclass
class Mix:
    """What a generated stream holds: counts for the correctness checks after a drain."""

    total: int = 0
    invalid: int = 0
    duplicates: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def unique_valid(self) -> int:
        """Events that must each leave exactly one audit row."""
        return self.total - self.invalid - self.duplicates


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def generate(
    count: int,
    *,
    seed: int = 1,
    tag: str = "b",
    players: int = 20_000,
    span: timedelta = timedelta(days=2),
    now: datetime | None = None,
) -> tuple[list[str], Mix]:
    """``count`` event payloads (JSON text, in publish order) and what they contain."""
    rng = random.Random(seed)
    now = (now or datetime.now(UTC)) - timedelta(seconds=5)
    start = now - span
    mix = Mix()
    out: list[str] = []
    published: list[str] = []
    per_ladder = max(players, 50)

    g_players = [f"g{n}" for n in range(per_ladder)]
    g_heavy = g_players[:8]
    f_players = [f"f{n}" for n in range(per_ladder)]
    p_players = [f"anon-{n}" if n % 2 else f"acct-{n}" for n in range(per_ladder)]
    grinders = {
        "gammon42": [(g_players[10 + 2 * i], g_players[11 + 2 * i]) for i in range(20)],
        "fibs": [(f_players[10 + 2 * i], f_players[11 + 2 * i]) for i in range(20)],
        "prostriker": [(p_players[10 + 2 * i], p_players[11 + 2 * i]) for i in range(20)],
    }
    pools = {"gammon42": g_players, "fibs": f_players, "prostriker": p_players}
    tournaments = 0
    links = 0

    def game(i: int, ladder: str, when: str) -> dict[str, Any]:
        pool = pools[ladder]
        roll = rng.random()
        if roll < 0.02:
            a, b = rng.choice(grinders[ladder])
            mix.by_kind["pair_repeat"] += 1
        else:
            a, b = rng.sample(pool, 2)
            if ladder == "gammon42" and roll < 0.05:
                a = rng.choice(g_heavy)
                if a == b:
                    b = pool[-1]
                mix.by_kind["heavy"] += 1
        winner: dict[str, Any] = {"player_id": a}
        loser: dict[str, Any] = {"player_id": b}
        event: dict[str, Any] = {
            "type": "game.finished",
            "event_id": f"{tag}-{ladder}-{i}",
            "ladder": ladder,
            "ended_at": when,
            "mode": "ranked",
            "winner": winner,
            "loser": loser,
        }
        fair = rng.random()
        if fair < 0.02:
            (loser if rng.random() < 0.5 else winner)["is_bot"] = True
            mix.by_kind["bot"] += 1
        elif fair < 0.035:
            token = f"net-{rng.randrange(1 << 30):08x}"
            winner["network"] = loser["network"] = token
            mix.by_kind["shared_network"] += 1
        elif fair < 0.045:
            net = f"198.51.{rng.randrange(256)}"
            winner["ip"] = f"{net}.{rng.randrange(1, 127)}"
            loser["ip"] = f"{net}.{rng.randrange(128, 255)}"
            mix.by_kind["shared_ip"] += 1
        elif fair < 0.30:
            winner["network"] = f"net-{rng.randrange(1 << 30):08x}"
            loser["network"] = f"net-{rng.randrange(1 << 30):08x}"
        if ladder == "gammon42":
            mode_roll = rng.random()
            if mode_roll < 0.10:
                event["mode"] = "boosted" if mode_roll < 0.07 else "casual"
                mix.by_kind["boosted"] += 1
            elif mode_roll < 0.12:
                event["mode"] = "tournament"
                event["tournament_id"] = f"{tag}-cup-{rng.randrange(50)}"
            event["cube"] = rng.choice(CUBES)
            event["result"] = rng.choice(RESULTS)
            event["end_reason"] = rng.choice(REASONS)
        elif ladder == "fibs":
            event["match_length"] = rng.choice([1, 3, 5, 5, 7, 7])
        return event

    for i in range(count):
        when = _stamp(start + span * (i / max(count, 1)))
        roll = rng.random()
        if published and roll < 0.01:
            out.append(rng.choice(published[-5000:]))  # the same bytes, published again
            mix.duplicates += 1
            continue
        if roll < 0.015:
            out.append(_invalid(rng, tag, i, when))
            mix.invalid += 1
            continue
        ladder_roll = rng.random()
        event: dict[str, Any]
        if ladder_roll < 0.45:
            if rng.random() < 0.002:
                tournaments += 1
                settled = rng.random() < 0.2 and tournaments > 1
                cup = tournaments - 1 if settled else tournaments
                event = {
                    "type": "tournament.finished",
                    "event_id": f"{tag}-gammon42-t{i}",
                    "ladder": "gammon42",
                    "tournament_id": f"{tag}-cup-{cup}",
                    "public": rng.random() < 0.7,
                    "podium": rng.sample(g_players, 3),
                }
                mix.by_kind["tournament"] += 1
            else:
                event = game(i, "gammon42", when)
        elif ladder_roll < 0.70:
            if rng.random() < 0.01:
                event = {
                    "type": "player.updated",
                    "event_id": f"{tag}-fibs-p{i}",
                    "ladder": "fibs",
                    "player_id": rng.choice(f_players),
                    "email_verified": rng.random() < 0.7,
                    "display_name_chosen": rng.random() < 0.8,
                }
                mix.by_kind["profile"] += 1
            else:
                event = game(i, "fibs", when)
        else:
            if rng.random() < 0.002:
                links += 1
                anon = p_players[2 * rng.randrange(per_ladder // 2) + 1]
                account = f"acct-new-{links if rng.random() < 0.8 else 1}"
                event = {
                    "type": "identity.linked",
                    "event_id": f"{tag}-prostriker-l{i}",
                    "ladder": "prostriker",
                    "anonymous_id": anon,
                    "account_id": account,
                }
                mix.by_kind["link"] += 1
            else:
                event = game(i, "prostriker", when)
        text = json.dumps(event, separators=(",", ":"))
        out.append(text)
        published.append(text)
        mix.by_kind[event["type"]] += 1
    mix.total = len(out)
    return out, mix


def _invalid(rng: random.Random, tag: str, i: int, when: str) -> str:
    kind = rng.randrange(5)
    base: dict[str, Any] = {
        "type": "game.finished",
        "event_id": f"{tag}-bad-{i}",
        "ladder": "gammon42",
        "ended_at": when,
        "mode": "ranked",
        "winner": {"player_id": "g1"},
        "loser": {"player_id": "g2"},
    }
    if kind == 0:
        base["cube"] = 3
    elif kind == 1:
        base["loser"] = {"player_id": "g1"}
    elif kind == 2:
        return '{"type": "game.finished", "event_id": "' + f"{tag}-bad-{i}" + '", truncated'
    elif kind == 3:
        base["ladder"] = "chess960"
    else:
        del base["winner"]
    return json.dumps(base, separators=(",", ":"))


def probe_game(
    index: int, tag: str, ladder: str, opponent: str, when: datetime | None = None
) -> tuple[str, str]:
    """A rated game whose winner is a brand-new player: (payload, winner id).

    The winner enters the ladder's rating zset the moment the event is projected, which is
    what the latency benchmark watches for.
    """
    winner = f"probe-{tag}-{index}"
    event = {
        "type": "game.finished",
        "event_id": f"{tag}-probe-{index}",
        "ladder": ladder,
        "ended_at": _stamp(when or datetime.now(UTC)),
        "mode": "ranked",
        "winner": {"player_id": winner},
        "loser": {"player_id": opponent},
    }
    return json.dumps(event, separators=(",", ":")), winner


def generate_hot(
    count: int = 20_000,
    *,
    players: int = 4_000,
    seed: int = 1,
    tag: str = "h",
    spacing: timedelta = timedelta(seconds=30),
    now: datetime | None = None,
) -> tuple[list[str], Mix]:
    """One hot ladder: ``count`` ranked gammon42 games among ``players`` players, ending
    ``spacing`` apart up to now, every one valid and unique."""
    rng = random.Random(seed)
    end = (now or datetime.now(UTC)) - timedelta(seconds=5)
    start = end - spacing * count
    pool = [f"h{n}" for n in range(players)]
    out: list[str] = []
    for i in range(count):
        a, b = rng.sample(pool, 2)
        event = {
            "type": "game.finished",
            "event_id": f"{tag}-{i}",
            "ladder": "gammon42",
            "ended_at": _stamp(start + spacing * i),
            "mode": "ranked",
            "winner": {"player_id": a},
            "loser": {"player_id": b},
            "cube": rng.choice(CUBES),
            "result": rng.choice(RESULTS),
        }
        out.append(json.dumps(event, separators=(",", ":")))
    mix = Mix(total=count)
    mix.by_kind["game.finished"] = count
    return out, mix
