"""Per-call microseconds of ``engine.openskill.rate`` against ``openskill``'s PlackettLuce.

``python -m bench.openskill_maths``: a 1v1, a 1v1 draw, a 2v2 and an 8-player free-for-all,
each timed with ``timeit``: the best of ``REPEATS`` rounds of ``NUMBER`` calls, in
microseconds per call. It prints; it asserts nothing.

Two figures for the package: ``PlackettLuce().rate`` on rating objects built beforehand (the
package's own cost), and with the objects built from (mu, sigma) inside the call, as a caller
holding stored numbers would have to (``model.rating`` draws a uuid4 per player).
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

from openskill.models import PlackettLuce

from engine.openskill import Model, rate

REPEATS = 7
NUMBER = 2000

MODEL = Model()
PACKAGE = PlackettLuce()
NEW = (25.0, 25.0 / 3.0)

# name: (teams of (mu, sigma), ranks)
CASES: dict[str, tuple[list[list[tuple[float, float]]], list[float]]] = {
    "1v1": ([[(27.1, 6.2)], [(24.3, 7.9)]], [1, 2]),
    "1v1 draw": ([[(27.1, 6.2)], [(24.3, 7.9)]], [1, 1]),
    "2v2": ([[(27.1, 6.2), (22.0, 5.1)], [(24.3, 7.9), NEW]], [2, 1]),
    "8-player FFA": ([[(20.0 + i, 3.0 + i / 2)] for i in range(8)], [3, 1, 8, 2, 5, 4, 7, 6]),
}


def per_call(call: Callable[[], object]) -> float:
    """Microseconds per call: the best round of ``NUMBER`` calls."""
    return min(timeit.repeat(call, repeat=REPEATS, number=NUMBER)) / NUMBER * 1e6


def timings(teams: list[list[tuple[float, float]]], ranks: list[float]) -> tuple[float, ...]:
    """Ours, the package on prebuilt objects, the package building them: microseconds."""
    objects = [[PACKAGE.rating(mu, sigma) for mu, sigma in team] for team in teams]

    def built() -> object:
        rated = [[PACKAGE.rating(mu, sigma) for mu, sigma in team] for team in teams]
        return PACKAGE.rate(rated, ranks=ranks)

    return (
        per_call(lambda: rate(MODEL, teams, ranks)),
        per_call(lambda: PACKAGE.rate(objects, ranks=ranks)),
        per_call(built),
    )


def main() -> None:
    print(f"microseconds per call, best of {REPEATS} rounds of {NUMBER} calls")
    print(f"{'case':<14}{'ours':>8}{'package':>10}{'+ build':>10}{'package / ours':>16}")
    for name, (teams, ranks) in CASES.items():
        ours, package, with_build = timings(teams, ranks)
        print(f"{name:<14}{ours:>8.1f}{package:>10.1f}{with_build:>10.1f}{package / ours:>15.2f}x")


if __name__ == "__main__":
    main()
