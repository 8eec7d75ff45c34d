"""The generated parts of the documentation site (scripts/mkdocs_hooks.py) are rendered from
their sources (issue 34: the contracts "from the JSON Schema files", the HTTP API reference
"generated from the OpenAPI document", performance figures "read from bench results, not
copied by hand")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts import mkdocs_hooks


@pytest.mark.parametrize("path", sorted(mkdocs_hooks.SCHEMAS.glob("*.json")), ids=lambda p: p.stem)
def test_a_contract_page_names_every_field_of_its_schema_file(path: Path):
    """Every property of the file, nested ones as outer.inner, is a row of its page, and the
    file itself is shown whole."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    page = mkdocs_hooks.expand(f"<!-- ladder:schema {path.stem} -->")
    names = [name for name, _, _ in mkdocs_hooks.fields(schema)]
    assert set(schema["properties"]) <= set(names)
    for name in names:
        assert f"| `{name}` |" in page
    assert json.dumps(schema["$id"]) in page


def test_the_bench_page_shows_each_goal_of_the_latest_results(tmp_path: Path):
    """The goals are read as bench.run writes them: [goal, measured, met] with met None when
    the section did not run; the newest run (started_at) wins, as bench/README.md shows it."""
    older, newer = tmp_path / "a.json", tmp_path / "b.json"
    older.write_text(json.dumps({"started_at": "2026-01-01T00:00:00+00:00", "goals": []}))
    newer.write_text(
        json.dumps(
            {
                "started_at": "2026-02-01T00:00:00+00:00",
                "mode": "quick",
                "total_seconds": 61.5,
                "machine": {"cpus": 2},
                "goals": [
                    ["ingest >= 5,000 events/s", "7,398", True],
                    ["hot: 1 worker >= 0.7x the floor", "0.49x", False],
                    ["rebuild 1,000,000 players <= 20 s", "n/a", None],
                ],
            }
        )
    )
    page = mkdocs_hooks.bench_page(tmp_path)
    assert "| ingest >= 5,000 events/s | 7,398 | yes |" in page
    assert "| hot: 1 worker >= 0.7x the floor | 0.49x | **no** |" in page
    assert "| rebuild 1,000,000 players <= 20 s | n/a | n/a |" in page
    assert "2026-02-01T00:00:00+00:00" in page and "2 CPUs" in page
    assert "`bench/results/b.json`" in page and "The latest run" not in page


def test_without_results_the_bench_page_says_how_to_get_them(tmp_path: Path):
    assert "make bench" in mkdocs_hooks.bench_page(tmp_path)


def test_an_included_file_loses_its_first_heading_only():
    page = mkdocs_hooks.expand("<!-- ladder:include deploy/README.md -->")
    assert not page.startswith("# ") and "## Compose" in page


def test_a_marker_naming_nothing_stops_the_build():
    with pytest.raises(mkdocs_hooks.MarkerError):
        mkdocs_hooks.expand("<!-- ladder:schema no.such.v1 -->")
    with pytest.raises(mkdocs_hooks.MarkerError):
        mkdocs_hooks.expand("<!-- ladder:include ../../etc/passwd -->")


def test_a_table_cell_keeps_pipes_and_angle_brackets_readable():
    """`season:<name>` is no HTML tag, and a pattern with | stays one cell."""
    assert "season:&lt;name>" in mkdocs_hooks.cell("or season:<name>.")
    assert "<code>^(a&#124;b)$</code>" == mkdocs_hooks.cell("`^(a|b)$`")
    assert "a \\| b" == mkdocs_hooks.cell("a | b")


def test_the_growth_table_shows_each_size_and_its_ratios(tmp_path: Path):
    """The scale-out page's figures come from the recorded growth run, not copied by hand."""
    from scripts.mkdocs_hooks import growth_page

    entry = {
        "1w": {"events_per_second": 700},
        "2w": {"events_per_second": 900},
        "duplicate_check_ms": 2.5,
        "window_reads_ms": 10.0,
        "export_seconds": 3.0,
        "verify_since_seconds": 2.0,
    }
    ratios = {
        "1w": 1.0,
        "2w": 1.0,
        "duplicate_check_ms": 1.0,
        "window_reads_ms": 1.0,
        "verify_since_seconds": 1.0,
    }
    later = {**entry, "1w": {"events_per_second": 630}}
    growth = {
        "sizes": {
            "0": {**entry, "ratios": {**ratios, "export_seconds": 1.0}},
            "1000000": {**later, "ratios": {**ratios, "1w": 0.9, "export_seconds": None}},
        },
        "goal_size": 1000000,
        "goal_met": True,
    }
    path = tmp_path / "growth.json"
    path.write_text(json.dumps({"date": "2026-12-03", "growth": growth}), encoding="utf-8")
    page = growth_page(path)
    assert "| 1,000,000 | 630 (0.90x) | 900 (1.00x)" in page
    assert "| 0 | 700 (1.00x)" in page
    assert "met." in page and "2026-12-03" in page
    assert "No growth results" in growth_page(tmp_path / "none.json")


def test_a_page_holding_an_included_text_holds_the_file_as_it_is():
    """docs/security.md holds deploy/SECURITY.md's text (read on a code host, where the site
    is not built, it shows it); the build renders the file in its place, once; a stale copy
    fails here (``python -m scripts.mkdocs_hooks docs/security.md`` writes it anew)."""
    page = (mkdocs_hooks.ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert mkdocs_hooks.END in page
    assert page == mkdocs_hooks.held(page)
    built = mkdocs_hooks.expand(page)
    assert "<!-- ladder:" not in built
    assert 1 == built.count("## What is protected by what")
    stale = page.replace("## What is protected by what", "## An old heading")
    assert page == mkdocs_hooks.held(stale)
