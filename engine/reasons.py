"""The one vocabulary of what happened to an event and why.

The audit row (``events.outcome``/``events.reason``), the dead-letter entry, the ``event`` log
line, the metrics and the README all draw from these two lists, the way FAForever stores why a
game is unrated rather than a boolean. A value is what the store and the logs hold, so a value
never changes once written; new reasons are added at the end of their group.
"""

from enum import StrEnum

__all__ = ["LedgerKind", "Outcome", "Reason"]


class Outcome(StrEnum):
    """What happened to one event."""

    RATED = "rated"  # a game that changed both players' ratings
    UNRATED = "unrated"  # a game recorded with the reason it did not count
    APPLIED = "applied"  # a tournament, link or player update took effect
    REFUSED = "refused"  # recorded, with no effect: the reason says why
    DUPLICATE = "duplicate"  # the event id was applied before: no effect at all (SPEC 2.4 step 1)
    DEAD_LETTERED = "dead_lettered"  # never applied; the dead-letter entry says why
    VOIDED = "voided"  # a recorded game an operator took back: as if it had never been played


class Reason(StrEnum):
    """Why: of an unrated game, of a refusal or an applied event's variant, of a dead letter."""

    # fair play (SPEC 2.4), in filter order: an unrated game
    NOT_RANKED = "not_ranked"
    BOT = "bot"
    SHARED_NETWORK = "shared_network"
    PAIR_LIMIT = "pair_limit"
    SELF_PLAY = "self_play"  # an anonymous id against the account it is linked to; also invalid
    BANNED = "banned"  # a player of the game is banned from the ladder (moderation)
    # tournaments
    TOURNAMENT_ALREADY_SETTLED = "tournament_already_settled"
    PRIVATE_TOURNAMENT = "private_tournament"
    NO_PRIZES = "no_prizes"
    # links (SPEC 2.3)
    LINKING_DISABLED = "linking_disabled"
    ANONYMOUS_ALREADY_LINKED = "anonymous_already_linked"
    ACCOUNT_ALREADY_LINKED = "account_already_linked"
    LINKED_ID_REUSED = "linked_id_reused"
    ADOPTED = "adopted"
    ACCOUNT_KEPT = "account_kept"
    # dead letters: the event is invalid (schemas.REASONS) ...
    PAYLOAD_TOO_LARGE = "payload_too_large"
    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    UNKNOWN_TYPE = "unknown_type"
    MISSING_FIELD = "missing_field"
    INVALID_FIELD = "invalid_field"
    INVALID_CUBE = "invalid_cube"
    ENDED_AT_IN_FUTURE = "ended_at_in_future"
    INVALID_TIMESTAMP = "invalid_timestamp"
    UNKNOWN_LADDER = "unknown_ladder"
    BAD_SIGNATURE = "bad_signature"
    # ... or could not be applied
    EVENT_ID_CONFLICT = "event_id_conflict"  # the id was applied before with other content
    RETRIES_EXHAUSTED = "retries_exhausted"
    PROCESSING_ERROR = "processing_error"
    UNSUPPORTED_SHAPE = "unsupported_shape"  # a draw or team game the ruleset cannot rate


class LedgerKind(StrEnum):
    """What a ``rating_changes`` row records: the logged action that moved a rating."""

    GAME = "game"
    PRIZE = "prize"
    LINK = "link"  # an account adopting its anonymous id's rating
    SEASON = "season"  # a season's reset (``event_id`` is ``season:<name>``)
    IMPORT = "import"  # a player's rating brought from another system (``import:<digest>``)
    ADJUSTMENT = "adjustment"  # an operator's manual change (``event_id`` is ``moderation:<n>``)
    CORRECTION = "correction"  # a re-rating after a void (``event_id`` is ``moderation:<n>``)
