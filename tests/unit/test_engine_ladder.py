"""The ladder rules above the formulas (engine.ladder), without PostgreSQL or Redis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine import (
    FairPlayConfig,
    FibsRules,
    Gammon42Rules,
    LadderState,
    Outcome,
    Player,
    Policy,
    ProStrikerRules,
    Reason,
    Replay,
    Ruleset,
    apply,
)
from engine import fairplay as fairplay_rules
from engine.ladder import (
    Decision,
    Event,
    GameFinished,
    IdentityLinked,
    MatchFinished,
    PlayerUpdated,
    Side,
    Team,
    TournamentFinished,
    on_public_board,
    unsupported,
    unsupported_detail,
    window_pair,
)
from engine.rulesets import OpenSkillRules
from schemas import REASONS

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
G42 = Gammon42Rules()
PRO = ProStrikerRules()
FIBS = FibsRules()
BOOSTED = Policy(boosted_board=True)
_ids = iter(range(1_000_000))


def game(winner: str, loser: str, at: datetime = NOW, **kw: object) -> GameFinished:
    fields: dict[str, object] = {"mode": "ranked", "cube": 1, "result": "single"}
    fields.update(kw)
    return GameFinished(
        f"g-{next(_ids)}",
        "l",
        at,
        str(fields["mode"]),
        Side(winner, bool(fields.get("winner_bot", False)), _str(fields.get("winner_net"))),
        Side(loser, False, _str(fields.get("loser_net"))),
        int(str(fields["cube"])),
        1,
        str(fields["result"]),
    )


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def run(
    *events: object,
    rules: Ruleset = G42,
    policy: Policy = BOOSTED,
    state: LadderState | None = None,
) -> tuple[list[Decision], LadderState]:
    state = state if state is not None else LadderState()
    decisions = [apply(e, state, rules, policy, NOW) for e in events]  # type: ignore[arg-type]
    return decisions, state


def player(state: LadderState, pid: str) -> Player:
    return state.players[("l", pid)]


def link(anon: str, account: str) -> IdentityLinked:
    return IdentityLinked(f"k-{next(_ids)}", "l", anon, account)


def cup(tid: str, podium: tuple[str, ...], public: bool = True) -> TournamentFinished:
    return TournamentFinished(f"t-{next(_ids)}", "l", tid, public, podium)


# -- links (SPEC 2.3 decision, seed 004) -------------------------------------------------------


@pytest.mark.parametrize(
    ("account_games", "outcome", "reason", "account_rating", "account_rated_games"),
    [
        (0, Outcome.APPLIED, Reason.ADOPTED, 1220.0, 1),  # no rated games: takes over anon's
        (1, Outcome.APPLIED, Reason.ACCOUNT_KEPT, 1180.0, 1),  # keeps its own; never added
    ],
)
def test_a_link_adopts_the_anonymous_rating_only_when_the_account_has_no_rated_games(
    account_games: int,
    outcome: Outcome,
    reason: Reason,
    account_rating: float,
    account_rated_games: int,
) -> None:
    """SPEC 2.3: 'if the account has no rated games it takes over the anonymous id's rating
    and counts; otherwise it keeps its own'; the two histories are never added."""
    setup = [game("anon", "x1")] + [game("x2", "acct") for _ in range(account_games)]
    (*_, decision), state = run(*setup, link("anon", "acct"), rules=PRO)
    assert (outcome, reason) == (decision.outcome, decision.reason)
    acct, anon = player(state, "acct"), player(state, "anon")
    assert (account_rating, account_rated_games) == (acct.rating, acct.rated_games)
    assert ("acct", False) == (anon.linked_to, anon.listed)
    assert (reason == Reason.ADOPTED) == (len(decision.changes) == 1)


@pytest.mark.parametrize(
    ("second", "reason"),
    [
        (("anon", "other"), Reason.ANONYMOUS_ALREADY_LINKED),  # the anonymous id once
        (("other", "acct"), Reason.ACCOUNT_ALREADY_LINKED),  # to one account
        (("acct", "other"), Reason.LINKED_ID_REUSED),  # the account as an anonymous id
        (("other", "anon"), Reason.LINKED_ID_REUSED),  # the anonymous id as an account
    ],
)
def test_a_second_link_of_either_side_is_refused_and_recorded(
    second: tuple[str, str], reason: Reason
) -> None:
    """SPEC 2.3: 'A second link of either side is refused and recorded, not retried.'"""
    (_, decision), _ = run(link("anon", "acct"), link(*second), rules=PRO)
    assert (Outcome.REFUSED, reason, True) == (decision.outcome, decision.reason, decision.recorded)


def test_linking_switched_off_refuses_every_link() -> None:
    """A ladder configured without linking records the link as refused."""
    (decision,), _ = run(link("anon", "acct"), policy=Policy(linking=False))
    assert (Outcome.REFUSED, Reason.LINKING_DISABLED) == (decision.outcome, decision.reason)


def test_after_a_link_games_of_the_anonymous_id_are_scored_for_the_account() -> None:
    """SPEC 2.3: 'After linking, events naming the anonymous id are scored for the account.'"""
    (_, _, decision), state = run(link("anon", "acct"), game("anon", "b"), game("acct", "anon"))
    assert (Outcome.UNRATED, Reason.SELF_PLAY) == (decision.outcome, decision.reason)
    assert 1 == player(state, "acct").rated_games and 0 == player(state, "anon").rated_games


# -- tournaments (SPEC 2.1, seed 002) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "public", "reason", "ratings"),
    [
        (G42, True, None, (1550.0, 1525.0, 1515.0)),  # +50, +25, +15
        (G42, False, Reason.PRIVATE_TOURNAMENT, (None, None, None)),  # private: nothing
        (PRO, True, Reason.NO_PRIZES, (None, None, None)),  # a ruleset without prizes
        (Gammon42Rules(prizes=(10,)), True, None, (1510.0, None, None)),  # configurable
    ],
)
def test_a_tournament_pays_its_podium_by_the_ruleset(
    rules: Ruleset, public: bool, reason: Reason | None, ratings: tuple[float | None, ...]
) -> None:
    """SPEC 2.1: 'a public tournament's end awards flat prizes to its podium: +50, +25, +15
    (configurable); private tournaments award nothing'."""
    start = rules.start
    (decision,), state = run(cup("t1", ("a", "b", "c"), public), rules=rules)
    assert (Outcome.APPLIED, reason) == (decision.outcome, decision.reason)
    expected = [(start, False) if r is None else (r, True) for r in ratings]
    assert expected == [(player(state, p).rating, player(state, p).listed) for p in "abc"]


def test_a_tournament_pays_out_at_most_once() -> None:
    """SPEC 2.1: 'each tournament pays out at most once'."""
    (first, second), state = run(cup("t1", ("a",)), cup("t1", ("a",)))
    assert Outcome.APPLIED == first.outcome
    assert (Outcome.REFUSED, Reason.TOURNAMENT_ALREADY_SETTLED, ()) == (
        second.outcome,
        second.reason,
        second.changes,
    )
    assert 1550.0 == player(state, "a").rating


# -- boosted points (SPEC 2.1 decision) --------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "result", "cube", "board", "points"),
    [
        ("boosted", "single", 1, True, 1),
        ("boosted", "gammon", 4, True, 8),  # 2 x cube 4
        ("boosted", "backgammon", 64, True, 192),
        ("boosted", "gammon", 2, False, 0),  # the ladder has no boosted board
        ("ranked", "gammon", 2, True, 0),  # a rated game moves the rating, not points
        ("tournament", "gammon", 2, True, 0),
    ],
)
def test_boosted_points_are_the_result_value_times_the_cube_to_the_winner(
    mode: str, result: str, cube: int, board: bool, points: int
) -> None:
    """SPEC 2.1 decision: 'points = result value 1/2/3 for single/gammon/backgammon x cube,
    to the winner'."""
    g = game("w", "l2", mode=mode, result=result, cube=cube)
    (decision,), state = run(g, policy=Policy(boosted_board=board))
    assert (points, 0) == (player(state, "w").boosted_points, player(state, "l2").boosted_points)
    assert ((("w", points),) if points else ()) == decision.boosted


# -- player.updated and the public list (SPEC 2.2) ---------------------------------------------


@pytest.mark.parametrize(
    ("email", "name", "experience", "public"),
    [
        (True, True, 20, True),
        (True, True, 19, False),  # experience >= 20
        (False, True, 20, False),  # a verified e-mail
        (True, False, 20, False),  # a chosen display name
    ],
)
def test_player_updated_sets_the_public_list_inputs_of_fibs(
    email: bool, name: bool, experience: int, public: bool
) -> None:
    """SPEC 2.2: 'public leaderboard lists only players with a verified e-mail, a chosen
    display name and experience >= 20'."""
    state = LadderState(players={("l", "p"): Player("l", "p", 1500.0, 1, experience, True)})
    (decision,), _ = run(PlayerUpdated("u-1", "l", "p", email, name), rules=FIBS, state=state)
    assert (Outcome.APPLIED, "p") == (decision.outcome, decision.winner_id)
    assert public == on_public_board(player(state, "p"), FIBS, Policy(public_board=True))


# -- the K window of gammon42 (SPEC 2.1, seed 002 K=16 table) ------------------------------


@pytest.mark.parametrize(
    ("winner_games", "loser_games", "first_game_at", "winner_delta", "loser_delta"),
    [
        (60, 10, timedelta(days=6), 8.0, -16.0),  # SPEC 2.1: 60 games vs 10: +8, -16
        (50, 0, timedelta(days=6), 8.0, -16.0),  # >= 50 ranked games => K 16
        (49, 0, timedelta(days=6), 16.0, -16.0),
        (50, 0, timedelta(days=7, seconds=1), 16.0, -16.0),  # outside the 7 days
        (50, 0, timedelta(days=7), 8.0, -16.0),  # the window's first instant is in
    ],
)
def test_k_halves_with_fifty_ranked_games_in_the_seven_days_before_the_game(
    winner_games: int,
    loser_games: int,
    first_game_at: timedelta,
    winner_delta: float,
    loser_delta: float,
) -> None:
    """SPEC 2.1: 'K = 32, or 16 for a player with >= 50 ranked games in the 7 days before this
    game's ended_at (this game not counted)'; unrated ranked games count too (decision)."""
    state = LadderState()
    for pid, count in (("w", winner_games), ("l", loser_games)):
        for n in range(count):
            state.windows.add_ranked("l", pid, NOW - first_game_at + timedelta(seconds=n % 2))
    state.players = {("l", p): Player("l", p, 1500.0) for p in ("w", "l")}
    (decision,), _ = run(game("w", "l"), state=state)
    assert (winner_delta, loser_delta) == tuple(c.delta for c in decision.changes)


def test_the_pair_limit_leaves_the_fourth_rated_game_of_a_day_unrated() -> None:
    """Seed 003: 'only the first 3 rated matches between the same two players within 24
    hours change ratings; later ones are recorded but not rated'."""
    games = [game("a", "b", NOW - timedelta(hours=3 - n)) for n in range(4)]
    decisions, _ = run(*games, rules=FIBS)
    assert [Outcome.RATED] * 3 + [Outcome.UNRATED] == [d.outcome for d in decisions]
    assert Reason.PAIR_LIMIT == decisions[-1].reason


# -- duplicates and conflicts (SPEC 2.4 step 1) --------------------------------------------


@pytest.mark.parametrize(
    ("first_digest", "second_digest", "outcome", "reason"),
    [
        ("d1", "d1", Outcome.DUPLICATE, None),  # equal content: no effect at all
        (None, "d2", Outcome.DUPLICATE, None),  # stored before digests: taken as duplicate
        ("d1", "d2", Outcome.DEAD_LETTERED, Reason.EVENT_ID_CONFLICT),
    ],
)
def test_a_reused_event_id_is_a_duplicate_only_when_the_content_is_equal(
    first_digest: str | None, second_digest: str, outcome: Outcome, reason: Reason | None
) -> None:
    """SPEC 2.4 step 1: 'The same event_id with a different content is not a duplicate but
    a conflict: dead-lettered as event_id_conflict, never silently dropped.'"""
    state = LadderState(seen={("l", "e-1"): first_digest})
    state.players = {("l", p): Player("l", p, 1500.0) for p in ("a", "b")}
    event = GameFinished("e-1", "l", NOW, "ranked", Side("a"), Side("b"), digest=second_digest)
    (decision,), _ = run(event, state=state)
    assert (outcome, reason, False, ()) == (
        decision.outcome,
        decision.reason,
        decision.recorded,
        decision.changes,
    )
    assert 1500.0 == player(state, "a").rating


# -- one vocabulary ----------------------------------------------------------------------------


def test_every_reason_of_the_validator_and_the_fair_play_filters_is_in_the_vocabulary() -> None:
    """Audit rows, dead letters, logs and docs draw from one list of reasons."""
    values = {str(r) for r in Reason}
    assert set(REASONS) <= values
    assert {str(r) for r in fairplay_rules.Reason} <= values
    assert {"retries_exhausted", "processing_error", "event_id_conflict"} <= values


# -- replay ------------------------------------------------------------------------------------


def test_a_replay_of_the_same_events_derives_the_same_state() -> None:
    """Replaying a log through the engine reproduces every ledger change bit for bit."""
    log: list[Event] = [
        game("a", "b", NOW - timedelta(hours=5)),
        link("anon", "c"),
        game("anon", "a", NOW - timedelta(hours=4), loser_net="n", winner_net="n"),
        cup("t", ("a", "b")),
        game("b", "a", NOW - timedelta(hours=3), mode="boosted", result="gammon", cube=2),
    ]
    policy = Policy(FairPlayConfig(), boosted_board=True)
    live, state = run(*log, rules=FIBS, policy=policy)
    replay = Replay(policy, lambda _when: FIBS)
    replayed = [replay.event(e, NOW) for e in log]
    assert [d.changes for d in live] == [d.changes for d in replayed if d is not None]
    assert state.players == replay.state.players


def test_the_players_a_refused_event_names_are_touched_for_the_projection() -> None:
    """A refused tournament or link still creates its players: their cards are written too."""
    _, state = run(cup("t1", ("a",)), cup("t1", ("a", "z")), link("x", "y"))
    assert {("l", p) for p in ("a", "z", "x", "y")} == state.touched
    assert 1500.0 == player(state, "z").rating


# -- draws and team games (SPEC 7) -------------------------------------------------------------


def match(*teams: tuple[int, tuple[str, ...]], shape: str = "teams") -> MatchFinished:
    return MatchFinished(
        f"m-{next(_ids)}",
        "l",
        NOW,
        "ranked",
        tuple(Team(rank, tuple(Side(p) for p in ids), (1.0,) * len(ids)) for rank, ids in teams),
        shape,
    )


def test_a_team_game_decision_names_each_player_as_resolved_with_the_team_rank() -> None:
    """Rated or not, every player of a draw or team game is in the decision, team by team, an
    anonymous id as the account it is linked to."""
    rules = OpenSkillRules()
    decisions, _ = run(
        link("guest", "ann"),
        match((2, ("guest", "bob")), (1, ("cat", "dan"))),
        match((1, ("ann",)), (1, ("bob",)), shape="draw"),
        match((1, ("eve", "bot")), (3, ("fay",)), (2, ("gus",))),
        rules=rules,
    )
    assert [d.players for d in decisions[1:]] == [
        (("ann", 2), ("bob", 2), ("cat", 1), ("dan", 1)),
        (("ann", 1), ("bob", 1)),
        (("eve", 1), ("bot", 1), ("fay", 3), ("gus", 2)),
    ]
    assert decisions[1].winner_id is None and decisions[2].winner_id == "ann"


def test_a_shape_the_ruleset_does_not_rate_is_refused_with_what_it_rates() -> None:
    """SPEC 7: "A ruleset that cannot rate a shape dead-letters it with a named reason (e.g.
    `unsupported_shape`). The seed rulesets rate 1v1 wins only, exactly as before." The
    dead letter's detail is the engine's: what the ruleset rates, and what the game is."""
    draw, teams = match((1, ("a",)), (1, ("b",)), shape="draw"), match((1, ("a", "b")), (2, ("c",)))
    assert unsupported(draw, FIBS) and unsupported(teams, G42)
    assert "(fibs) rates 1v1 wins only, not draws" == unsupported_detail(draw, FIBS)
    assert "(gammon42) rates 1v1 wins only, not team games" == unsupported_detail(teams, G42)
    decision = apply(draw, LadderState(), FIBS, Policy(), NOW)
    assert (Outcome.DEAD_LETTERED, Reason.UNSUPPORTED_SHAPE) == (decision.outcome, decision.reason)
    assert not unsupported(draw, OpenSkillRules()) and not unsupported(game("a", "b"), G42)


def test_a_one_on_one_win_decision_names_no_team_players() -> None:
    """A 1v1 win keeps its players as winner and loser only."""
    decisions, _ = run(game("a", "b"))
    assert decisions[0].players == () and (decisions[0].winner_id, decisions[0].loser_id) == (
        "a",
        "b",
    )


def test_a_game_of_two_counts_its_pair_in_the_windows_and_a_game_of_more_none() -> None:
    """SPEC 2.1/2.4: K by weekly volume counts ranked games and the pair limit rated games
    between two players; a draw or a team game of two players counts as their 1v1 game would
    (the store keeps them as its winner and loser, as sent), a game of more players in no
    window, and an event that is no game in none."""
    assert ("a", "b") == window_pair(game("a", "b"))
    assert ("ann", "bob") == window_pair(match((1, ("ann",)), (1, ("bob",)), shape="draw"))
    assert ("cat", "dan") == window_pair(match((2, ("cat",)), (1, ("dan",))))
    assert window_pair(match((1, ("a", "b")), (2, ("c", "d")))) is None
    assert window_pair(match((1, ("a",)), (2, ("b",)), (3, ("c",)))) is None
    assert window_pair(link("x", "y")) is None
    assert window_pair(cup("t9", ("a", "b"))) is None
