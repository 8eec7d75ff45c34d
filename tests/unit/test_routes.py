"""Several primaries: LADDER_DATABASE_ROUTES and the TOML ``database`` key are checked with one
line that never shows a URL, and ``Databases`` hands each ladder its primary's engine."""

from __future__ import annotations

from typing import Any

import pytest

from worker.ladders import ConfigError, load_config, parse_config
from worker.settings import Settings, SettingsError
from worker.store.routes import Databases, resolve

SECRET = "s3cret-pw"
MAIN = f"postgresql://ladder:{SECRET}@pg-main/ladder"
GAMMON = f"postgresql://ladder:{SECRET}@pg-gammon/ladder"
FIBS = f"postgresql://ladder:{SECRET}@pg-fibs/ladder"
TOML = """
[ladders.gammon42]
ruleset = "gammon42"
[[ladders.gammon42.versions]]
version = "v1"
effective_from = 2026-01-01T00:00:00Z

[ladders.fibs]
ruleset = "fibs"
database = "FIBS_DATABASE_URL"
[[ladders.fibs.versions]]
version = "v1"
effective_from = 2026-01-01T00:00:00Z
"""


def routes_of(spec: str) -> dict[str, str]:
    return Settings.from_env({"DATABASE_URL": MAIN, "LADDER_DATABASE_ROUTES": spec}).database_routes


def refusal(call: Any) -> str:
    with pytest.raises((SettingsError, ConfigError)) as caught:
        call()
    message = str(caught.value)
    assert SECRET not in message and "\n" not in message
    return message


def test_routes_are_read_per_ladder_and_select_psycopg_3():
    """Each ladder=url pair is a route, its URL normalised as DATABASE_URL's is."""
    expected = {
        "gammon42": GAMMON.replace("postgresql://", "postgresql+psycopg://"),
        "fibs": FIBS.replace("postgresql://", "postgresql+psycopg://"),
    }
    assert expected == routes_of(f"gammon42={GAMMON}, fibs={FIBS}")
    assert {} == routes_of("")


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("gammon42", "LADDER_DATABASE_ROUTES must look like ladder=postgresql://"),
        (f"={GAMMON}", "LADDER_DATABASE_ROUTES must look like ladder=postgresql://"),
        (f"gammon42=mysql://u:{SECRET}@h/db", "(gammon42) must be a postgresql:// URL, not mysql"),
        ("gammon42=sqlite:///x.db", "(gammon42) names an SQLite file"),
        (f"gammon42={GAMMON},gammon42={FIBS}", "routes ladder 'gammon42' twice"),
    ],
)
def test_a_bad_route_is_refused_in_one_line_without_its_url(spec, said):
    assert said in refusal(lambda: routes_of(spec))


def test_the_same_route_twice_is_one_route():
    assert ["gammon42"] == list(routes_of(f"gammon42={GAMMON},gammon42={GAMMON}"))


def test_a_ladder_database_key_names_the_variable_that_holds_its_url():
    config = parse_config(TOML, "ladders.toml")
    assert "FIBS_DATABASE_URL" == config.ladders["fibs"].database
    found = resolve({}, config, {"FIBS_DATABASE_URL": FIBS})
    assert {"fibs": FIBS.replace("postgresql://", "postgresql+psycopg://")} == found
    assert "FIBS_DATABASE_URL" == config.ladders["fibs"].as_table()["database"]


@pytest.mark.parametrize(
    ("routes", "env", "said"),
    [
        ({}, {}, "ladders.toml: field ladders.fibs.database names FIBS_DATABASE_URL, which is not"),
        ({}, {"FIBS_DATABASE_URL": "redis://h"}, "FIBS_DATABASE_URL (ladders.fibs.database) must"),
        (
            {"fibs": GAMMON},
            {"FIBS_DATABASE_URL": FIBS},
            "ladder 'fibs' is routed twice, to two databases",
        ),
        ({"nope": GAMMON}, {"FIBS_DATABASE_URL": FIBS}, "routes ladder 'nope', which ladders.toml"),
    ],
)
def test_routes_that_do_not_fit_the_configuration_are_refused(routes, env, said):
    config = parse_config(TOML, "ladders.toml")
    assert said in refusal(lambda: resolve(routes, config, env))


def test_a_ladder_routed_both_ways_to_one_database_is_one_route():
    config = parse_config(TOML, "ladders.toml")
    same = FIBS.replace("postgresql://", "postgresql+psycopg://")
    assert {"fibs": same} == resolve({"fibs": same}, config, {"FIBS_DATABASE_URL": FIBS})


def test_a_database_key_that_is_no_variable_name_is_refused_at_its_line():
    text = TOML.replace('"FIBS_DATABASE_URL"', '"postgresql://x"')
    said = refusal(lambda: parse_config(text, "ladders.toml"))
    assert "line 10: field ladders.fibs.database: must name an environment variable" in said


def made_for(url: str) -> Any:
    return f"engine of {url}"


class Made:
    """A stand-in for ``make_engine``: the URLs engines were made for."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, url: str) -> Any:
        self.urls.append(url)
        return made_for(url)


def test_each_ladder_gets_its_primary_and_each_primary_is_made_once():
    made = Made()
    dbs = Databases(lambda: "main", {"gammon42": "g", "fibs": "g", "prostriker": "p"}, made)
    assert made_for("main") == dbs.for_ladder("other")
    assert made_for("main") == dbs.for_ladder(None)  # a dead letter naming no ladder
    assert made_for("g") == dbs.for_ladder("gammon42") == dbs.for_ladder("fibs")
    assert [made_for("main"), made_for("g"), made_for("p")] == dbs.all()
    assert ["main", "g", "p"] == made.urls
    groups = dbs.grouped(["fibs", "other", "prostriker", "gammon42"])
    expected = [(made_for("g"), ["fibs", "gammon42"]), (made_for("main"), ["other"])]
    assert [*expected, (made_for("p"), ["prostriker"])] == groups


def test_one_primary_is_one_group_and_the_default_is_made_only_when_needed():
    made = Made()
    asked: list[str] = []

    def default() -> str:
        asked.append("default")
        return "main"

    dbs = Databases(default, {"fibs": "f"}, made)
    assert made_for("f") == dbs.for_ladder("fibs")
    assert [] == asked  # the embedded PostgreSQL is not started for a routed ladder
    one = Databases(lambda: "main", {}, Made())
    assert [(made_for("main"), ["gammon42", "fibs"])] == one.grouped(["gammon42", "fibs"])


def test_the_shipped_configuration_routes_nothing():
    assert all(c.database is None for c in load_config().ladders.values())


def test_the_settings_never_show_a_database_password():
    settings = Settings.from_env({"DATABASE_URL": MAIN, "LADDER_DATABASE_ROUTES": f"fibs={FIBS}"})
    assert SECRET not in repr(settings) and SECRET not in str(settings)
