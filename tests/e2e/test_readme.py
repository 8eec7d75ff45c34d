"""README's commands work as written: its "One event and its receipt" block, run by bash in
the checkout as a reader would paste it (the URLs of the test servers standing in for
``make demo``'s: ``ladder dev env`` prints the URLs that are set, as they are)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def block(after: str) -> str:
    """The first ```sh block after the heading ``after`` in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```sh\n(.*?)```", text[text.index(after) :], re.S)
    assert found is not None
    return found.group(1)


def test_the_one_event_block_publishes_scores_and_prints_the_receipt(cli):
    """Every line runs (``set -e``) and the BLPOP and GET print the receipt of g-42, rated."""
    commands = block("## One event and its receipt")
    assert "\nredis-cli RPUSH" not in commands  # every redis-cli names the server it talks to
    ran = subprocess.run(
        ["bash", "-ec", commands], cwd=ROOT, env=cli.env, capture_output=True, text=True
    )
    assert 0 == ran.returncode, ran.stderr
    receipts = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    assert 2 == len(receipts), ran.stdout  # BLPOP (after its key's name) and GET
    assert {("g-42", "rated")} == {(r["event_id"], r["outcome"]) for r in receipts}
