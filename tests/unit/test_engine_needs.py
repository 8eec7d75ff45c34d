"""What a batch needs read before the engine decides (engine.needs), without PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from engine import FairPlayConfig, FibsRules, Gammon42Rules, LadderState, Player, Policy, apply
from engine.ladder import Event, IdentityLinked, TournamentFinished
from engine.needs import named, needs
from tests.unit.test_engine_ladder import G42, NOW, PRO, game

POLICIES = {"l": Policy()}


def rules_for(rules):
    return lambda event: rules


def test_every_named_id_and_its_account_start_at_the_rules_start_rating():
    """SPEC 2.3: a linked anonymous id is scored as its account; both exist as players (each
    id as sent, then as resolved through the links), at the ruleset's start rating."""
    events: list[Event] = [game("anon", "bob"), game("cat", "dan")]
    wanted = needs(events, rules_for(PRO), POLICIES, {"l": {"anon": "acct"}}, set())
    assert {("l", p): 1200.0 for p in ("anon", "acct", "bob", "cat", "dan")} == wanted.starts
    assert {"l": {"anon", "bob", "cat", "dan"}} == named(events)
    assert set() == wanted.existing


def test_an_event_applied_before_creates_nobody_and_names_who_it_reprojects():
    """SPEC 2.4 step 1: "an event_id already applied is a duplicate: no change". Its ids may
    have been erased since: it asks only for those that still exist."""
    old, new = game("gone", "amy"), game("amy", "bob")
    wanted = needs([old, new], rules_for(G42), POLICIES, {}, {("l", old.event_id)})
    assert {("l", "amy"), ("l", "bob")} == set(wanted.starts)
    assert {("l", "gone")} == wanted.existing  # read if it exists, never created
    (ask,) = wanted.windows
    assert (["amy", "bob"], [("amy", "bob")]) == (list(ask.ranked_ids), list(ask.pairs))

    state = LadderState(players={}, seen={("l", old.event_id): None})
    decision = apply(old, state, G42, Policy(), NOW)
    assert ("duplicate", set(), {}) == (str(decision.outcome), state.touched, state.players)
    # one that still exists is projected again (a crash may have cut the first write short)
    amy = Player("l", "amy", 1516.0)
    state = LadderState(players={("l", "amy"): amy}, seen={("l", old.event_id): None})
    apply(old, state, G42, Policy(), NOW)
    assert ({("l", "amy")}, 1516.0, False) == (state.touched, amy.rating, amy.dirty)


def test_the_start_rating_is_the_first_events_version():
    """A player first named under one ruleset version starts at that version's rating."""
    first, later = Gammon42Rules(start=1400.0), Gammon42Rules(start=1600.0)
    events: list[Event] = [game("amy", "bob", NOW), game("amy", "cat", NOW + timedelta(days=1))]
    wanted = needs(events, lambda e: first if e is events[0] else later, POLICIES, {}, set())
    assert {("l", "amy"): 1400.0, ("l", "bob"): 1400.0, ("l", "cat"): 1600.0} == wanted.starts


def test_games_the_not_ranked_filter_refuses_ask_no_windows():
    """SPEC 2.4: only ranked games change ratings (unless the ladder switches the filter
    off), so only they read the K and pair windows."""
    events: list[Event] = [game("amy", "bob", mode="boosted")]
    assert [] == needs(events, rules_for(G42), POLICIES, {}, set()).windows
    off = {"l": Policy(fairplay=FairPlayConfig(not_ranked=False))}
    (ask,) = needs(events, rules_for(G42), off, {}, set()).windows
    assert ((168, 168), 24) == (ask.ranked_hours, ask.pair_hours)
    (fibs,) = needs(events, rules_for(FibsRules()), off, {}, set()).windows
    assert (None, [], [("amy", "bob")]) == (fibs.ranked_hours, fibs.ranked_ids, fibs.pairs)


def test_a_link_in_the_batch_asks_the_windows_of_the_account_too():
    """A game after a link in the same batch is scored as the account: both are asked."""
    link = IdentityLinked("e-link", "l", "anon", "acct")
    events: list[Event] = [link, game("anon", "bob")]
    (ask,) = needs(events, rules_for(G42), POLICIES, {}, set()).windows
    assert ["acct", "anon", "bob"] == list(ask.ranked_ids)
    assert [("acct", "bob"), ("anon", "bob")] == list(ask.pairs)


def test_tournaments_applied_before_are_not_asked():
    cup = TournamentFinished("t-1", "l", "cup", True, ("amy", "bob"))
    cap = TournamentFinished("t-2", "l", "cap", True, ("amy", "bob"))
    wanted = needs([cup, cap], rules_for(G42), POLICIES, {}, {("l", "t-1")})
    assert {("l", "cap")} == wanted.tournaments
