"""engine.replay: the ladder as it should be, and the log as it was lived (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine import Imported, LedgerChange, LedgerKind, Policy, Replay
from engine.ladder import GameFinished, Side
from engine.replay import Action, Lived, rerate, same_state
from engine.rulesets import FibsRules

T0 = datetime(2026, 11, 30, 12, tzinfo=UTC)
RULES = FibsRules()
POLICY = Policy()


def rules_at(_: datetime) -> FibsRules:
    return RULES


def games() -> list[GameFinished]:
    """f1 and f2 play four times in a day (the 4th is pair-limited), then f2 plays f3."""
    out = [
        GameFinished(
            f"g{i}",
            "fibs",
            T0 + timedelta(hours=i),
            "ranked",
            Side("f2" if i == 0 else "f1"),
            Side("f1" if i == 0 else "f2"),
            match_length=3,
        )
        for i in range(4)
    ]
    out.append(
        GameFinished("g4", "fibs", T0 + timedelta(hours=5), "ranked", Side("f2"), Side("f3"))
    )
    return out


def test_a_ladder_that_skips_voided_games_equals_one_that_never_received_them():
    """exact means equal to a ladder that never received the voided games;
    the pair limit no longer counts g0, so g3 is rated (SPEC 2.2: first 3 within 24 hours)."""
    should = Replay(POLICY, rules_at, voided=frozenset({"g0"}), track=True)
    never = Replay(POLICY, rules_at)
    for game in games():
        should.event(
            game,
            game.ended_at,
            ("rated", None) if game.event_id != "g3" else ("unrated", "pair_limit"),
        )
        if game.event_id != "g0":
            never.event(game, game.ended_at)
    assert set(never.state.players) == set(should.players)
    assert all(same_state(never.state.players[k], p) for k, p in should.players.items())
    assert (("rated", None), ("unrated", "pair_limit")) == should.verdicts["g3"]
    assert (("voided", None), ("rated", None)) == should.verdicts["g0"]


def test_lived_switches_at_the_void_and_derives_its_corrections():
    """the corrections are the difference between the ladder as it stood and
    as it should be, one row per player whose rating moved, each continuing the ledger."""
    void = Action(1, "void", T0 + timedelta(hours=6), after_seq=5, voided=frozenset({"g0"}))
    lived = Lived("fibs", POLICY, rules_at, [void])
    for game in games():
        lived.event(game, game.ended_at)
    before = {k: p.rating for k, p in lived.state.players.items()}
    changes, effects = lived.action(void)
    assert {c.player_id for c in changes} == {"f1", "f2", "f3"}
    assert all(c.kind is LedgerKind.CORRECTION for c in changes)
    assert all(before[("fibs", c.player_id)] == c.before for c in changes)
    assert {("g0", "voided"), ("g3", "rated")} == {(e.event_id, e.outcome) for e in effects}
    # idempotent: comparing the corrected ladder with itself changes nothing
    players = lived.state.players
    again = rerate(
        "fibs",
        current=players,
        should=players,
        verdicts={},
        effective={},
        rules=RULES,
        at=void.at,
    )
    assert ([], [], []) == (again.players, again.changes, again.effects)


def test_an_import_row_gives_the_player_what_the_import_gave_them():
    """an imported player's history starts at their import row, with the games, experience
    and flags of their profile; the multiplier of their next match is the one their
    experience gives (SPEC 2.2: "the player's own experience before the match")."""
    imported = {"f1": Imported(games=12, experience=350, email_verified=True)}
    should = Replay(POLICY, rules_at, imported, track=True)
    start = LedgerChange("f1", LedgerKind.IMPORT, RULES.start, 1600.0, 100.0)
    should.recorded("fibs", start, T0)
    decision = should.event(games()[1], T0 + timedelta(hours=1))
    assert decision is not None
    f1 = should.players[("fibs", "f1")]
    assert (13, 353, True, 1.5) == (
        f1.rated_games,
        f1.experience,
        f1.email_verified,
        decision.changes[0].k,
    )


def test_a_history_runs_recorded_rows_and_actions_where_they_fall():
    """SPEC 6 "One history": before each event the recorded rows made before it was
    processed and the actions that follow an earlier event, in the order they were taken;
    the rest after the last event (or, for a replay run in pieces, not yet)."""
    from engine.replay import in_order

    events = [("e1", T0, 1), ("e2", T0 + timedelta(hours=2), 2)]
    rows = [T0 + timedelta(hours=1), T0 + timedelta(hours=3)]  # when each row was made
    acts = [
        Action(1, "ban", T0 + timedelta(minutes=90), 1, player_id="f1"),
        Action(2, "unban", T0 + timedelta(hours=4), 2, player_id="f1"),
    ]

    def place(event: tuple[str, datetime, int]) -> tuple[datetime, int]:
        return event[1], event[2]

    def made(row: datetime) -> datetime:
        return row

    whole = in_order(events, rows, acts, place, made)
    order = list(whole)
    assert [events[0], rows[0], acts[0], events[1], rows[1], acts[1]] == order
    piece = in_order(events, rows, acts, place, made, tail=False)
    cut = list(piece)
    assert order[:4] == cut


def test_an_action_taken_before_a_recorded_row_runs_before_it():
    """An adjustment, then a season's reset, with no event between them (or after the last
    one): the adjustment first, whose rating the reset recorded it reset."""
    from engine.replay import in_order

    events = [("e1", T0, 1), ("e2", T0 + timedelta(hours=2), 2)]
    rows = [T0 + timedelta(hours=1), T0 + timedelta(hours=4)]  # two seasons' resets
    acts = [
        Action(1, "adjust", T0 + timedelta(minutes=30), 1, player_id="f1", delta=40.0),
        Action(2, "adjust", T0 + timedelta(hours=3), 2, player_id="f1", delta=-40.0),
    ]

    def place(event: tuple[str, datetime, int]) -> tuple[datetime, int]:
        return event[1], event[2]

    def made(row: datetime) -> datetime:
        return row

    history = in_order(events, rows, acts, place, made)
    assert [events[0], acts[0], rows[0], events[1], acts[1], rows[1]] == list(history)


def test_a_player_a_first_void_reset_survives_a_second_void():
    """Issue 30 case 1: a player named only by games a first void took back stays (at the
    start, off the boards) through a second void, as the store keeps them."""
    x_beats = [
        GameFinished(f"a{i}", "fibs", T0 + timedelta(hours=i), "ranked", Side("x"), Side(o))
        for i, o in enumerate(("y", "z", "w"))
    ]
    acts = [
        Action(1, "void", T0, 3, voided=frozenset({"a1"})),
        Action(2, "void", T0, 3, voided=frozenset({"a2"})),
    ]
    lived = Lived("fibs", POLICY, rules_at, acts)
    for one in x_beats:
        lived.event(one, one.ended_at)
    lived.action(acts[0])
    lived.action(acts[1])
    z = lived.state.players[("fibs", "z")]
    assert (RULES.start, False, 0) == (z.rating, z.listed, z.rated_games)


def _many_games(count: int) -> list[GameFinished]:
    """Games among six players, one an hour (pair limits and windows in play)."""
    names = [f"p{i}" for i in range(6)]
    return [
        GameFinished(
            f"m{i}",
            "fibs",
            T0 + timedelta(hours=i),
            "ranked",
            Side(names[i % 6]),
            Side(names[(i * 5 + 1) % 6] if (i * 5 + 1) % 6 != i % 6 else names[(i + 1) % 6]),
            match_length=3,
        )
        for i in range(count)
    ]


def _counting(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, int], Any, Any]:
    """From now on, every event any ``Replay`` applies is counted in ``applied["count"]``;
    returns that, the original method and the counting one (to set each back in turn)."""
    applied = {"count": 0}
    original = Replay.event

    def counted(self: Replay, *args: object, **kwargs: object) -> object:
        applied["count"] += 1
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Replay, "event", counted)
    return applied, original, counted


def test_each_void_switches_to_the_ladder_that_never_received_its_games(monkeypatch):
    """SPEC 6 "One history": after each void the lived ladder is, player for player, the
    ladder replayed from the start with every game voided so far skipped; and the replay
    runs each event once, plus each void's stretch from its first voided game to the void
    (not once more per void still ahead)."""
    played = _many_games(400)
    # A void every 20 games, of a game among the last 10 (one reaches back 90 games, one
    # voids two games, one a game an earlier void's stretch also covers).
    voids: dict[int, Action] = {}
    for n, at in enumerate(range(20, 401, 20), start=1):
        chosen = {played[at - 1 - (n * 7) % 10].event_id}
        if n == 5:
            chosen = {played[at - 90].event_id}
        if n == 8:
            chosen |= {played[at - 3].event_id}
        if n == 9:
            chosen = {played[at - 25].event_id}
        voids[at] = Action(
            n, "void", T0 + timedelta(hours=at), after_seq=at, voided=frozenset(chosen)
        )
    applied, original, counted = _counting(monkeypatch)
    lived = Lived("fibs", POLICY, rules_at, list(voids.values()))
    voided: frozenset[str] = frozenset()
    spans = 0
    for at, game in enumerate(played, start=1):
        lived.event(game, game.ended_at)
        void = voids.get(at)
        if void is None:
            continue
        spans += at - min(int(e[1:]) for e in void.voided - voided)
        voided |= void.voided
        lived.action(void)
        monkeypatch.setattr(Replay, "event", original)
        fresh = Replay(POLICY, rules_at, voided=voided)
        for one in played[:at]:
            fresh.event(one, one.ended_at)
        monkeypatch.setattr(Replay, "event", counted)
        assert set(fresh.players) <= set(lived.state.players)
        for key, player in fresh.players.items():
            assert same_state(player, lived.state.players[key]), (at, key)
    assert applied["count"] <= len(played) + spans
    assert applied["count"] < 2 * len(played)  # one replay per void ahead: about 20 times


def test_a_void_replays_the_games_it_changed_not_its_whole_stretch(monkeypatch):
    """SPEC 6 "One history", exactly: the lived ladder after the void is the ladder replayed
    without the voided game. A game whose players the void has not reached yet is decided
    the same either way, so only the games of players it reached are replayed twice: here
    the voided game's two players and the one who played them after it, not every game of
    the 200 between the void's first game and the void."""
    played = [
        GameFinished(
            f"s{i}",
            "fibs",
            T0 + timedelta(hours=i),  # w3 and l3 meet 50 hours apart: no pair limit
            "ranked",
            Side(f"w{i % 50}"),
            Side(f"l{i % 50}"),
            match_length=3,
        )
        for i in range(200)
    ]
    # w3 and l3 meet again at 53, 103 and 153: those games are decided anew, no other.
    void = Action(1, "void", T0 + timedelta(days=1), after_seq=200, voided=frozenset({"s3"}))
    applied, original, counted = _counting(monkeypatch)
    lived = Lived("fibs", POLICY, rules_at, [void])
    for game in played:
        lived.event(game, game.ended_at)
    assert len(played) + 4 == applied["count"]  # s3 (skipped there), s53, s103, s153
    changes, effects = lived.action(void)
    monkeypatch.setattr(Replay, "event", original)
    fresh = Replay(POLICY, rules_at, voided=void.voided)
    for game in played:
        fresh.event(game, game.ended_at)
    assert set(fresh.players) == set(lived.state.players)
    for key, player in fresh.players.items():
        assert same_state(player, lived.state.players[key]), key
    assert {"w3", "l3"} == {c.player_id for c in changes}
    assert [("s3", "voided")] == [(e.event_id, e.outcome) for e in effects]


def test_two_voids_in_flight_replay_only_the_games_they_changed(monkeypatch):
    """The same with two voids whose replays run at once (the second forked from the first):
    each game of players neither reached is applied once, and after both voids the lived
    ladder is the one that never received either game."""
    played = [
        GameFinished(
            f"t{i}",
            "fibs",
            T0 + timedelta(hours=i),
            "ranked",
            Side(f"w{i % 50}"),
            Side(f"l{i % 50}"),
            match_length=3,
        )
        for i in range(200)
    ]
    voids = [
        Action(1, "void", T0 + timedelta(days=9), after_seq=200, voided=frozenset({"t3"})),
        Action(2, "void", T0 + timedelta(days=9), after_seq=200, voided=frozenset({"t7"})),
    ]
    applied, original, _ = _counting(monkeypatch)
    lived = Lived("fibs", POLICY, rules_at, voids)
    for game in played:
        lived.event(game, game.ended_at)
    # t3's and t7's players meet at 53, 103, 153 and 57, 107, 157: a few dozen calls, not the
    # 390 of two whole stretches
    assert applied["count"] < len(played) + 30
    for void in voids:
        lived.action(void)
    monkeypatch.setattr(Replay, "event", original)
    fresh = Replay(POLICY, rules_at, voided=frozenset({"t3", "t7"}))
    for game in played:
        fresh.event(game, game.ended_at)
    assert set(fresh.players) == set(lived.state.players)
    for key, player in fresh.players.items():
        assert same_state(player, lived.state.players[key]), key


def test_a_layer_over_the_windows_counts_reads_them_until_it_takes_a_player():
    """engine.Windows.overlay: the layer counts what the counts under it gain for a player it
    has not taken; once it takes one (or adds to it), what either adds the other does not
    count; ``absorbed`` gives the counts under it the layer's own."""
    from engine.windows import Windows

    base = Windows()
    base.add_ranked_both("fibs", "a", "b", T0)
    base.add_rated_pair("fibs", "a", "b", T0)
    layer = base.overlay()
    base.add_ranked_both("fibs", "a", "c", T0 + timedelta(minutes=30))  # shared: both count it
    layer.take(("fibs", "a"))
    layer.take(("fibs", "b"))
    layer.take_pair("fibs", "b", "a")
    base.add_ranked_both("fibs", "a", "b", T0 + timedelta(hours=1))
    layer.add_rated_pair("fibs", "b", "a", T0 + timedelta(hours=1))
    later = T0 + timedelta(hours=2)
    assert (3, 2) == base.ranked_games_both("fibs", "a", "b", later, 24)
    assert (2, 1) == layer.ranked_games_both("fibs", "a", "b", later, 24)
    assert (1, 1) == (
        base.ranked_games("fibs", "c", later, 24),
        layer.ranked_games("fibs", "c", later, 24),
    )
    assert 1 == base.rated_pair_games("fibs", "a", "b", later, 24)
    assert 2 == layer.rated_pair_games("fibs", "a", "b", later, 24)
    assert base is base.absorbed(layer)
    assert (2, 1) == base.ranked_games_both("fibs", "a", "b", later, 24)
    assert 2 == base.rated_pair_games("fibs", "a", "b", later, 24)
    assert 1 == base.ranked_games("fibs", "c", later, 24)
