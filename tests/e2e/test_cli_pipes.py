"""A reader that stops reading (``ladder page ... --json | head``): the command ends quietly."""

from __future__ import annotations

import subprocess

from tests.e2e.private import LADDER
from tests.e2e.test_cli import event


def test_a_closed_pipe_ends_the_command_with_no_message(cli):
    """Standard output closed before the command writes: no "cannot open: Broken pipe", no
    traceback, only the exit status a command killed by SIGPIPE has in a shell (141)."""
    cli.publish_with_redis_cli([event(f"p-{i}", f"a{i}", f"b{i}") for i in range(20)])
    cli.ladder("worker", "--burst")
    reader = subprocess.Popen(
        [LADDER, "page", "gammon42", "--json"],
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None
    reader.stdout.close()  # long before the command has started and written
    _, err = reader.communicate(timeout=60)
    assert ("", 141) == (err, reader.returncode)
