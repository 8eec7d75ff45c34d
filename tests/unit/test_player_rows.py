"""A stored player is read by column name: the order of ``Player``'s fields is nobody's contract."""

from __future__ import annotations

from dataclasses import fields

from engine import Player
from engine.player import STATE_FIELDS, STORED_FIELDS, stored_player
from worker.boards.projection import as_row
from worker.store.statements import PLAYER_COLUMNS, PLAYER_ROW, PLAYER_TYPES
from worker.store.tables import players


def test_a_stored_row_sets_each_field_from_the_value_of_its_name() -> None:
    """Each value of a row lands in the field its column names, whatever the field order."""
    values = tuple(f"value of {name}" for name in STORED_FIELDS)
    player = stored_player(values)
    assert {name: f"value of {name}" for name in STORED_FIELDS} == {
        name: getattr(player, name) for name in STORED_FIELDS
    }


def test_every_stored_field_is_a_players_column_and_selected_under_its_name() -> None:
    """The row the store selects names the columns of ``STORED_FIELDS``, in that order."""
    assert set(STORED_FIELDS) <= {c.name for c in players.columns}
    assert list(STORED_FIELDS) == [c.name for c in PLAYER_ROW]
    assert {f.name for f in fields(Player)} - set(STORED_FIELDS) == {"dirty"}


def test_the_json_record_types_are_the_tables_own() -> None:
    """One type per stored column, read from the table (text columns as ``text``)."""
    types = dict(zip(PLAYER_COLUMNS, PLAYER_TYPES, strict=True))
    assert PLAYER_COLUMNS == STATE_FIELDS
    assert "text" == types["linked_to"]
    assert "BIGINT" == types["version"]
    assert "BOOLEAN" == types["banned"]


def test_a_player_written_as_a_row_reads_back_the_same() -> None:
    """The projection's row of a player builds that player again."""
    player = Player("gammon42", "alice", 1512.5, rated_games=3, linked_to="bob", banned=True)
    assert player == stored_player(as_row(player))


def test_the_stored_fields_are_the_players_leading_fields() -> None:
    """``stored_player`` passes the values it picks by name positionally: the stored fields
    must come first in ``Player`` (``dirty``, not stored, is last)."""
    init = [f.name for f in fields(Player) if f.init]
    assert set(STORED_FIELDS) == set(init[: len(STORED_FIELDS)])
