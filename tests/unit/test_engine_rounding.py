"""round_half_away matches Go's math.Round, which seed 002's server uses (SPEC 2.1)."""

import math

import pytest

from engine.rounding import round_half_away


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.5, 1),
        (-0.5, -1),
        (1.5, 2),
        (2.5, 3),
        (-2.5, -3),
        (1.4999, 1),
        (-1.4999, -1),
        (2.4999999999, 2),
        (0.49999999999999994, 0),  # floor(x + 0.5) would give 1 here
        (0.0, 0),
        (-0.0, 0),
        (12.155950826367327, 12),  # seed 004's worked example
        (-3.8440491736326736, -4),
        (4503599627370497.0, 4503599627370497),  # beyond 2**52 every float is whole
    ],
)
def test_round_half_away_rounds_ties_away_from_zero(x: float, expected: int) -> None:
    """Ties go away from zero; everything else goes to the nearest integer."""
    assert expected == round_half_away(x)


def test_round_half_away_differs_from_python_round_on_even_ties() -> None:
    """Python's banker's rounding gives 2 for 2.5; the seed's Go code gives 3."""
    assert (2, 3) == (round(2.5), round_half_away(2.5))


@pytest.mark.parametrize("x", [math.inf, -math.inf, math.nan])
def test_round_half_away_rejects_non_finite_values(x: float) -> None:
    """There is no whole number for infinity or NaN."""
    with pytest.raises(ValueError, match="non-finite"):
        round_half_away(x)
