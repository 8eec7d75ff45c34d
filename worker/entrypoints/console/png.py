"""PNG from SVG (or a page) by headless Chromium: the browser draws exactly what it shows.

``chromium()`` finds the browser (``LADDER_CHROMIUM``, else ``chromium`` / ``chromium-browser``
/ ``google-chrome`` on the PATH); ``screenshot(url, path, width, height)`` renders a URL and
``svg_to_png(svg, path)`` a chart. A missing browser is a ``BrowserMissing`` with a sentence
saying what to install; the CLI prints it as one line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome")
SECONDS = 60


class BrowserMissing(RuntimeError):
    """No headless browser to render with."""


def chromium(given: str | None = None) -> str:
    """``given`` (LADDER_CHROMIUM, ``Settings.chromium``), else the first on the PATH."""
    if given:
        return given
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissing(
        "a PNG needs headless Chromium (Debian: apt-get install chromium, or set "
        "LADDER_CHROMIUM); write FILE.svg instead to skip it"
    )


def base_flags(profile: str) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",  # as root (containers, CI) Chromium refuses to start sandboxed
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        "--no-default-browser-check",
        f"--user-data-dir={profile}",
    ]


def screenshot(url: str, path: Path, width: int, height: int, browser: str | None = None) -> None:
    """Render ``url`` at ``width`` x ``height`` CSS pixels into the PNG file ``path``."""
    with tempfile.TemporaryDirectory(prefix="ladder-chromium-") as profile:
        command = [
            chromium(browser),
            *base_flags(profile),
            f"--window-size={width},{height}",
            f"--screenshot={path}",
            url,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS)
    if done.returncode != 0 or not path.exists():
        raise RuntimeError(f"chromium could not render {url}: {done.stderr.strip()[-300:]}")


def dump_dom(url: str, width: int = 1024, height: int = 768, browser: str | None = None) -> str:
    """The DOM of ``url`` as the browser built it, serialised."""
    with tempfile.TemporaryDirectory(prefix="ladder-chromium-") as profile:
        command = [
            chromium(browser),
            *base_flags(profile),
            f"--window-size={width},{height}",
            "--dump-dom",
            url,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS)
    if done.returncode != 0:
        raise RuntimeError(f"chromium could not load {url}: {done.stderr.strip()[-300:]}")
    return done.stdout


_VIEWBOX = re.compile(r'viewBox="0 0 (\d+) (\d+)"')


def svg_to_png(svg: str, path: Path, browser: str | None = None) -> None:
    """Write the chart ``svg`` as a PNG of its own size to ``path``."""
    found = _VIEWBOX.search(svg)
    width, height = (int(found.group(1)), int(found.group(2))) if found else (640, 480)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><style>html,body{margin:0;"
        "background:#fff}svg{display:block;width:100vw;height:auto}</style></head><body>"
        f"{svg}</body></html>"
    )
    with tempfile.TemporaryDirectory(prefix="ladder-plot-") as tmp:
        source = Path(tmp) / "chart.html"
        source.write_text(page, encoding="utf-8")
        screenshot(source.resolve().as_uri(), path.resolve(), width, height, browser)
