"""Optional per-publisher event signing (HMAC-SHA256 over the canonical body)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from schemas import InvalidEvent
from schemas.signing import canonical_body, sign, verify
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board
from worker.bootstrap import Runtime
from worker.settings import Settings, SettingsError

SECRETS = {"server-a": b"a-secret-of-server-a", "server-b": b"b-secret-of-server-b"}


def test_the_canonical_body_is_sorted_compact_utf8_json_without_the_signature():
    """Any language's JSON library reproduces it: sorted keys, no spaces, UTF-8."""
    event = {"b": 1, "a": {"z": "é", "y": [1, 2]}, "signature": "x"}
    assert '{"a":{"y":[1,2],"z":"é"},"b":1}'.encode() == canonical_body(event)
    signed = sign({"b": 1}, "p", b"k")
    body = b'{"b":1,"publisher":"p"}'
    assert hmac.new(b"k", body, hashlib.sha256).hexdigest() == signed["signature"]


def test_a_secret_given_as_text_signs_as_its_utf8_bytes():
    """Issue 36: `schemas.signing.sign` accepts str and bytes secrets (text is its UTF-8
    bytes, as LADDER_PUBLISHER_SECRETS is read), and the worker accepts either signature."""
    event = game("a", "b", event_id="text-secret")
    assert sign(event, "server-a", "sécret") == sign(event, "server-a", "sécret".encode())
    text = SECRETS["server-a"].decode()
    assert None is verify(sign(event, "server-a", text), SECRETS, required=True)


@pytest.fixture
def signing_runtime(make_runtime):
    return make_runtime(publisher_secrets=SECRETS, require_signature=True)


def reasons(rt: Runtime) -> dict[str | None, str]:
    return {letter.event_id: letter.reason for letter in rt.dead_letters.list()}


def test_with_signing_required_only_correctly_signed_events_change_ratings(signing_runtime):
    """Unsigned, forged, tampered and unknown-publisher events are dead-lettered as bad_signature."""
    rt = signing_runtime
    good = sign(game("a", "b", event_id="good"), "server-a", SECRETS["server-a"])
    forged = sign(game("c", "d", event_id="forged"), "server-a", b"guessed")
    tampered = sign(game("e", "f", event_id="tampered"), "server-b", SECRETS["server-b"])
    tampered["winner"] = {"player_id": "f"}
    tampered["loser"] = {"player_id": "e"}
    stranger = sign(game("g", "h", event_id="stranger"), "server-x", b"whatever")
    publish(rt, good, game("i", "j", event_id="unsigned"), forged, tampered, stranger)
    drain(rt)
    assert {"a": 1516.0, "b": 1484.0} == board(rt, "gammon42")
    assert {
        "unsigned": "bad_signature",
        "forged": "bad_signature",
        "tampered": "bad_signature",
        "stranger": "bad_signature",
    } == reasons(rt)


def test_without_signing_required_unsigned_events_pass_and_bad_signatures_do_not(runtime):
    """Signing is optional by default; a signature that is present must still be right."""
    rt = runtime
    rt.intake.publisher_secrets = SECRETS
    publish(
        rt,
        game("a", "b", event_id="plain"),
        sign(game("c", "d", event_id="forged"), "server-a", b"nope"),
    )
    drain(rt)
    assert {"a", "b"} == set(board(rt, "gammon42"))
    assert {"forged": "bad_signature"} == reasons(rt)


def test_secrets_are_never_shown_in_settings_or_logs(signing_runtime, capfd):
    """Secrets come from the environment and never reach a log line."""
    rt = signing_runtime
    publish(rt, sign(game("a", "b"), "server-a", b"wrong"))
    drain(rt)
    out = capfd.readouterr()
    shown = (
        repr(rt.settings)
        + out.out
        + out.err
        + json.dumps([d.detail for d in rt.dead_letters.list()])
    )
    assert not any(secret.decode() in shown for secret in SECRETS.values())


def test_publisher_secrets_are_read_from_the_environment():
    """LADDER_PUBLISHER_SECRETS=name:secret,...; requiring signatures needs at least one."""
    settings = Settings.from_env(
        {
            "LADDER_PUBLISHER_SECRETS": "server-a:s1,server-b:s2",
            "LADDER_REQUIRE_SIGNATURE": "true",
            "LADDER_NETWORK_KEY": "a-real-key",
        }
    )
    assert ({"server-a": b"s1", "server-b": b"s2"}, True) == (
        settings.secrets(),
        settings.require_signature,
    )
    with pytest.raises(SettingsError):
        Settings.from_env({"LADDER_REQUIRE_SIGNATURE": "true"})
    with pytest.raises(SettingsError):
        Settings.from_env({"LADDER_PUBLISHER_SECRETS": "no-secret-here", "LADDER_NETWORK_KEY": "k"})


def test_a_signed_event_with_an_address_replays_as_its_publishers_event(signing_runtime):
    """SPEC 5: "Replay is idempotent and scores exactly as the original would have": the
    signature was verified on arrival, so rewriting ``ip`` into ``network`` does not turn the
    replay into bad_signature."""
    from worker.queue.deadletter import Filter

    rt = signing_runtime
    event = game("a", "b", event_id="signed", loser_extra={"ip": "203.0.113.9"})
    raw = json.dumps(sign(event, "server-a", SECRETS["server-a"]))
    rt.dead_letter(raw, InvalidEvent("retries_exhausted", "the store was down"))
    (letter,) = rt.dead_letters.list()
    assert "203.0.113.9" not in letter.payload
    assert "server-a" == json.loads(letter.payload)["publisher"]
    rt.dead_letters.replay([letter.id for letter in rt.dead_letters.list(Filter())])
    drain(rt)
    assert [] == rt.dead_letters.list()
    assert {"a": 1516.0, "b": 1484.0} == board(rt, "gammon42")


def test_a_publisher_limited_to_other_ladders_is_refused_as_bad_signature(make_runtime):
    """LADDER_PUBLISHER_SECRETS=name:secret:ladder1|ladder2: a signature for another ladder
    is bad_signature; for its own ladders it is accepted."""
    scoped = Settings.from_env(
        {
            "LADDER_PUBLISHER_SECRETS": "server-a:a-secret-of-server-a:fibs|prostriker",
            "LADDER_NETWORK_KEY": "k",
        }
    )
    rt = make_runtime(
        publisher_secrets=scoped.publisher_secrets,
        publisher_ladders=scoped.publisher_ladders,
        require_signature=True,
    )
    try:
        publish(
            rt,
            sign(game("a", "b", event_id="other"), "server-a", SECRETS["server-a"]),
            sign(
                game("c", "d", event_id="own", ladder="prostriker"), "server-a", SECRETS["server-a"]
            ),
        )
        drain(rt)
        assert {"other": "bad_signature"} == reasons(rt)
        assert {"c", "d"} == set(board(rt, "prostriker"))
    finally:
        rt.close()
