"""The network key when signatures are required: never the public development key."""

from __future__ import annotations

import subprocess

from tests.e2e.private import LADDER


def test_required_signatures_without_a_network_key_are_refused_at_start_up(cli):
    """The development key is public: with LADDER_REQUIRE_SIGNATURE and no LADDER_NETWORK_KEY
    anyone could write a ``ladder-verified:`` attestation, so ``ladder worker`` refuses to
    start, with one line naming the key, and exit status 2; the embedded development setup
    (nothing required) still starts with the development key."""
    env = {**cli.env, "LADDER_PUBLISHER_SECRETS": "server-a:s1", "LADDER_REQUIRE_SIGNATURE": "1"}
    refused = subprocess.run(
        [LADDER, "worker", "--burst"], env=env, capture_output=True, text=True, timeout=60
    )
    (line,) = refused.stderr.strip().splitlines()
    assert (2, True) == (refused.returncode, line.startswith("ladder: LADDER_NETWORK_KEY is"))
    assert "Traceback" not in refused.stderr
    keyed = subprocess.run(
        [LADDER, "worker", "--burst"],
        env={**env, "LADDER_NETWORK_KEY": "a-key-of-our-own"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 0 == keyed.returncode, keyed.stderr
    development = subprocess.run(
        [LADDER, "worker", "--burst"], env=cli.env, capture_output=True, text=True, timeout=60
    )
    assert 0 == development.returncode, development.stderr
