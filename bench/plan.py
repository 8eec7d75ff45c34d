"""What ``python -m bench.run`` runs: its sections, and the sizes of a full and a quick run."""

from __future__ import annotations

from dataclasses import dataclass

from bench import env

LADDERS = ("gammon42", "fibs", "prostriker")
SECTIONS = (
    "ingest,batch_sizes,latency,reads,rebuild,replay,floor,startup,boards,receipts,void,history,"
    "flood,growth,rulesets"
)
RESULTS_DIR = env.ROOT / "bench" / "results"  # one dated file per run


@dataclass(frozen=True)
class Plan:
    events: int
    noop_jobs: int
    batch_sizes: tuple[int, ...]
    sweep_events: int
    latency_rate: int
    latency_seconds: float
    latency_workers: int
    read_players: int
    read_seconds: float
    rebuild_players: int
    history_events: int  # section history: one ladder's games, and its players
    history_players: int
    hot_games: int  # section floor's hot ladder: games among HOT_PLAYERS players (scaled down)
    rounds: int  # ingest, latency and rebuild are run this many times; the median is shown
    flood_invalid: int = 100_000  # section flood: invalid events, then valid ones behind them
    flood_valid: int = 1_000
    ruleset_games: int = 20_000  # section rulesets: the hot ladder's games under each ruleset


FULL = Plan(
    events=40_000,
    noop_jobs=2_000,
    batch_sizes=(50, 200, 500, 1000),
    sweep_events=10_000,
    latency_rate=1_000,
    latency_seconds=30.0,
    latency_workers=2,
    read_players=100_000,
    read_seconds=1.5,
    rebuild_players=1_000_000,
    history_events=200_000,
    history_players=4_000,
    hot_games=60_000,
    rounds=3,
)
QUICK = Plan(
    events=3_000,
    noop_jobs=300,
    batch_sizes=(),
    sweep_events=0,
    latency_rate=200,
    latency_seconds=3.0,
    latency_workers=1,
    read_players=5_000,
    read_seconds=0.3,
    rebuild_players=20_000,
    history_events=3_000,
    history_players=300,
    hot_games=3_000,
    rounds=1,
    flood_invalid=3_000,
    flood_valid=100,
    ruleset_games=3_000,
)
