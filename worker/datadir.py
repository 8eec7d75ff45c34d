"""Which data directory's embedded servers a command uses (``worker.embedded``).

``ladder dev env`` (which ``make demo`` runs first) records its data directory for the user
(``~/.local/state/ladder/data-dir``): a command run from another folder, with
``LADDER_DATA_DIR`` unset and no server running under its own ``./.ladder/``, uses the servers
running there (``home``) instead of starting a second, empty pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from worker.embedded import status


@dataclass(frozen=True)
class Home:
    """Where a command's embedded servers are, and the other data directory whose servers run
    (the one ``ladder dev env`` recorded), when it is not that one."""

    path: Path
    found: bool  # the servers of the recorded directory, found from another folder
    others: Path | None


def recorded_file() -> Path:
    """The user's record of the data directory ``ladder dev env`` used last."""
    return Path.home() / ".local" / "state" / "ladder" / "data-dir"


def record(where: Path) -> None:
    """Record ``where`` as the data directory to find from other folders (a home that cannot
    be written keeps no record: commands then use their own folder's)."""
    try:
        path = recorded_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(where.resolve()))
    except OSError:
        pass


def home(where: Path, *, chosen: bool) -> Home:
    """The data directory to use: ``where`` when it was chosen (``LADDER_DATA_DIR``) or a
    server runs there; else the recorded one, when its servers run."""
    try:
        text = recorded_file().read_text().strip()
    except OSError:
        text = ""
    other = Path(text) if text else None
    if other is not None and (other == where.resolve() or not _running(other)):
        other = None
    if other is not None and not chosen and not _running(where):
        return Home(other, found=True, others=None)
    return Home(where, found=False, others=other)


def _running(where: Path) -> bool:
    return any(url for _, url in status(where))
