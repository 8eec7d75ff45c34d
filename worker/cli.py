"""The ``ladder`` command line. Settings are read once here and passed down."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from worker.config import ConfigError
from worker.settings import Settings, SettingsError

# Modules that add their own subcommands: ``register(subparsers)`` sets ``handler(rt, args)``.
COMMAND_MODULES: tuple[str, ...] = (
    "worker.cli_deploy",
    "worker.cli_read",
    "worker.cli_ops",
    "worker.cli_verify",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from worker import logs

    logs.configure(args.log_level)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"ladder: {exc}", file=sys.stderr)
        return 2
    from worker.runtime import Runtime

    rt = Runtime(settings)
    try:
        result: int = args.handler(rt, args)
        return result
    except ConfigError as exc:
        print(f"ladder: configuration refused: {exc}", file=sys.stderr)
        return 2
    except SettingsError as exc:
        print(f"ladder: {exc}", file=sys.stderr)
        return 2
    finally:
        rt.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ladder", description=__doc__)
    parser.add_argument("--log-level", default="INFO")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("migrate", help="create or upgrade the PostgreSQL schema")
    p.set_defaults(handler=cmd_migrate)

    p = sub.add_parser("worker", help="run a worker")
    p.add_argument("--burst", action="store_true", help="drain inbox and queue, then exit")
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser("publish", help="publish JSON-lines events to the inbox")
    p.add_argument("file", help="a file of one JSON event per line, or - for standard input")
    p.add_argument(
        "--publisher",
        help="sign each event as this publisher, with the secret in LADDER_PUBLISH_SECRET",
    )
    p.set_defaults(handler=cmd_publish)

    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)

    config = sub.add_parser("config", help="the ladder configuration").add_subparsers(
        dest="config_command", required=True
    )
    p = config.add_parser("show", help="print the effective configuration")
    p.add_argument("--path", action="store_true", help="print the file in use as the last line")
    p.set_defaults(handler=cmd_config_show)
    return parser


def cmd_migrate(rt: Any, args: argparse.Namespace) -> int:
    from worker.migrate import upgrade

    upgrade(rt.engine)
    print("ladder: schema is up to date")
    return 0


def cmd_worker(rt: Any, args: argparse.Namespace) -> int:
    from worker import runner

    rt.config  # refuse a broken configuration before touching the queue  # noqa: B018
    if rt.settings.network_key_is_default:
        print(
            "ladder: LADDER_NETWORK_KEY is not set; raw IPs are hashed with a development key",
            file=sys.stderr,
        )
    if args.burst:
        runner.freeze_startup_objects()
        runner.run_burst(rt)
    else:
        runner.run_forever(rt)
    return 0


def cmd_publish(rt: Any, args: argparse.Namespace) -> int:
    from worker import keys

    signer = _signer(args.publisher) if args.publisher else None
    stream: TextIO = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
    count = 0
    with stream, rt.redis.pipeline(transaction=False) as pipe:
        for line in stream:
            line = line.strip()
            if not line:
                continue
            if signer is not None:
                line = signer(line)
            pipe.rpush(keys.INBOX, line)
            count += 1
            if count % 1000 == 0:
                pipe.execute()
        pipe.execute()
    print(f"ladder: published {count} events", file=sys.stderr)
    return 0


def _signer(publisher: str) -> Any:
    from schemas.signing import sign

    secret = os.environ.get("LADDER_PUBLISH_SECRET", "")
    if not secret:
        raise SettingsError("--publisher needs the secret in LADDER_PUBLISH_SECRET")

    def signed(line: str) -> str:
        return json.dumps(sign(json.loads(line), publisher, secret.encode()), ensure_ascii=False)

    return signed


def cmd_config_show(rt: Any, args: argparse.Namespace) -> int:
    config = rt.config
    shown = {
        name: {
            "ruleset": lc.ruleset,
            "boosted_board": lc.boosted_board,
            "public_board": lc.public_board,
            "linking": lc.linking,
            "fairplay": dataclasses.asdict(lc.fairplay),
            "versions": [
                {"effective_from": v.effective_from.isoformat(), **dataclasses.asdict(v.rules)}
                for v in lc.versions
            ],
        }
        for name, lc in config.ladders.items()
    }
    print(json.dumps(shown, indent=2))
    if args.path:
        print(Path(config.path).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
