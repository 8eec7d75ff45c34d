"""An id with an invisible character inside is not a second player: it is refused."""

from __future__ import annotations

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import stored_players


def test_a_zero_width_character_inside_an_id_dead_letters_the_event_with_a_reason(runtime):
    """``h-al\\u200bice`` would be a second ``h-alice``: the event is dead-lettered as
    ``invalid_field`` naming the winner's id, and no player is created; ``h-alice`` plays."""
    publish(
        runtime,
        game("h-al\u200bice", "bob", event_id="zw-1"),
        game("h-alice", "bob", event_id="ok-1"),
    )
    drain(runtime)
    (letter,) = runtime.dead_letters.list()
    assert ("zw-1", "invalid_field") == (letter.event_id, letter.reason)
    assert "winner" in letter.detail and "format" in letter.detail
    assert {"h-alice", "bob"} == set(stored_players(runtime, "gammon42"))
