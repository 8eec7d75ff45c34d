"""``ladder calibrate`` and ``ladder backtest`` against a ladder published with redis-cli.

The ladder is generated from known probabilities: each player has a hidden strength and each
game's winner is drawn from a chosen curve of the strength gap, so the stored forecasts and
results are those of a real ladder finding its players' level. Every number the commands
print is then computed again here, independently, from the stored rows.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from sqlalchemy import create_engine, func, select

from tests.events import game
from worker.settings import normalise_database_url
from worker.store.tables import events, players, rating_changes

START = datetime(2026, 10, 2, tzinfo=UTC)  # in gammon42 1.3.1 (divisor 1200)


def known_curve_ladder(seed: int = 7, count: int = 500, people: int = 40) -> list[dict]:
    """Games whose outcomes follow P(a beats b) = 1 / (1 + 10^((sb - sa) / 700)) of hidden
    strengths, spread over 20 days so nobody reaches 50 ranked games in 7 days (K stays 32)."""
    rng = random.Random(seed)
    strength = {f"p{i:02d}": rng.gauss(0, 220) for i in range(people)}
    names = sorted(strength)
    made = []
    for i in range(count):
        a, b = rng.sample(names, 2)
        p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 700))
        winner, loser = (a, b) if rng.random() < p else (b, a)
        cube = rng.choice([1, 1, 1, 2, 4])
        at = START + timedelta(minutes=57 * i)
        made.append(game(winner, loser, ended_at=at, event_id=f"k-{i}", cube=cube))
    return made


@pytest.fixture
def published(cli, database_url):
    cli.publish_with_redis_cli(known_curve_ladder())
    cli.ladder("worker", "--burst")
    engine = create_engine(normalise_database_url(database_url))
    yield engine
    engine.dispose()


def stored_games(engine, since=None, until=None):
    """(version, winner expected, loser expected, winner, loser) of every stored rated game."""
    query = (
        select(
            events.c.event_id,
            events.c.ruleset_version,
            events.c.winner_id,
            events.c.ended_at,
            rating_changes.c.player_id,
            rating_changes.c.expected,
        )
        .join(rating_changes, rating_changes.c.event_id == events.c.event_id)
        .where(events.c.ladder == "gammon42", events.c.outcome == "rated")
        .where(rating_changes.c.kind == "game")
    )
    by_event: dict[str, dict] = {}
    with engine.connect() as conn:
        for eid, version, winner, ended, pid, expected in conn.execute(query):
            if (since and ended < since) or (until and ended >= until):
                continue
            one = by_event.setdefault(eid, {"version": version})
            one["winner" if pid == winner else "loser"] = (pid, expected)
    return [
        (g["version"], g["winner"][1], g["loser"][1], g["winner"][0], g["loser"][0])
        for g in by_event.values()
    ]


def independent_metrics(games):
    """The definitions, computed here with Decimal bucket bounds."""
    buckets: dict[int, list[tuple[float, int]]] = {}
    forecasts = []
    for _, we, le, _, _ in games:
        p, y = (le, 0) if le > we else (we, 1)
        forecasts.append((p, y))
        index = min(int((Decimal(p) - Decimal("0.5")) // Decimal("0.05")), 9)
        buckets.setdefault(index, []).append((p, y))
    brier = sum((p - y) ** 2 for p, y in forecasts) / len(forecasts)
    loss = -sum(y * math.log(p) + (1 - y) * math.log(1 - p) for p, y in forecasts) / len(forecasts)
    table = {
        i: (len(b), sum(p for p, _ in b) / len(b), sum(y for _, y in b) / len(b))
        for i, b in buckets.items()
    }
    return len(forecasts), brier, loss, table


def test_calibrate_reports_what_the_stored_rows_say(cli, published):
    """'on a ladder generated from known probabilities calibrate
    reports buckets and Brier/log loss equal to those computed independently from the stored
    rows', and the spread of active players' current ratings (p10, p50, p90, sd, p75 - p25)."""
    found = cli.ladder_json("calibrate", "gammon42")
    games = stored_games(published)
    count, brier, loss, table = independent_metrics(games)
    assert count > 450  # a few games fall to the pair limit, the rest are rated
    assert list(found["versions"]) == ["1.3.1"]
    metrics = found["versions"]["1.3.1"]
    assert metrics["games"] == count
    assert metrics["brier"] == pytest.approx(brier, rel=1e-12)
    assert metrics["log_loss"] == pytest.approx(loss, rel=1e-12)
    lows = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    assert [b["low"] for b in metrics["buckets"]] == lows
    assert metrics["buckets"][-1]["high"] == 1.0
    for i, bucket in enumerate(metrics["buckets"]):
        if i not in table:
            assert bucket["games"] == 0 and bucket["observed"] is None
            continue
        n, mean_p, observed = table[i]
        assert bucket["games"] == n
        assert bucket["mean_expected"] == pytest.approx(mean_p, rel=1e-12)
        assert bucket["observed"] == pytest.approx(observed, rel=1e-12)
    assert sum(1 for b in metrics["buckets"] if b["games"]) >= 3  # the curve spreads them out

    with published.connect() as conn:
        rating = {pid: r for pid, r in conn.execute(select(players.c.player_id, players.c.rating))}
    active = sorted({p for g in games for p in g[3:]})
    values = [rating[p] for p in active]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    quartiles = statistics.quantiles(values, n=4, method="inclusive")
    spread = metrics["spread"]
    assert spread["players"] == len(active)
    assert (spread["p10"], spread["p50"], spread["p90"]) == pytest.approx(
        (deciles[0], deciles[4], deciles[8])
    )
    assert spread["stdev"] == pytest.approx(statistics.pstdev(values))
    assert spread["central_half"] == pytest.approx(quartiles[2] - quartiles[0])


def test_calibrate_window_and_version_filters(cli, published):
    """'[--since TIME] [--until TIME] [--version V]', on ended_at."""
    since, until = START + timedelta(days=5), START + timedelta(days=12)
    found = cli.ladder_json(
        "calibrate", "gammon42", "--since", since.isoformat(), "--until", "2026-10-14"
    )
    count, brier, _, _ = independent_metrics(stored_games(published, since, until))
    assert found["versions"]["1.3.1"]["games"] == count
    assert found["versions"]["1.3.1"]["brier"] == pytest.approx(brier, rel=1e-12)
    empty = cli.ladder_json("calibrate", "gammon42", "--version", "1.2.0")
    assert empty["versions"] == {}
    refused = cli.ladder("calibrate", "gammon42", "--version", "9.9", check=False)
    assert refused.returncode == 2
    assert "no version '9.9'" in refused.stderr and "1.3.1" in refused.stderr
    assert "Traceback" not in refused.stderr
    backwards = cli.ladder(
        "calibrate", "gammon42", "--since", "2026-10-10", "--until", "2026-10-09", check=False
    )
    assert backwards.returncode == 2 and "must be before --until" in backwards.stderr
    bad = cli.ladder("calibrate", "gammon42", "--since", "yesterday", check=False)
    assert bad.returncode == 2 and "'yesterday' is not a time" in bad.stderr
    text = cli.ladder("calibrate", "gammon42").stdout
    assert "version 1.3.1:" in text and "Brier" in text and "central half" in text


def half_away(x: float) -> int:
    return int(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def by_hand(engine, divisor: float) -> dict[str, float]:
    """Gammon42 from seed 002, written out again: expected = 1 / (1 + 10^((L - W) / divisor)),
    change = K x (result - expected) x (1 + log2(cube) / 6), K 32, whole numbers half away
    from zero; the games the store rated, in scoring order."""
    query = (
        select(events.c.winner_id, events.c.loser_id, events.c.cube)
        .where(events.c.ladder == "gammon42", events.c.outcome == "rated")
        .order_by(events.c.seq)
    )
    ratings: dict[str, float] = {}
    with engine.connect() as conn:
        for winner, loser, cube in conn.execute(query):
            w, lo = ratings.get(winner, 1500.0), ratings.get(loser, 1500.0)
            expected = 1 / (1 + 10 ** ((lo - w) / divisor))
            coefficient = 1 + math.log2(cube) / 6
            ratings[winner] = w + half_away(32 * (1 - expected) * coefficient)
            ratings[loser] = lo + half_away(32 * (0 - (1 - expected)) * coefficient)
    return ratings


def snapshot(cli, engine):
    """Everything a backtest must leave alone: row counts and contents, every Redis key."""
    with engine.connect() as conn:
        rows = {
            t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (events, players, rating_changes)
        }
        table = sorted(conn.execute(select(players.c.player_id, players.c.rating)).all())
    keys = sorted(cli.redis_cli("--scan").split())
    board = cli.redis_cli("ZRANGE", "ladder:{gammon42}:rating", "0", "-1", "WITHSCORES")
    return rows, table, keys, board


def test_backtest_with_stored_parameters_reproduces_the_stored_ladder(cli, published):
    """'With --set values equal to the stored version it reproduces the
    stored ratings exactly' and 'It writes nothing: no PostgreSQL row, no Redis key'."""
    before = snapshot(cli, published)
    found = cli.ladder_json("backtest", "gammon42", "--set", "divisor=1200", "--set", "k=32")
    assert snapshot(cli, published) == before
    assert found["players"]
    with published.connect() as conn:
        stored = {pid: r for pid, r in conn.execute(select(players.c.player_id, players.c.rating))}
    for pid, both in found["players"].items():
        assert both == {"stored": stored[pid], "candidate": stored[pid]}
    assert found["candidate"] == found["stored"]
    assert found["stored"]["games"] == len(stored_games(published))


def test_backtest_divisor_400_equals_an_independent_computation(cli, published):
    """'with gammon42's divisor set to 400 reproduces an independent
    computation of the ÷400 ratings'; the stored side stays the ÷1200 history."""
    assert max(by_hand(published, 1200).values()) > 0
    with published.connect() as conn:
        stored = {pid: r for pid, r in conn.execute(select(players.c.player_id, players.c.rating))}
    assert by_hand(published, 1200) == {p: stored[p] for p in by_hand(published, 1200)}
    found = cli.ladder_json("backtest", "gammon42", "--set", "divisor=400")
    expected = by_hand(published, 400)
    assert {p: v["candidate"] for p, v in found["players"].items()} == expected
    assert {p: v["stored"] for p, v in found["players"].items()} == {p: stored[p] for p in expected}
    # Seed 002: under a smaller divisor "the ladder stayed squeezed": the same results need
    # a third of the rating gap at ÷400 that they need at ÷1200.
    assert found["candidate"]["spread"]["stdev"] < found["stored"]["spread"]["stdev"]
    assert found["candidate"]["spread"]["central_half"] < found["stored"]["spread"]["central_half"]
    text = cli.ladder("backtest", "gammon42", "--set", "divisor=400").stdout
    assert "nothing written" in text and "candidate:" in text and "largest moves" in text


def test_backtest_from_a_time_keeps_earlier_games_as_stored(cli, published):
    """'a candidate ruleset version in force from --from'; earlier games are
    scored as stored, and the metrics compare the games from --from on."""
    start = START + timedelta(days=10)
    found = cli.ladder_json(
        "backtest", "gammon42", "--set", "divisor=400", "--from", start.isoformat()
    )
    assert found["stored"]["games"] == len(stored_games(published, since=start))
    everything = cli.ladder_json("backtest", "gammon42", "--set", "divisor=400")
    assert found["players"] != everything["players"]


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("colour=blue", "not a parameter of the gammon42 ruleset (valid: divisor, heavy_games"),
        ("divisor=abc", "divisor='abc': must be float"),
        ("divisor=-5", "divisor: must be > 0"),
        ("divisor", "write KEY=VALUE"),
        ("version=2", "not a parameter"),
    ],
)
def test_backtest_refuses_what_the_ruleset_cannot_take(cli, given, says):
    """'--set ... refuses unknown ones with the list of valid names'."""
    result = cli.ladder("backtest", "gammon42", "--set", given, check=False)
    assert result.returncode == 2
    assert says in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_calibrate_and_backtest_plot_svg(cli, published, tmp_path):
    """'--plot draws observed against expected with the diagonal and the
    bucket counts' (one point per non-empty bucket and series)."""
    found = cli.ladder_json("calibrate", "gammon42")
    path = tmp_path / "calibration.svg"
    cli.ladder("calibrate", "gammon42", "--plot", str(path))
    svg = path.read_text()
    filled = sum(1 for b in found["versions"]["1.3.1"]["buckets"] if b["games"])
    assert svg.startswith("<svg") and 'class="diagonal"' in svg
    assert svg.count('class="point"') == filled
    assert svg.count('class="count"') == 10
    both = tmp_path / "backtest.svg"
    cli.ladder("backtest", "gammon42", "--set", "divisor=400", "--plot", str(both))
    assert both.read_text().count('class="count"') == 20
    png = tmp_path / "calibration.png"
    cli.ladder("calibrate", "gammon42", "--plot", str(png))  # rendered by headless Chromium
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = cli.ladder("calibrate", "gammon42", "--plot", "out.pdf", check=False)
    assert refused.returncode == 2


def test_fibs_is_also_reported_by_match_length(cli):
    """'all of it per ruleset version in the window, and for fibs also by
    match length'."""
    made = []
    for i in range(30):
        a, b = f"f{i % 6}", f"f{(i * 5 + 1) % 6}"
        if a == b:
            continue
        at = START + timedelta(hours=9 * i)
        made.append(game(a, b, ladder="fibs", ended_at=at, match_length=1 + 2 * (i % 3)))
    cli.publish_with_redis_cli(made)
    cli.ladder("worker", "--burst")
    found = cli.ladder_json("calibrate", "fibs")
    lengths = found["versions"]["1"]["match_lengths"]
    assert set(lengths) <= {"1", "3", "5"} and len(lengths) >= 2
    assert sum(m["games"] for m in lengths.values()) == found["versions"]["1"]["games"]
    moved = cli.ladder_json("backtest", "fibs", "--set", "newcomer_max=1")
    assert any(v["stored"] != v["candidate"] for v in moved["players"].values())
    assert json.dumps(moved)  # plain JSON throughout


# -- another ruleset (--ruleset) ------------------------------------------------------------


@pytest.mark.parametrize("name", ["glicko2", "openskill"])
def test_backtest_under_another_ruleset_prints_both_sides(cli, published, name):
    """'`ladder backtest LADDER --ruleset NAME` replays a ladder's moderated history under
    another ruleset and prints, beside the stored ruleset's figures from the same run:
    log-loss, Brier score, hit rate, a calibration table ... and rating inflation'."""
    before = snapshot(cli, published)
    found = cli.ladder_json("backtest", "gammon42", "--ruleset", name)
    assert snapshot(cli, published) == before
    assert found["ruleset"] == {"stored": "gammon42", "candidate": name}
    count, brier, loss, _ = independent_metrics(stored_games(published))
    hits = [
        (y if p > 0.5 else 0.5)
        for p, y in ((le, 0) if le > we else (we, 1) for _, we, le, _, _ in stored_games(published))
    ]
    stored, candidate = found["stored"], found["candidate"]
    assert stored["games"] == candidate["games"] == count
    assert stored["brier"] == pytest.approx(brier, rel=1e-12)
    assert stored["log_loss"] == pytest.approx(loss, rel=1e-12)
    assert stored["hit_rate"] == pytest.approx(sum(hits) / len(hits), rel=1e-12)
    assert candidate["brier"] != stored["brier"] and 0 < candidate["hit_rate"] < 1
    assert sum(b["games"] for b in candidate["buckets"]) == count
    start = 25.0 if name == "openskill" else 1500.0  # each side in its own units
    assert abs(candidate["inflation"]["months"][-1]["mean"] - start) < start / 10
    assert candidate["inflation"]["months"][-1]["month"] == "2026-10"
    text = cli.ladder("backtest", "gammon42", "--ruleset", name).stdout
    assert f"backtest under {name}:" in text and f"candidate {name}: {count} games" in text
    for row in ("log loss", "Brier", "hit rate", "drift a month", "mean board rating"):
        assert row in text
    assert "largest moves" not in text  # two scales: no difference to show


def test_backtest_under_the_ladders_own_ruleset_is_the_stored_history(cli, published):
    """The identity: the ladder's own ruleset at its defaults, as the ladder runs it, with no
    --set reproduces every stored figure and rating."""
    found = cli.ladder_json("backtest", "gammon42", "--ruleset", "gammon42")
    assert found["candidate"] == found["stored"]
    assert all(v["candidate"] == v["stored"] for v in found["players"].values())


def test_backtest_ruleset_takes_its_own_parameters_only(cli, published):
    """'--set values (checked against THAT ruleset's parameters, with the existing one-line
    errors)'; an unknown ruleset is one line listing the names (exit 2)."""
    default = cli.ladder_json("backtest", "gammon42", "--ruleset", "glicko2")
    taken = cli.ladder_json("backtest", "gammon42", "--ruleset", "glicko2", "--set", "tau=0.3")
    assert taken["set"] == {"tau": 0.3} and default["set"] == {}
    assert taken["candidate"]["log_loss"] != default["candidate"]["log_loss"]
    assert taken["stored"] == default["stored"]
    for argv, says in [
        (("--ruleset", "glicko2", "--set", "divisor=800"), "not a parameter of the glicko2"),
        (("--ruleset", "glicko2", "--set", "tau=abc"), "tau='abc': must be float"),
        (("--ruleset", "openskill", "--set", "beta=-1"), "beta: must be > 0"),
        (("--ruleset", "elo"), "not a ruleset (valid: fibs, gammon42, glicko2, openskill"),
        ((), "give --set KEY=VALUE"),
    ]:
        result = cli.ladder("backtest", "gammon42", *argv, check=False)
        assert result.returncode == 2, argv
        assert says in result.stderr, (argv, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_backtest_ruleset_plot_has_both_curves(cli, published, tmp_path):
    """'--plot writes a PNG' with the calibration curves of both sides."""
    found = cli.ladder_json("backtest", "gammon42", "--ruleset", "glicko2")
    svg = tmp_path / "ruleset.svg"
    cli.ladder("backtest", "gammon42", "--ruleset", "glicko2", "--plot", str(svg))
    drawn = svg.read_text()
    filled = sum(
        1 for side in ("stored", "candidate") for b in found[side]["buckets"] if b["games"]
    )
    assert drawn.count('class="point"') == filled
    assert "stored gammon42" in drawn and "candidate glicko2" in drawn
    png = tmp_path / "ruleset.png"
    cli.ladder("backtest", "gammon42", "--ruleset", "glicko2", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
