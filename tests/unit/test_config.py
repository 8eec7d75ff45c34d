"""Ladder configuration: shipped defaults, versions by effective-from time, refusals."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from engine import FibsRules, Gammon42Rules, ProStrikerRules
from engine.rulesets import Glicko2Rules
from worker.ladders import ConfigError, default_config_path, load_config, parse_config
from worker.settings import WHOLE, Settings, SettingsError

SHIPPED = default_config_path().read_text(encoding="utf-8")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_the_shipped_configuration_has_the_three_ladders_with_their_rulesets():
    """SPEC 2: gammon42, fibs and prostriker ship with working defaults."""
    config = load_config()
    assert {"gammon42": "gammon42", "fibs": "fibs", "prostriker": "prostriker"} == {
        name: ladder.ruleset for name, ladder in config.ladders.items()
    }
    assert isinstance(config.ladders["fibs"].current, FibsRules)
    assert isinstance(config.ladders["prostriker"].current, ProStrikerRules)


@pytest.mark.parametrize(
    ("ended_at", "version", "divisor", "heavy_volume"),
    [
        ("2026-01-15T12:00:00", "1.0.5", 400.0, False),  # before 1.2.0: chess's 400
        ("2026-07-31T23:59:59", "1.0.5", 400.0, False),
        ("2026-08-01T00:00:00", "1.2.0", 800.0, False),  # 1.2.0 moved to 800
        ("2026-09-30T23:59:59", "1.2.0", 800.0, False),
        ("2026-10-01T00:00:00", "1.3.1", 1200.0, True),  # 1.3.1: 1200 and K by weekly volume
        ("2026-11-29T18:04:05", "1.3.1", 1200.0, True),
    ],
)
def test_gammon42_is_scored_with_the_version_in_force_at_ended_at(
    ended_at, version, divisor, heavy_volume
):
    """Seed 002: 'We changed it to 800 in version 1.2.0 and to 1200 in version 1.3.1.'"""
    rules = load_config().ladders["gammon42"].rules_at(at(ended_at))
    assert isinstance(rules, Gammon42Rules)
    assert (version, divisor, heavy_volume) == (rules.version, rules.divisor, rules.heavy_volume)


def test_a_version_inherits_what_it_does_not_set_from_the_one_before():
    """Versions list only what changed: K 32 and the prizes carry over from 1.0.5."""
    rules = load_config().ladders["gammon42"].rules_at(at("2026-11-01T00:00:00"))
    assert isinstance(rules, Gammon42Rules)
    assert (32, (50, 25, 15), 1500.0) == (rules.k, rules.prizes, rules.start)


def test_an_operator_adds_a_ladder_by_copying_tables_under_a_new_name():
    """[ladders.gammon42-eu] copied from gammon42 is a ladder of its own."""
    copied = SHIPPED.split("[ladders.fibs]")[0].replace("ladders.gammon42", "ladders.gammon42-eu")
    config = parse_config(SHIPPED + "\n" + copied)
    assert "gammon42" == config.ladders["gammon42-eu"].ruleset
    assert 4 == len(config.ladders)


@pytest.mark.parametrize(
    ("change", "line", "field"),
    [
        (("divisor = 800", 'divisor = "eight hundred"'), 'divisor = "eight', "divisor"),
        (("heavy_k = 16", "heavy_k = -3"), "heavy_k = -3", "heavy_k"),
        (("k = 32", "kay = 32"), "kay = 32", "kay"),
        (('ruleset = "fibs"', 'ruleset = "chess"'), 'ruleset = "chess"', "ruleset"),
        (("pair_limit_games = 3", "pair_limit_games = 0"), "pair_limit_games = 0", "pair_limit"),
        (
            ("effective_from = 2026-08-01T00:00:00Z", "effective_from = 2026-08-01"),
            "effective_from = 2026-08-01\n",
            "effective_from",
        ),
    ],
)
def test_a_broken_configuration_is_refused_naming_the_line_and_the_field(change, line, field):
    """A broken config file is refused at start-up with a message naming the line and the field."""
    old, new = change
    text = SHIPPED.replace(old, new, 1)
    expected_line = text[: text.index(line)].count("\n") + 1
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "ladders.toml")
    message = str(caught.value)
    assert f"line {expected_line}" in message
    assert field in message


def test_a_toml_syntax_error_is_refused_with_its_line():
    """tomllib's own position is kept in the message."""
    with pytest.raises(ConfigError, match="line 3"):
        parse_config('[ladders.x]\nruleset = "fibs"\nbroken = \n', "bad.toml")


SWITCHED = """
[ladders.club]
ruleset = "gammon42"

[[ladders.club.versions]]
version = "1"
effective_from = 2026-01-01T00:00:00Z
k = 24

[[ladders.club.versions]]
version = "g-1"
ruleset = "glicko2"
effective_from = 2026-06-01T00:00:00Z
tau = 0.4

[[ladders.club.versions]]
version = "g-2"
effective_from = 2026-09-01T00:00:00Z
board_deviation = 150
"""


def test_a_version_may_switch_the_ruleset_and_then_inherits_only_from_its_own():
    """A version naming another ruleset starts from that ruleset's defaults; the one after it
    inherits from it; ``switch`` is the version that named it (what ``ladder rerate`` uses)."""
    club = parse_config(SWITCHED).ladders["club"]
    first = club.rules_at(at("2026-02-01T00:00:00"))
    assert isinstance(first, Gammon42Rules) and 24 == first.k
    switched = club.rules_at(at("2026-07-01T00:00:00"))
    later = club.rules_at(at("2026-10-01T00:00:00"))
    assert isinstance(switched, Glicko2Rules) and isinstance(later, Glicko2Rules)
    assert (0.4, Glicko2Rules().board_deviation) == (switched.tau, switched.board_deviation)
    assert (0.4, 150) == (later.tau, later.board_deviation)
    assert club.switch is not None and club.switch.rules.version == "g-1"
    assert "glicko2" == club.as_table()["versions"][1]["ruleset"]
    assert "ruleset" not in club.as_table()["versions"][0]
    assert parse_config(SHIPPED).ladders["gammon42"].switch is None


def test_a_version_naming_an_unknown_ruleset_is_refused():
    with pytest.raises(ConfigError, match="ruleset"):
        parse_config(SWITCHED.replace('ruleset = "glicko2"', 'ruleset = "trueskill"'))
    with pytest.raises(ConfigError, match="k"):  # k is gammon42's, not glicko2's
        parse_config(SWITCHED.replace("tau = 0.4", "k = 24"))


def test_versions_must_move_forward_in_time():
    """Two versions with the same effective-from time would make scoring ambiguous."""
    text = SHIPPED.replace(
        "effective_from = 2026-10-01T00:00:00Z", "effective_from = 2026-08-01T00:00:00Z"
    )
    with pytest.raises(ConfigError, match="effective_from"):
        parse_config(text)


def test_a_missing_configuration_file_is_refused_with_its_path(tmp_path: Path):
    """LADDER_CONFIG pointing nowhere stops start-up with the path in the message."""
    with pytest.raises(ConfigError, match="nowhere.toml"):
        load_config(tmp_path / "nowhere.toml")


def test_production_requires_a_network_key():
    """SPEC 2.4 step 4 decision: LADDER_ENV=production makes LADDER_NETWORK_KEY required."""
    with pytest.raises(SettingsError, match="LADDER_NETWORK_KEY"):
        Settings.from_env({"LADDER_ENV": "production"})
    settings = Settings.from_env(
        {
            "LADDER_ENV": "production",
            "LADDER_NETWORK_KEY": "s3cret",
            "DATABASE_URL": "postgresql://db/ladder",
            "REDIS_URL": "redis://queue:6379/0",
        }
    )
    assert (b"s3cret", False) == (
        settings.network_key.get_secret_value(),
        settings.network_key_is_default,
    )


@pytest.mark.parametrize("missing", ["DATABASE_URL", "REDIS_URL"])
def test_production_requires_both_server_urls(missing: str):
    """SPEC 6: "LADDER_ENV=production requires both URLs" (the embedded servers serve
    development and the demo only): each one missing is refused by name."""
    env = {
        "LADDER_ENV": "production",
        "LADDER_NETWORK_KEY": "k",
        "DATABASE_URL": "postgresql://db/ladder",
        "REDIS_URL": "redis://queue:6379/0",
    }
    del env[missing]
    with pytest.raises(SettingsError, match=f"^{missing} is required when LADDER_ENV=production"):
        Settings.from_env(env)


def test_unset_urls_leave_the_embedded_servers_to_serve_under_the_data_directory(tmp_path: Path):
    """SPEC 6: with DATABASE_URL and REDIS_URL unset the embedded servers serve, under
    LADDER_DATA_DIR (default ./.ladder/)."""
    settings = Settings.from_env({})
    assert ("", "") == (settings.database_url, settings.redis_url)
    assert Path(".ladder").absolute() == settings.data_dir
    assert tmp_path / "d" == Settings.from_env({"LADDER_DATA_DIR": str(tmp_path / "d")}).data_dir


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite:///ladder.sqlite3", "PostgreSQL is the only store"),
        ("sqlite://", "PostgreSQL is the only store"),
        ("mysql://db/ladder", "must be a postgresql:// URL, not mysql://"),
    ],
)
def test_a_database_url_of_another_database_is_refused(url: str, said: str):
    """SPEC 6: "PostgreSQL is the only system of record ... No second (SQLite)
    implementation": a URL of another database is refused with one line."""
    with pytest.raises(SettingsError, match=said):
        Settings.from_env({"DATABASE_URL": url})
    assert Settings.from_env({"DATABASE_URL": "postgres://db/x"}).database_url.startswith(
        "postgresql+psycopg://"
    )


def test_a_plain_postgresql_url_selects_psycopg_3():
    """SPEC 5: a plain postgresql://user@host/db URL works and uses psycopg 3."""
    settings = Settings.from_env({"DATABASE_URL": "postgresql://root@127.0.0.1/test"})
    assert "postgresql+psycopg://root@127.0.0.1/test" == settings.database_url


def test_defaults_follow_the_specification():
    """SPEC 5: LADDER_CONFIG defaults to the shipped file."""
    assert Settings.from_env({}).ladder_config is None


def test_ladder_serve_believes_forwarded_addresses_only_from_configured_proxies():
    """uvicorn trusts X-Forwarded-For from 127.0.0.1 by default; ladder serve trusts no one
    unless LADDER_TRUSTED_PROXIES names the proxies, and has no access log by default."""
    from worker.entrypoints.cli.read import serve_options

    plain = serve_options(Settings.from_env({}), "127.0.0.1", 8000, access_log=False)
    assert (False, False, []) == (
        plain["access_log"],
        plain["proxy_headers"],
        plain["forwarded_allow_ips"],
    )
    proxied = Settings.from_env({"LADDER_TRUSTED_PROXIES": "10.0.0.5, 10.0.0.6"})
    options = serve_options(proxied, "0.0.0.0", 8000, access_log=True)
    assert (True, True, ["10.0.0.5", "10.0.0.6"]) == (
        options["access_log"],
        options["proxy_headers"],
        options["forwarded_allow_ips"],
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("LADDER_BATCH_SIZE", "0", "LADDER_BATCH_SIZE must be between 1 and 2000"),
        ("LADDER_BATCH_SIZE", "2001", "LADDER_BATCH_SIZE must be between 1 and 2000"),
        ("LADDER_JOB_RETRIES", "101", "LADDER_JOB_RETRIES must be between 0 and 100"),
        ("LADDER_RETRY_INTERVALS", "1,-5", "LADDER_RETRY_INTERVALS must be seconds >= 0"),
        (
            "LADDER_DLQ_TTL_DAYS",
            "-1",
            "LADDER_DLQ_TTL_DAYS must be at least 0 (0: keep until acted on)",
        ),
        ("LADDER_DLQ_MAX", "0", "LADDER_DLQ_MAX must be at least 1"),
        ("LADDER_JOB_TIMEOUT", "0", "LADDER_JOB_TIMEOUT must be at least 1 second"),
        (
            "LADDER_METRICS_PORT",
            "65536",
            "LADDER_METRICS_PORT must be between 0 and 65535 (0: none)",
        ),
        ("LADDER_BATCH_SIZE", "ten", "LADDER_BATCH_SIZE: not a whole number: 'ten'"),
        ("LADDER_RETRY_INTERVALS", "1,x", "LADDER_RETRY_INTERVALS must be seconds >= 0"),
        ("LADDER_RECEIPT_TTL", "0", "LADDER_RECEIPT_TTL must be at least 1 second"),
    ],
)
def test_a_setting_out_of_range_is_refused_naming_its_variable(variable, value, message):
    """A bad environment variable stops start-up with one line naming the variable."""
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({variable: value})
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_settings_built_in_code_are_checked_like_the_environment():
    """Keyword construction and ``replace`` apply the same ranges and types."""
    with pytest.raises(ValidationError):
        Settings(batch_size=0)
    with pytest.raises(ValidationError):
        Settings().replace(metrics_port=-1)
    with pytest.raises(ValidationError):
        Settings(batch_size="10")  # type: ignore[arg-type]
    assert 7 == Settings().replace(job_timeout=7).job_timeout


def test_secrets_are_never_shown_in_the_settings_repr():
    """The network key and publisher secrets are SecretBytes: repr and str hide them."""
    settings = Settings.from_env(
        {"LADDER_NETWORK_KEY": "k3y-value", "LADDER_PUBLISHER_SECRETS": "a:pub-secret"}
    )
    shown = repr(settings) + str(settings) + repr(settings.model_dump())
    assert "k3y-value" not in shown and "pub-secret" not in shown
    assert {"a": b"pub-secret"} == settings.secrets()
    assert b"k3y-value" == settings.network_key.get_secret_value()


MINIMAL = """[ladders.x]
ruleset = "fibs"
{extra}
[[ladders.x.versions]]
version = "1"
effective_from = 2026-01-01T00:00:00Z
"""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("colour = 3", "line 3: field ladders.x.colour: unknown option"),
        ('public_board = "yes"', "line 3: field ladders.x.public_board: must be true or false"),
        ("linking = 1", "line 3: field ladders.x.linking: must be true or false"),
        ("fairplay = 3", "line 3: field ladders.x.fairplay: must be a table"),
        (
            '[ladders.x.season]\nreset = "sometimes"',
            "line 4: field ladders.x.season.reset: must be one of none, start, toward_start",
        ),
        (
            "[ladders.x.season]\nfraction = 0",
            "line 4: field ladders.x.season.fraction: must be more than 0 and at most 1",
        ),
        (
            '[ladders.x.season]\nfraction = "half"',
            "line 4: field ladders.x.season.fraction: must be a number",
        ),
        (
            "[ladders.x.season]\nwhen = 1",
            "line 4: field ladders.x.season.when: unknown parameter for SeasonConfig",
        ),
    ],
)
def test_each_ladder_option_is_checked_strictly_naming_its_line_and_field(extra, message):
    """A broken config file is refused at start-up with a message naming the line and the field;
    no value is converted (a string is not a boolean, 1 is not true)."""
    with pytest.raises(ConfigError) as caught:
        parse_config(MINIMAL.format(extra=extra), "x.toml")
    assert f"x.toml, {message}" == str(caught.value)


def test_a_ladder_without_versions_is_refused():
    """Every ladder needs at least one [[ladders.<name>.versions]] entry."""
    with pytest.raises(ConfigError, match="field ladders.x.versions: at least one"):
        parse_config('[ladders.x]\nruleset = "fibs"\n', "x.toml")
    with pytest.raises(ConfigError, match="field ladders.x.versions: at least one"):
        parse_config('[ladders.x]\nruleset = "fibs"\nversions = []\n', "x.toml")


@pytest.mark.parametrize("field", sorted(WHOLE))
def test_each_whole_number_setting_is_stated_once(field):
    """The table's default is the field's and the unset variable's; one below its range (or
    one above) is refused naming the variable."""
    whole = WHOLE[field]
    assert whole.default == getattr(Settings(), field) == getattr(Settings.from_env({}), field)
    for wrong in (whole.least - 1, None if whole.most is None else whole.most + 1):
        if wrong is None:
            continue
        with pytest.raises(SettingsError) as caught:
            Settings.from_env({whole.variable: str(wrong)})
        assert str(caught.value) == whole.refusal()
        assert str(caught.value).startswith(f"{whole.variable} must be ")


@pytest.mark.parametrize(
    "env",
    [
        {"LADDER_REQUIRE_SIGNATURE": "true", "LADDER_PUBLISHER_SECRETS": "a:s"},
        {"LADDER_PUBLISHER_SECRETS": "a:s"},
        {"LADDER_PUBLISHER_SECRETS": "a:s", "LADDER_NETWORK_KEY": ""},
    ],
)
def test_signatures_require_a_network_key_of_their_own(env):
    """The development key is public: with it anyone could write a signature's attestation."""
    with pytest.raises(SettingsError, match="^LADDER_NETWORK_KEY is required when "):
        Settings.from_env(env)
    settings = Settings.from_env({**env, "LADDER_NETWORK_KEY": "k"})
    assert (b"k", False) == (
        settings.network_key.get_secret_value(),
        settings.network_key_is_default,
    )


def test_every_variable_ladder_reads_is_read_once_with_the_settings():
    """The publish secret, the browser, the ACL passwords and the failpoints come from the
    environment with every other setting; a failpoint that does not exist is refused in one
    line, as any other setting is, instead of a traceback at import."""
    env = {
        "LADDER_PUBLISH_SECRET": "s3cret",
        "LADDER_CHROMIUM": "/opt/chromium",
        "LADDER_REDIS_WORKER_PASSWORD": "work-Lkjh-Gfds-6789",
        "LADDER_FAILPOINTS": "service.after_commit=pause:1",
    }
    given = Settings.from_env(env)
    assert given.publish_secret is not None
    assert b"s3cret" == given.publish_secret.get_secret_value()
    assert "s3cret" not in repr(given) and "Lkjh" not in repr(given)
    assert "/opt/chromium" == given.chromium
    assert (
        "work-Lkjh-Gfds-6789"
        == given.redis_passwords["LADDER_REDIS_WORKER_PASSWORD"].get_secret_value()
    )
    assert "service.after_commit=pause:1" == given.failpoints
    assert (None, None, "") == (
        Settings.from_env({}).publish_secret,
        Settings.from_env({}).chromium,
        Settings.from_env({}).failpoints,
    )
    with pytest.raises(SettingsError, match="^LADDER_FAILPOINTS: unknown failpoint 'nowhere'$"):
        Settings.from_env({"LADDER_FAILPOINTS": "nowhere=1"})
