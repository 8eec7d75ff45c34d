"""bench/README.md is written by bench.page from bench/page_header.md and bench/results/: the
committed page is what it writes, and a results file or a note it cannot read stops it,
naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import page

RUN = "2026-02-01T000000+0000.json"


def a_run(started_at: str = "2026-02-01T00:00:00+00:00", **fields: Any) -> dict[str, Any]:
    return {
        "started_at": started_at,
        "mode": "full",
        "total_seconds": 1261.1,
        "machine": {"cpus": 2, "load_average_at_start": [0.9, 1.1, 1.0]},
        "goals": [
            ["ingest >= 5,000 events/s", "5,887", True],
            ["hot: 1 worker >= 0.7x the floor", "0.52x", False],
            ["rebuild 1,000,000 players <= 20 s", "n/a", None],
        ],
        **fields,
    }


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    """A bench folder of its own: a header, one run and one note."""
    (tmp_path / "page_header.md").write_text("# ladder benchmarks\n\nHow to run.\n")
    notes = tmp_path / "results" / "notes"
    notes.mkdir(parents=True)
    (tmp_path / "results" / RUN).write_text(json.dumps(a_run()))
    (notes / "2026-01-30-a-profile.md").write_text("# A profile (2026-01-30)\n\n| 1 | 2 |\n")
    return tmp_path


def test_the_committed_page_is_what_the_generator_writes():
    """Edit bench/page_header.md or bench/results/, then run python -m bench.page."""
    assert page.render() == (page.BENCH / page.PAGE).read_text(encoding="utf-8")


def test_every_note_and_the_newest_run_are_linked_from_the_committed_page():
    text = (page.BENCH / page.PAGE).read_text(encoding="utf-8")
    for note in sorted((page.BENCH / "results" / "notes").glob("*.md")):
        assert f"(results/notes/{note.name})" in text
    newest = page.newest_run(page.BENCH / "results")
    assert newest is not None and f"(results/{newest.path.name})" in text


def test_the_page_shows_the_newest_run_s_goals_and_lists_the_notes_newest_first(bench: Path):
    notes = bench / "results" / "notes"
    (notes / "2026-01-31-later.md").write_text("# Later (2026-01-31, 10:00-11:00 UTC)\n")
    (notes / "2026-01-31-earlier.md").write_text("# Earlier (2026-01-31, 09:00-09:30 UTC)\n")
    older = a_run("2026-01-01T00:00:00+00:00", goals=[["old goal", "1", True]])
    (bench / "results" / "2026-01-01T000000+0000.json").write_text(json.dumps(older))
    (bench / "results" / "growth.json").write_text(json.dumps({"date": "2026-01-02"}))

    text = page.render(bench)

    assert text.startswith(page.WRITTEN_BY + "\n\n# ladder benchmarks\n\nHow to run.\n")
    assert f"From [`{RUN}`](results/{RUN}): started 2026-02-01T00:00:00+00:00" in text
    assert "| ingest >= 5,000 events/s | 5,887 | yes |" in text
    assert "| hot: 1 worker >= 0.7x the floor | 0.52x | **no** |" in text
    assert "| rebuild 1,000,000 players <= 20 s | n/a | n/a |" in text
    assert "old goal" not in text
    listed = [line for line in text.splitlines() if line.startswith("- 2026-")]
    assert [
        "- 2026-01-31: [Later (2026-01-31, 10:00-11:00 UTC)](results/notes/2026-01-31-later.md)",
        "- 2026-01-31: [Earlier (2026-01-31, 09:00-09:30 UTC)](results/notes/2026-01-31-earlier.md)",
        "- 2026-01-30: [A profile (2026-01-30)](results/notes/2026-01-30-a-profile.md)",
    ] == listed


def test_a_run_s_batch_sizes_growth_and_failed_sections_are_on_the_page(bench: Path):
    growth = {
        "goal_size": 1000,
        "goal_met": False,
        "sizes": {"1000": {"ratios": {"1w": 0.8, "2w": 1.0}}},
    }
    result = a_run(
        batch_sizes={
            "batch 50": {"events_per_second": 3506},
            "batch 1000": {"events_per_second": 6176},
        },
        growth=growth,
        errors={"reads": "ConnectionError: refused | twice"},
        rulesets={
            "gammon42": {"events_per_second": 3179},
            "glicko2": {"events_per_second": 2548, "ratio_to_gammon42": 0.8},
            "openskill": {"events_per_second": 2509, "ratio_to_gammon42": 0.79},
            "engine": {"gammon42": {"cpu_us_per_event": 14.86}},
        },
    )
    (bench / "results" / RUN).write_text(json.dumps(result))

    text = page.render(bench)

    assert "Batch sizes, 2 workers, events/s: 50: 3,506; 1000: 6,176." in text
    assert "1 worker 0.8x, 2 workers 1.0x: goal **not met**." in text
    assert "Section `reads` failed in this run: ConnectionError: refused \\| twice" in text
    assert (
        "Rulesets, the hot ladder with 1 worker, events/s: gammon42 3,179; glicko2 2,548 "
        "(0.8x); openskill 2,509 (0.79x). The engine alone, CPU us/event: gammon42 14.86."
    ) in text


# Each case: the results file's text, and what the error says about it.
MALFORMED = [
    ("{not json", "not JSON"),
    ('["a list"]', "not a JSON object"),
    (json.dumps({**a_run(), "started_at": "yesterday"}), "started_at is 'yesterday'"),
    (
        json.dumps({**a_run(), "started_at": "2026-02-01T00:00:00"}),
        "not a time with its UTC offset",
    ),
    (json.dumps({k: v for k, v in a_run().items() if k != "goals"}), "no list of goals"),
    (json.dumps(a_run(goals=[["goal", "1", True], ["goal", 1]])), "goals[1] is ['goal', 1]"),
    (json.dumps(a_run(goals=[["goal", "1", "yes"]])), "not [goal, measured, met]"),
    (json.dumps(a_run(machine=[2])), "machine is not an object"),
    (json.dumps(a_run(batch_sizes={"batch 50": {}})), "batch_sizes['batch 50'] has no events"),
    (json.dumps(a_run(growth={"goal_size": 10})), "growth has no ratios at its goal_size"),
    (json.dumps(a_run(rulesets={"gammon42": {}})), "rulesets has no events/s for each"),
]


@pytest.mark.parametrize(("text", "said"), MALFORMED)
def test_a_malformed_results_file_stops_the_page_naming_the_file(bench: Path, text: str, said: str):
    (bench / "results" / RUN).write_text(text)
    with pytest.raises(page.PageError, match="2026-02-01T000000\\+0000.json") as raised:
        page.render(bench)
    assert said in str(raised.value)


def test_a_file_with_goals_is_a_run_whatever_its_name(bench: Path):
    (bench / "results" / "my.json").write_text(json.dumps({"goals": [], "started_at": 3}))
    with pytest.raises(page.PageError, match="my.json: started_at is 3"):
        page.render(bench)


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("profile.md", "# A profile\n", "a note is named <YYYY-MM-DD>-<topic>.md"),
        ("2026-13-01-a-profile.md", "# A profile\n", "2026-13-01 is not a date"),
        ("2026-01-01-a-profile.md", "A profile\n", "a note's first line is its title"),
        ("2026-01-01-a-profile.md", "# \n", "a note's first line is its title"),
    ],
)
def test_a_note_without_a_dated_name_or_a_title_stops_the_page(
    bench: Path, name: str, text: str, said: str
):
    (bench / "results" / "notes" / name).write_text(text)
    with pytest.raises(page.PageError, match=name) as raised:
        page.render(bench)
    assert said in str(raised.value)


def test_the_command_says_what_is_wrong_in_one_line_and_exits_2(
    bench: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setattr(page, "BENCH", bench)
    (bench / "results" / RUN).write_text("{not json")
    assert 2 == page.main([])
    err = capsys.readouterr().err
    assert err.startswith("bench.page: ") and "not JSON" in err and err.count("\n") == 1
    assert not (bench / "README.md").exists()


def test_the_command_writes_the_page_and_check_says_when_it_is_stale(
    bench: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(page, "BENCH", bench)
    assert 1 == page.main(["--check"])
    assert 0 == page.main([])
    assert 0 == page.main(["--check"])
    (bench / "results" / "notes" / "2026-02-02-another.md").write_text("# Another\n")
    assert 1 == page.main(["--check"])
