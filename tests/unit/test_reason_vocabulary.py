"""Every reason the code writes belongs to the one vocabulary, ``engine.reasons.Reason``."""

from __future__ import annotations

import ast
from pathlib import Path

from engine.reasons import Reason

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "schemas", "worker")


def _reasons_written() -> dict[str, list[str]]:
    """Literal reasons passed anywhere: ``InvalidEvent("x", ...)``, ``reason="x"``, ``{"reason": "x"}``."""
    found: dict[str, list[str]] = {}

    def add(value: ast.expr, where: str) -> None:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            found.setdefault(value.value, []).append(where)

    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Call):
                    name = node.func.id if isinstance(node.func, ast.Name) else None
                    if name == "InvalidEvent" and node.args:
                        add(node.args[0], where)
                    for keyword in node.keywords:
                        if keyword.arg == "reason":
                            add(keyword.value, where)
                elif isinstance(node, ast.Dict):
                    for key, value in zip(node.keys, node.values, strict=True):
                        if isinstance(key, ast.Constant) and key.value == "reason":
                            add(value, where)
    return found


def test_every_reason_written_anywhere_is_in_the_vocabulary() -> None:
    """Audit rows, dead letters, logs and docs draw from one list of reasons."""
    written = _reasons_written()
    assert {"invalid_json", "retries_exhausted"} <= set(written), "the scan found no reasons"
    vocabulary = {str(r) for r in Reason}
    unknown = {reason: where for reason, where in written.items() if reason not in vocabulary}
    assert not unknown, f"reasons outside engine.reasons.Reason: {unknown}"


def test_dlq_list_accepts_every_reason_a_dead_letter_is_given() -> None:
    """SPEC 2.4 / 5: conflicts and processing errors are dead letters an operator can filter."""
    from engine import Reason
    from worker.entrypoints.cli.dlq import reason

    for name in ("event_id_conflict", "processing_error", "retries_exhausted", "invalid_cube"):
        assert name == reason(name)
    assert str(Reason.EVENT_ID_CONFLICT) == reason("event_id_conflict")
