"""The ``ladder`` console script: the command line of ``worker.entrypoints.cli.main``, with the
cyclic garbage collector paused while the program starts up (``worker.gcpause``).
"""

from __future__ import annotations

import sys

from worker import gcpause


def main() -> int:
    gcpause.pause_start_up()
    # imported once the collector is paused: importing it is most of what start-up allocates
    from worker.entrypoints.cli.main import main as run

    return run()


if __name__ == "__main__":
    sys.exit(main())
