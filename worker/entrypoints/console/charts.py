"""SVG charts drawn by hand: a calibration curve and a rating history.

No chart library and no script: each chart is one self-contained ``<svg>`` element with a
``viewBox``, so it scales to a phone's width, and every text in it is escaped. The console
pages embed them inline; ``ladder calibrate --plot`` and ``ladder backtest --plot`` write them
to a file (``worker.entrypoints.console.png`` turns one into a PNG).

Both charts mark their data points with ``class="point"`` so a test (or a reader of the file)
can count them: one per non-empty bucket, one per rated game.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

INK = "#1f2933"
GRID = "#d9e2ec"
MUTED = "#627d98"
SERIES = ("#2f80ed", "#e8590c")  # stored, candidate


@dataclass(frozen=True)
class Series:
    """One calibration curve: a name and its buckets (``Bucket.as_json()`` objects)."""

    name: str
    buckets: Sequence[dict[str, Any]]


def _fit(text: str, most: int) -> str:
    """The visible title within the chart's width; the full one stays in ``<title>``."""
    return text if len(text) <= most else text[: most - 1] + "…"


def _text(x: float, y: float, text: str, **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{escape(v)}"' for k, v in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{escape(text)}</text>'


def calibration_svg(series: Sequence[Series], title: str) -> str:
    """Observed rate against mean expected score per bucket, with the diagonal (a perfect
    forecast) and each bucket's game count as a bar below the curve."""
    width, height = 480, 600
    left, top, plot = 64, 64, 380  # the square plot area, below the title and the legend
    bars_top, bars_height = top + plot + 74, 60

    def x(p: float) -> float:
        return left + (p - 0.5) / 0.5 * plot

    def y(rate: float) -> float:
        return top + (1.0 - rate) * plot  # observed 0 at the bottom, 1 at the top

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}" class="chart calibration" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="15">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        _text(8, 26, _fit(title, 44), fill=INK, font_size="18", font_weight="600"),
    ]
    for i in range(11):  # grid: expected 0.50..1.00, observed 0.0..1.0
        p = 0.5 + i * 0.05
        parts.append(
            f'<line x1="{x(p):.1f}" y1="{top}" x2="{x(p):.1f}" y2="{top + plot}" '
            f'stroke="{GRID}" stroke-width="1"/>'
        )
        if i % 2 == 0:
            parts.append(_text(x(p), top + plot + 20, f"{p:.2f}", fill=MUTED, text_anchor="middle"))
        rate = i / 10
        parts.append(
            f'<line x1="{left}" y1="{y(rate):.1f}" x2="{left + plot}" y2="{y(rate):.1f}" '
            f'stroke="{GRID}" stroke-width="1"/>'
        )
        parts.append(_text(left - 8, y(rate) + 4, f"{rate:.1f}", fill=MUTED, text_anchor="end"))
    parts.append(
        f'<line x1="{x(0.5):.1f}" y1="{y(0.5):.1f}" x2="{x(1.0):.1f}" y2="{y(1.0):.1f}" '
        f'stroke="{MUTED}" stroke-width="1.5" stroke-dasharray="6 4" class="diagonal"/>'
    )
    parts.append(
        _text(
            left + plot / 2, top + plot + 32, "expected (favourite)", fill=INK, text_anchor="middle"
        )
    )
    parts.append(
        f'<text transform="translate(18 {top + plot / 2}) rotate(-90)" fill="{INK}" '
        f'text-anchor="middle">observed</text>'
    )
    most = max((int(b["games"]) for s in series for b in s.buckets), default=0) or 1
    slot = plot / 10 / max(len(series), 1)
    for n, one in enumerate(series):
        colour = SERIES[n % len(SERIES)]
        filled = [b for b in one.buckets if b["games"]]
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{x(b['mean_expected']):.1f},{y(b['observed']):.1f}"
            for i, b in enumerate(filled)
        )
        if path:
            parts.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for b in filled:
            parts.append(
                f'<circle class="point" cx="{x(b["mean_expected"]):.1f}" '
                f'cy="{y(b["observed"]):.1f}" r="5" fill="{colour}">'
                f"<title>{escape(one.name)}: {b['low']:.2f}-{b['high']:.2f}, {b['games']} games, "
                f"expected {b['mean_expected']:.3f}, observed {b['observed']:.3f}</title></circle>"
            )
        for b in one.buckets:  # the counts: one bar per bucket and series
            h = bars_height * int(b["games"]) / most
            bx = x(b["low"]) + n * slot + 1
            parts.append(
                f'<rect class="count" x="{bx:.1f}" y="{bars_top + bars_height - h:.1f}" '
                f'width="{slot - 2:.1f}" height="{h:.1f}" fill="{colour}" opacity="0.55">'
                f"<title>{escape(one.name)}: {b['games']} games</title></rect>"
            )
    # The legend: one line above the plot, never over the curve it explains.
    legend = ['<g class="legend">']
    legend_x = float(left)
    for n, one in enumerate(series):
        name = _fit(one.name, 24)
        legend.append(
            f'<rect x="{legend_x:.1f}" y="{top - 22}" width="12" height="12" '
            f'fill="{SERIES[n % len(SERIES)]}"/>'
        )
        legend.append(_text(legend_x + 18, top - 11, name, fill=INK))
        legend_x += 18 + 8.5 * len(name) + 18
    legend.append("</g>")
    parts.extend(legend)
    parts.append(_text(left, bars_top - 8, f"games per bucket (most: {most})", fill=MUTED))
    parts.append("</svg>")
    return "\n".join(parts)


@dataclass(frozen=True)
class Point:
    """One rated game on a rating chart: when, the rating after it, and a label."""

    at: float  # seconds since the epoch
    rating: float
    label: str


def rating_svg(points: Sequence[Point], title: str, shown: Any = None) -> str:
    """The rating after each rated game, oldest on the left; ``shown`` formats a rating."""
    fmt = shown or (lambda r: f"{r:.0f}")
    width, height = 480, 280
    left, right, top, bottom = 58, 14, 40, 30
    inner_w, inner_h = width - left - right, height - top - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}" class="chart rating" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="15">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        _text(8, 24, _fit(title, 46), fill=INK, font_size="17", font_weight="600"),
    ]
    if not points:
        parts.append(
            _text(width / 2, height / 2, "no rated games yet", fill=MUTED, text_anchor="middle")
        )
        parts.append("</svg>")
        return "\n".join(parts)
    low = min(p.rating for p in points)
    high = max(p.rating for p in points)
    pad = max((high - low) * 0.1, 5.0)
    low, high = low - pad, high + pad
    count = len(points)

    def x(i: int) -> float:
        return left + (inner_w * i / (count - 1) if count > 1 else inner_w / 2)

    def y(rating: float) -> float:
        return top + (high - rating) / (high - low) * inner_h

    for i in range(5):
        value = low + (high - low) * i / 4
        parts.append(
            f'<line x1="{left}" y1="{y(value):.1f}" x2="{width - right}" y2="{y(value):.1f}" '
            f'stroke="{GRID}" stroke-width="1"/>'
        )
        parts.append(_text(left - 8, y(value) + 4, fmt(value), fill=MUTED, text_anchor="end"))
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{x(i):.1f},{y(p.rating):.1f}" for i, p in enumerate(points)
    )
    parts.append(f'<path d="{path}" fill="none" stroke="{SERIES[0]}" stroke-width="2"/>')
    radius = 3.5 if count <= 60 else 2.5 if count <= 150 else 1.5
    for i, p in enumerate(points):
        parts.append(
            f'<circle class="point" cx="{x(i):.1f}" cy="{y(p.rating):.1f}" r="{radius}" '
            f'fill="{SERIES[0]}"><title>{escape(p.label)}</title></circle>'
        )
    parts.append(_text(left, height - 8, "oldest", fill=MUTED))
    parts.append(_text(width - right, height - 8, "latest", fill=MUTED, text_anchor="end"))
    parts.append("</svg>")
    return "\n".join(parts)
