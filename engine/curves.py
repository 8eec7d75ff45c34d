"""Powers of ten for the logistic expected-score curves of all three rulesets.

Source rule: every seed's curve has the form ``1 / (1 + 10^(gap / divisor))`` (seed 002 for
Gammon42, seed 003 for FIBS, seed 004 for ProStriker). Go's ``math.Pow`` (seed 002's server)
saturates to +Inf on overflow, so the curve ends at exactly 0 or 1; Python raises
``OverflowError`` instead. We saturate the same way so that an absurd rating gap gives a
certain result rather than a crashed event.
"""

import math

__all__ = ["pow10"]


def pow10(exponent: float) -> float:
    """Return ``10 ** exponent``, saturating to ``math.inf`` where Python would overflow."""
    try:
        return math.pow(10.0, exponent)
    except OverflowError:
        return math.inf
