"""An independent model of the three rulesets, written from SPEC 2 and the seeds alone.

It shares no code with ``engine`` or ``worker``: the end-to-end scenario compares what the
real pipeline publishes in Redis with what this straightforward, one-event-at-a-time model
computes from the same events.
"""

from __future__ import annotations

import ipaddress
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any


def round_away(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


@dataclass
class P:
    rating: float
    games: int = 0
    exp: int = 0
    listed: bool = False
    boosted: int = 0
    linked_to: str | None = None
    email: bool = False
    name: bool = False


@dataclass
class Ladder:
    kind: str
    start: float
    players: dict[str, P] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    ranked: dict[str, list[datetime]] = field(default_factory=lambda: defaultdict(list))
    rated_pairs: dict[frozenset[str], list[datetime]] = field(
        default_factory=lambda: defaultdict(list)
    )
    settled: set[str] = field(default_factory=set)
    outcomes: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    def p(self, pid: str) -> P:
        return self.players.setdefault(pid, P(self.start))


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def net(ref: dict[str, Any]) -> str | None:
    if "network" in ref:
        return "n:" + ref["network"]
    if "ip" in ref:
        ip = ipaddress.ip_address(ref["ip"])
        prefix = 24 if ip.version == 4 else 64
        return "ip:" + str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))
    return None


class Oracle:
    def __init__(self) -> None:
        self.ladders = {
            "gammon42": Ladder("gammon42", 1500.0),
            "fibs": Ladder("fibs", 1500.0),
            "prostriker": Ladder("prostriker", 1200.0),
        }

    def apply(self, e: dict[str, Any]) -> None:
        lad = self.ladders[e["ladder"]]
        if e["event_id"] in lad.seen:
            return
        lad.seen.add(e["event_id"])
        kind = e["type"]
        if kind == "game.finished":
            result = self._game(lad, e)
        elif kind == "tournament.finished":
            result = self._tournament(lad, e)
        elif kind == "identity.linked":
            result = self._link(lad, e)
        else:
            p = lad.p(lad.links.get(e["player_id"], e["player_id"]))
            p.email, p.name = e["email_verified"], e["display_name_chosen"]
            result = ("applied", None)
        lad.outcomes[e["event_id"]] = result

    def _game(self, lad: Ladder, e: dict[str, Any]) -> tuple[str, str | None]:
        t = when(e["ended_at"])
        wid = lad.links.get(e["winner"]["player_id"], e["winner"]["player_id"])
        lid = lad.links.get(e["loser"]["player_id"], e["loser"]["player_id"])
        w, lo = lad.p(wid), lad.p(lid)
        mode = "boosted" if e["mode"] == "casual" else e["mode"]
        pair = frozenset((wid, lid))
        reason = None
        if wid == lid:
            reason = "self_play"
        elif mode != "ranked":
            reason = "not_ranked"
        elif e["winner"].get("is_bot") or e["loser"].get("is_bot"):
            reason = "bot"
        elif net(e["winner"]) is not None and net(e["winner"]) == net(e["loser"]):
            reason = "shared_network"
        elif sum(t - timedelta(hours=24) <= x < t for x in lad.rated_pairs[pair]) >= 3:
            reason = "pair_limit"
        if reason is None:
            n = e.get("match_length", 1)
            cube = e.get("cube", 1)
            dw: float
            dl: float
            if lad.kind == "gammon42":
                kw, kl = (
                    16 if sum(t - timedelta(days=7) <= x < t for x in lad.ranked[pid]) >= 50 else 32
                    for pid in (wid, lid)
                )
                exp_w = 1 / (1 + 10 ** ((lo.rating - w.rating) / 1200))
                coef = 1 + math.log2(cube) / 6
                dw = round_away(kw * (1 - exp_w) * coef)
                dl = round_away(kl * (0 - (1 - exp_w)) * coef)
            elif lad.kind == "fibs":
                p_w = 1 - 1 / (10 ** ((w.rating - lo.rating) * math.sqrt(n) / 2000) + 1)
                v = 4 * math.sqrt(n)
                mult = [max(1.0, 5 - x / 100) if x < 400 else 1.0 for x in (w.exp, lo.exp)]
                dw = v * (1 - p_w) * mult[0]
                dl = -v * (1 - p_w) * mult[1]
            else:

                def k(games: int) -> int:
                    return 40 if games < 30 else 24 if games < 200 else 16

                exp_w = 1 / (1 + 10 ** ((lo.rating - w.rating) / 400))
                dw = round_away(k(w.games) * (1 - exp_w))
                dl = round_away(k(lo.games) * (0 - (1 - exp_w)))
            for p, d in ((w, dw), (lo, dl)):
                p.rating += d
                p.games += 1
                p.exp += n
                p.listed = True
            lad.rated_pairs[pair].append(t)
        elif mode == "boosted" and lad.kind == "gammon42":
            pts = {"single": 1, "gammon": 2, "backgammon": 3}[e.get("result", "single")]
            w.boosted += pts * e.get("cube", 1)
        if mode == "ranked":
            lad.ranked[wid].append(t)
            lad.ranked[lid].append(t)
        return ("rated", None) if reason is None else ("unrated", reason)

    def _tournament(self, lad: Ladder, e: dict[str, Any]) -> tuple[str, str | None]:
        if e["tournament_id"] in lad.settled:
            return ("refused", "tournament_already_settled")
        lad.settled.add(e["tournament_id"])
        if not e["public"]:
            return ("applied", "private_tournament")
        if lad.kind != "gammon42":
            return ("applied", "no_prizes")
        for prize, pid in zip((50, 25, 15), e["podium"], strict=False):
            p = lad.p(lad.links.get(pid, pid))
            p.rating += prize
            p.listed = True
        return ("applied", None)

    def _link(self, lad: Ladder, e: dict[str, Any]) -> tuple[str, str | None]:
        anon, acct = e["anonymous_id"], e["account_id"]
        if anon in lad.links:
            return ("refused", "anonymous_already_linked")
        if acct in lad.links.values():
            return ("refused", "account_already_linked")
        if anon in lad.links.values() or acct in lad.links:
            return ("refused", "linked_id_reused")
        a, c = lad.p(anon), lad.p(acct)
        adopted = c.games == 0 and (a.games > 0 or a.listed)
        if adopted:
            c.rating, c.games, c.exp = a.rating, a.games, a.exp
            c.listed = a.listed or c.listed
            c.boosted = max(c.boosted, a.boosted)
            a.boosted = 0
        a.linked_to = acct
        a.listed = False
        lad.links[anon] = acct
        return ("applied", "adopted" if adopted else "account_kept")

    # -- the boards --------------------------------------------------------------------

    def rating_board(self, ladder: str) -> dict[str, float]:
        lad = self.ladders[ladder]
        return {pid: p.rating for pid, p in lad.players.items() if p.listed and not p.linked_to}

    def boosted_board(self, ladder: str) -> dict[str, float]:
        lad = self.ladders[ladder]
        return {
            pid: float(p.boosted)
            for pid, p in lad.players.items()
            if p.boosted > 0 and not p.linked_to
        }

    def public_board(self, ladder: str) -> set[str]:
        lad = self.ladders[ladder]
        return {
            pid
            for pid, p in lad.players.items()
            if p.listed and not p.linked_to and p.email and p.name and p.exp >= 20
        }
