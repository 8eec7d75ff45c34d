"""bench/README.md, written from data: ``python -m bench.page`` (``make bench-page``).

The page is three parts, none of them kept by hand in the page itself:

- the top, ``bench/page_header.md``: how to run ``make bench``, what each section measures
  and its goal, how each number is taken (edited by hand, there);
- the latest run: the goals of the newest results file ``bench.run`` wrote in
  ``bench/results/`` (by its ``started_at``), with what it recorded of the machine;
- the dated notes: each ``bench/results/notes/<YYYY-MM-DD>-<topic>.md`` (its first line is
  its ``# title``), newest first.

A results file is a run of ``bench.run`` when its name is one ``bench.run`` gives
(``<started_at>.json``) or it holds ``goals``; the other JSON files in ``bench/results/`` are
figures a note quotes, and are left out. A run or a note the page cannot be made from stops
the page with ``PageError``, naming the file and what is wrong with it, rather than giving a
page without it.

``python -m bench.page --check`` writes nothing, and exits 1 when bench/README.md differs
from what it would write.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
HEADER = "page_header.md"
PAGE = "README.md"
RESULTS = "results"
NOTES = "notes"
RUN_NAME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{6}[+-]\d{4}\.json")  # bench.run's default name
NOTE_NAME = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-[a-z0-9]+(?:-[a-z0-9]+)*\.md")
NOTE_TIME = re.compile(r"\b(\d{2}:\d{2})-\d{2}:\d{2} UTC")  # "(2026-12-05, 10:05-10:25 UTC)"
WRITTEN_BY = (
    "<!-- Written by `python -m bench.page` (make bench-page) from bench/page_header.md and "
    "bench/results/: edit those and run it, not this file. -->"
)


class PageError(ValueError):
    """A results file or a note the page cannot be made from."""


@dataclass(frozen=True)
class Run:
    path: Path
    started_at: datetime
    result: dict[str, Any]


@dataclass(frozen=True)
class Note:
    path: Path
    day: date
    title: str
    starts: str  # the time of day the title gives, "" when it gives none


def render(bench: Path | None = None) -> str:
    """The page, from the header and the ``results/`` of ``bench`` (default: this folder)."""
    bench = BENCH if bench is None else bench
    header = bench / HEADER
    if not header.is_file():
        raise PageError(f"{header}: no header to start the page with")
    parts = [WRITTEN_BY, "", header.read_text(encoding="utf-8").rstrip("\n")]
    parts += ["", *latest_run(newest_run(bench / RESULTS))]
    parts += ["", *dated_notes(notes(bench / RESULTS / NOTES))]
    return "\n".join(parts) + "\n"


# -- the runs ------------------------------------------------------------------------------


def runs(results: Path) -> list[Run]:
    """Every run of ``bench.run`` in ``results`` (not its subdirectories), checked."""
    found = []
    for path in sorted(results.glob("*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PageError(f"{_shown(path)}: not JSON ({exc})") from exc
        is_run = RUN_NAME.fullmatch(path.name) is not None
        if isinstance(result, dict) and "goals" in result:
            is_run = True
        if is_run:
            found.append(_run(path, result))
    return found


def newest_run(results: Path) -> Run | None:
    found = runs(results)
    return max(found, key=lambda run: run.started_at) if found else None


def _run(path: Path, result: Any) -> Run:
    def wrong(what: str) -> PageError:
        return PageError(f"{_shown(path)}: {what} (is it a results file of bench.run?)")

    if not isinstance(result, dict):
        raise wrong("not a JSON object")
    started = result.get("started_at")
    try:
        started_at = datetime.fromisoformat(started) if isinstance(started, str) else None
    except ValueError:
        started_at = None
    if started_at is None or started_at.tzinfo is None:
        raise wrong(f"started_at is {started!r}, not a time with its UTC offset")
    goals = result.get("goals")
    if not isinstance(goals, list):
        raise wrong("no list of goals")
    for n, goal in enumerate(goals):
        if not (
            isinstance(goal, list)
            and len(goal) == 3
            and isinstance(goal[0], str)
            and isinstance(goal[1], str)
            and (goal[2] is None or isinstance(goal[2], bool))
        ):
            raise wrong(f"goals[{n}] is {goal!r}, not [goal, measured, met]")
    for key in ("machine", "batch_sizes", "growth", "errors", "rulesets"):
        if key in result and not isinstance(result[key], dict):
            raise wrong(f"{key} is not an object")
    for name, entry in (result.get("batch_sizes") or {}).items():
        if not isinstance(entry, dict) or not _number(entry.get("events_per_second")):
            raise wrong(f"batch_sizes[{name!r}] has no events_per_second")
    growth = result.get("growth")
    if growth is not None and _growth_ratios(growth) is None:
        raise wrong("growth has no ratios at its goal_size")
    section = result.get("rulesets")
    if section is not None and _rulesets_line(section) is None:
        raise wrong("rulesets has no events/s for each ruleset")
    return Run(path, started_at, result)


def latest_run(run: Run | None, *, linked: bool = True) -> list[str]:
    """The section on the newest run, its heading first; ``linked``: its file's name links
    to it (the page's folder is ``bench/``), else it is named from the repository's root."""
    lines = ["## The latest run", ""]
    if run is None:
        return [*lines, "No results file in `bench/results/` yet: `make bench` writes one."]
    result = run.result
    machine = result.get("machine") or {}
    facts = [f"started {result['started_at']}"]
    if "mode" in result:
        facts.append(f"{result['mode']} run")
    if _number(result.get("total_seconds")):
        facts.append(f"{result['total_seconds']:,} s in all")
    if "cpus" in machine:
        facts.append(f"{machine['cpus']} CPUs")
    loads = [
        f"{machine[key][0]} at the {when}"
        for key, when in (("load_average_at_start", "start"), ("load_average_at_end", "end"))
        if isinstance(machine.get(key), list) and machine[key]
    ]
    if loads:
        facts.append("load average " + " and ".join(loads))
    if _number(result.get("worker_peak_rss_mib")) and result["worker_peak_rss_mib"] > 0:
        # 0.0 is a run whose sections started no worker process (--only startup, say)
        facts.append(f"worker peak RSS {result['worker_peak_rss_mib']} MiB")
    name = run.path.name
    source = f"[`{name}`]({RESULTS}/{name})" if linked else f"`bench/{RESULTS}/{name}`"
    lines += [f"From {source}: " + ", ".join(facts) + ".", ""]
    lines += ["| goal | measured | met |", "|---|---|---|"]
    for goal, measured, met in result["goals"]:
        verdict = "n/a" if met is None else "yes" if met else "**no**"
        lines.append(f"| {_cell(goal)} | {_cell(measured)} | {verdict} |")
    sizes = result.get("batch_sizes") or {}
    if sizes:
        shown = "; ".join(
            f"{name.removeprefix('batch ')}: {entry['events_per_second']:,}"
            for name, entry in sizes.items()
        )
        lines += ["", f"Batch sizes, 2 workers, events/s: {shown}."]
    growth = result.get("growth")
    if growth is not None:
        one, two = _growth_ratios(growth) or (0.0, 0.0)
        met = "met" if growth.get("goal_met") else "**not met**"
        lines += [
            "",
            f"Growth: ingest at {int(growth['goal_size']):,} events in the log, against the "
            f"empty control: 1 worker {one}x, 2 workers {two}x: goal {met}.",
        ]
    rulesets = result.get("rulesets")
    if rulesets is not None:
        lines += ["", _rulesets_line(rulesets) or ""]
    for section, error in (result.get("errors") or {}).items():
        lines += ["", f"Section `{section}` failed in this run: {_cell(str(error))}"]
    return lines


def _growth_ratios(growth: Any) -> tuple[float, float] | None:
    try:
        ratios = growth["sizes"][str(growth["goal_size"])]["ratios"]
        one, two = ratios["1w"], ratios["2w"]
    except (KeyError, TypeError):
        return None
    return (one, two) if _number(one) and _number(two) else None


# The rulesets of the ``rulesets`` section (``bench.rulesets.RULESETS``: the page imports
# nothing of the sections, which import the workers' code), the baseline first.
RULESETS = ("gammon42", "glicko2", "openskill")


def _rulesets_line(section: Any) -> str | None:
    """The ``rulesets`` section in a sentence: each ruleset's hot-ladder events/s (with its
    ratio to the first's), then the engine alone's CPU per event where the run has it."""
    try:
        rates = [(name, section[name]["events_per_second"]) for name in RULESETS]
        ratios = [section[name].get("ratio_to_gammon42") for name in RULESETS[1:]]
    except (KeyError, TypeError, AttributeError):
        return None
    if not all(_number(rate) for _, rate in rates):
        return None
    shown = [f"{rates[0][0]} {rates[0][1]:,}"]
    for (name, rate), ratio in zip(rates[1:], ratios, strict=True):
        shown.append(f"{name} {rate:,}" + (f" ({ratio}x)" if _number(ratio) else ""))
    text = "Rulesets, the hot ladder with 1 worker, events/s: " + "; ".join(shown) + "."
    engine = section.get("engine")
    if isinstance(engine, dict):
        cpu = [
            f"{name} {engine[name]['cpu_us_per_event']}"
            for name in RULESETS
            if isinstance(engine.get(name), dict) and _number(engine[name].get("cpu_us_per_event"))
        ]
        if cpu:
            text += " The engine alone, CPU us/event: " + ", ".join(cpu) + "."
    return text


# -- the notes -----------------------------------------------------------------------------


def notes(folder: Path) -> list[Note]:
    """Every note, newest first: by day, then by the time of day its title gives."""
    found = []
    for path in sorted(folder.glob("*")):
        shown = _shown(path)
        named = NOTE_NAME.fullmatch(path.name)
        if named is None:
            raise PageError(f"{shown}: a note is named <YYYY-MM-DD>-<topic>.md")
        try:
            day = date.fromisoformat(named["date"])
        except ValueError as exc:
            raise PageError(f"{shown}: {named['date']} is not a date") from exc
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        if not first.startswith("# ") or not first[2:].strip():
            raise PageError(f"{shown}: a note's first line is its title, '# ...'")
        title = first[2:].strip()
        starts = NOTE_TIME.search(title)
        found.append(Note(path, day, title, starts[1] if starts else ""))
    return sorted(found, key=lambda note: (note.day, note.starts), reverse=True)


def dated_notes(found: list[Note]) -> list[str]:
    lines = [
        "## Dated notes",
        "",
        "What was measured beyond a run's goals (profiles, builds alternated before and after a",
        "change, what was tried and not kept), one file a day and topic in",
        "`bench/results/notes/`, its first line its title; newest first:",
        "",
    ]
    for note in found:
        lines.append(f"- {note.day}: [{note.title}](results/notes/{note.path.name})")
    return lines


# -- cells and paths -----------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _shown(path: Path) -> str:
    root = BENCH.parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def write() -> Path:
    """Write the page; returns its path."""
    page = BENCH / PAGE
    page.write_text(render(), encoding="utf-8")
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.page", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the page is stale"
    )
    args = parser.parse_args(argv)
    try:
        text = render()
    except PageError as exc:
        print(f"bench.page: {exc}", file=sys.stderr)
        return 2
    page = BENCH / PAGE
    if args.check:
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            print(f"bench.page: {_shown(page)} is stale: run python -m bench.page", file=sys.stderr)
            return 1
        return 0
    page.write_text(text, encoding="utf-8")
    print(f"bench.page: wrote {_shown(page)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
