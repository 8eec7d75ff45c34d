"""A list of ids goes to PostgreSQL as one text (``worker.store.driver.listed``), split by the
server (``string_to_array``): every id reads back as sent, whatever it holds."""

from __future__ import annotations

import pytest

from worker.store.driver import KEYS, Read, items, listed, run_all, split

ODD = [
    "alice",
    "zoë",
    "björn ",
    " spaced",
    "NULL",
    "null",
    "{brace}",
    'a"quote',
    "back\\slash",
    "com,ma",
    "semi;colon",
    "%s%%",
    "E'\\x1F'",
    "日本語",
    "x" * 128,
]


def test_every_id_reads_back_as_sent(runtime):
    keys = [("gammon42", i) for i in ODD] + [("fibs", "alice")]
    read = Read(
        f"SELECT k.ladder, k.id, n FROM {KEYS} WITH ORDINALITY AS k(ladder, id, n) ORDER BY n",
        split(keys),
        lambda rows: [(a, b) for a, b, _ in rows],
    )
    ratings = [1500.0, 1234.5678901234567, 1e-7, 2.0**60 + 1, -0.0]
    floats = Read(
        f"SELECT x FROM unnest({items('xs')}::float8[]) WITH ORDINALITY AS u(x, n) ORDER BY n",
        {"xs": listed(repr(x) for x in ratings)},
        lambda rows: [x for (x,) in rows],
    )
    empty = Read(f"SELECT count(*) FROM {KEYS}", split([]), lambda rows: rows[0][0])
    with runtime.engine.connect() as conn:
        found, back, none = run_all(conn, [read, floats, empty])
    assert found == sorted(set(keys))
    assert back == ratings and str(back[-1]) == "-0.0"  # each double exactly, the sign too
    assert none == 0


@pytest.mark.parametrize("values", [["a", ""], [""], ["a\x1fb"]])
def test_an_empty_value_or_one_holding_the_separator_is_refused(values):
    """The server would read none for an empty one, two for one holding the separator."""
    with pytest.raises(ValueError, match="x1f"):
        listed(values)
