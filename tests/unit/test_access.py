"""The token configuration of ``ladder serve`` (SPEC 6, "Access"), read from the environment."""

from __future__ import annotations

import pytest

from worker.access import Access, ApiToken, Scope, parse_tokens, public_from_env, tokens_from_env
from worker.settings import Settings, SettingsError

OPS = "ops-0123456789abcdef"
SITE = "site-0123456789abcdef"


def test_tokens_name_a_caller_a_secret_and_scopes():
    """SPEC 6: LADDER_API_TOKENS=name:token:scope|scope,..."""
    found = tokens_from_env({"LADDER_API_TOKENS": f"ops:{OPS}:export|history, site:{SITE}:boards"})
    assert [("ops", {Scope.EXPORT, Scope.HISTORY}), ("site", {Scope.BOARDS})] == [
        (t.name, set(t.scopes)) for t in found
    ]
    assert OPS == found[0].token.get_secret_value()


def test_a_token_may_contain_a_colon():
    """The name ends at the first colon, the scopes start after the last one."""
    (found,) = tokens_from_env({"LADDER_API_TOKENS": f"ops:{OPS}:x:boards"})
    assert f"{OPS}:x" == found.token.get_secret_value()


def test_the_tokens_file_holds_one_entry_a_line_with_comments(tmp_path):
    """LADDER_API_TOKENS_FILE: for a Secret mounted as a file."""
    path = tmp_path / "tokens"
    path.write_text(f"# who may read\nops:{OPS}:export\n\nsite:{SITE}:boards\n")
    found = tokens_from_env({"LADDER_API_TOKENS_FILE": str(path)})
    assert ["ops", "site"] == [t.name for t in found]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LADDER_API_TOKENS": f"ops:{OPS}"}, "entry 1: LADDER_API_TOKENS entries look like"),
        ({"LADDER_API_TOKENS": f"ops:{OPS}:"}, "token 'ops' has no scope"),
        ({"LADDER_API_TOKENS": f"ops:{OPS}:admin"}, "unknown scope 'admin'"),
        ({"LADDER_API_TOKENS": "ops:short-secret:boards"}, "shorter than 16 characters"),
        ({"LADDER_API_TOKENS": f"o ps:{OPS}:boards"}, "a token's name is letters"),
        ({"LADDER_API_TOKENS": f"ops:{OPS}:boards,ops:{SITE}:boards"}, "names token 'ops' twice"),
        ({"LADDER_API_TOKENS": f"ops:{OPS}:boards,b:{OPS}:export"}, "repeats the token"),
        ({"LADDER_API_TOKENS": f"ops:{OPS}:boards", "LADDER_API_TOKENS_FILE": "/x"}, "not both"),
        ({"LADDER_API_TOKENS_FILE": "/nonexistent/tokens"}, "/nonexistent/tokens: No such file"),
        ({"LADDER_PUBLIC_SCOPES": "boards|everything"}, "LADDER_PUBLIC_SCOPES: unknown scope"),
    ],
)
def test_a_bad_token_configuration_is_one_line_without_the_token(env, message):
    """A refusal names the entry, never its secret."""
    with pytest.raises(SettingsError) as refused:
        Settings.from_env(env)
    shown = str(refused.value)
    assert message in shown and "\n" not in shown
    assert OPS not in shown and SITE not in shown and "short-secret" not in shown


def test_public_scopes_default_to_boards_and_an_empty_value_is_none():
    """SPEC 6: LADDER_PUBLIC_SCOPES (default boards) for anonymous callers."""
    assert {Scope.BOARDS} == public_from_env({})
    assert set() == public_from_env({"LADDER_PUBLIC_SCOPES": ""})
    assert {Scope.BOARDS, Scope.HISTORY} == public_from_env(
        {"LADDER_PUBLIC_SCOPES": "boards,history"}
    )


def test_settings_never_show_a_token():
    """repr and str of the settings hide every token."""
    settings = Settings.from_env({"LADDER_API_TOKENS": f"ops:{OPS}:export"})
    assert OPS not in repr(settings) and OPS not in str(settings)
    assert "ops" == settings.api_tokens[0].name


def _access() -> Access:
    return Access(parse_tokens([f"ops:{OPS}:export|console", f"site:{SITE}:boards"]))


def test_the_caller_is_the_token_presented_and_nothing_close_to_it():
    """A prefix, an extension or a different case of a token is not that token."""
    access = _access()
    assert "ops" == getattr(access.caller(OPS), "name", None)
    assert "site" == getattr(access.caller(SITE), "name", None)
    for guess in (OPS[:-1], OPS + "x", OPS.upper(), "", "ops"):
        assert access.caller(guess) is None


def test_a_session_names_its_token_until_it_expires_and_cannot_be_forged():
    """The console's cookie carries a MAC keyed with the token, never the token."""
    access = _access()
    token = access.caller(OPS)
    assert isinstance(token, ApiToken)
    cookie = access.session(token, now=1_000_000)
    assert OPS not in cookie
    assert token == access.session_caller(cookie, now=1_000_000 + 60)
    assert access.session_caller(cookie, now=1_000_000 + 13 * 3600) is None  # expired
    name, expires, mac = cookie.split(".")
    assert access.session_caller(f"site.{expires}.{mac}", now=1_000_000) is None
    assert access.session_caller(f"{name}.{int(expires) + 3600}.{mac}", now=1_000_000) is None
    removed = Access(parse_tokens([f"site:{SITE}:boards"]))
    assert removed.session_caller(cookie, now=1_000_000) is None  # the token was taken away
