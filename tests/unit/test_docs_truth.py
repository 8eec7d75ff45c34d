"""The docs say what the code does: no store ladder does not have, no default the code does not
have, no make variable the Makefile does not read."""

from __future__ import annotations

import re
from pathlib import Path

from worker.settings import WHOLE

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CONFIG_PAGE = ROOT / "docs" / "configuration.md"


def rows(page: Path) -> dict[str, list[str]]:
    """A page's table rows by the variables named in their first cell: the cells."""
    found: dict[str, list[str]] = {}
    for line in page.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0]):
            found[name] = cells
    return found


def test_no_page_names_a_store_ladder_does_not_have():
    """SPEC 6 "One store": PostgreSQL alone (embedded for development); no SQLite store."""
    named = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in PAGES
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bsqlite\b", line, re.IGNORECASE)
    ]
    assert [] == named


def test_the_configuration_page_gives_every_whole_setting_the_code_s_default():
    """Each whole-number variable's row shows the default ``worker.settings.WHOLE`` has."""
    table = rows(CONFIG_PAGE)
    wrong = [
        (whole.variable, table[whole.variable][-1])
        for whole in WHOLE.values()
        if whole.variable in table and f"`{whole.default}`" not in table[whole.variable][-1]
    ]
    assert [] == wrong


def test_the_test_servers_are_embedded_ones_when_unset_on_every_page():
    """``tests/conftest.py``: with LADDER_TEST_DATABASE_URL / LADDER_TEST_REDIS_URL unset, the
    tests start embedded servers under ``.ladder-test/``; no page gives another default."""
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert '".ladder-test"' in conftest
    # the column that says what holds when the variable is unset: "default", "when unset"
    for page, column in ((CONFIG_PAGE, -1), (ROOT / "docs" / "getting-started.md", 1)):
        for name in ("LADDER_TEST_DATABASE_URL", "LADDER_TEST_REDIS_URL"):
            said = rows(page)[name][column]
            assert "embedded" in said and "127.0.0.1" not in said, (page.name, said)


def test_every_make_variable_a_page_names_is_read_by_the_makefile():
    """A page that says ``make test TEST_X=...`` or names a make variable names one the
    Makefile has."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    named = {
        name
        for page in PAGES
        for name in re.findall(
            r"`((?:DEMO|TEST)_[A-Z_]+)`|make \w+ ((?:DEMO|TEST)_[A-Z_]+)=",
            page.read_text(encoding="utf-8"),
        )
    }
    missing = sorted(
        n for pair in named for n in pair if n and not re.search(rf"(?<![A-Z_]){n}\b", makefile)
    )
    assert [] == missing


def test_the_receipts_section_says_a_blpop_client_needs_a_longer_read_timeout():
    """redis-py reads with a 5 s timeout unless given one: a ``BLPOP`` of 5 s or more fails
    with ``TimeoutError``; the page that shows the wait shows the one-line fix."""
    import inspect

    from redis.connection import AbstractConnection

    # the fact the page warns of: a connection made without one reads with 5 s
    assert 5 == inspect.signature(AbstractConnection).parameters["socket_timeout"].default
    page = (ROOT / "docs" / "integration.md").read_text(encoding="utf-8")
    receipts = page[page.index("BLPOP ladder:receipt-wait") :]
    assert "socket_timeout=wait_seconds + 5" in receipts[:1500]
