"""The engine is pure: it imports only the standard library (SPEC 1, house style)."""

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
IO_AND_PROJECT_MODULES = (
    "redis",
    "sqlalchemy",
    "psycopg",
    "rq",
    "pydantic",
    "structlog",
    "alembic",
    "worker",
    "schemas",
)


def test_importing_engine_loads_no_io_library() -> None:
    """In a fresh interpreter `import engine` loads no redis, sqlalchemy, psycopg, rq, pydantic."""
    probe = (
        "import sys, engine\n"
        f"loaded = sorted(m for m in {IO_AND_PROJECT_MODULES!r} if m in sys.modules)\n"
        "print(','.join(loaded))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ENGINE.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "" == completed.stdout.strip()


def test_engine_source_imports_only_the_standard_library_and_itself() -> None:
    """Every import statement in engine/ names a stdlib module or engine itself."""
    allowed = set(sys.stdlib_module_names) | {"engine"}
    foreign = []
    for path in sorted(ENGINE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            foreign += [f"{path.name}: {n}" for n in names if n.split(".")[0] not in allowed]
    assert [] == foreign
