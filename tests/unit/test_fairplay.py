"""Fair-play verdicts (SPEC 2.4, seeds 003 and 004) and network tokens (SPEC 2.4 step 4)."""

import dataclasses
import hashlib
import hmac
import ipaddress
import random

import pytest

from engine.fairplay import (
    FILTERS,
    FairPlayConfig,
    FairPlayFacts,
    Reason,
    bot,
    not_ranked,
    pair_limit,
    shared_network,
    verdict,
)
from engine.network import IPV4, _network, network_token
from schemas.events import is_ip_address

DEFAULTS = FairPlayConfig()
CLEAN = FairPlayFacts(
    mode="ranked",
    winner_is_bot=False,
    loser_is_bot=False,
    winner_network="net-a",
    loser_network="net-b",
    pair_rated_games=0,
)
KEY = b"test-network-key"


def facts(**changes: object) -> FairPlayFacts:
    return CLEAN._replace(**changes)  # type: ignore[arg-type]


def test_a_clean_ranked_game_is_rated() -> None:
    """No filter matches a ranked game between two humans on different networks."""
    assert None is verdict(CLEAN, DEFAULTS)


def test_filters_run_in_spec_order() -> None:
    """SPEC 2.4: not ranked, then bot, then shared network, then the pair limit."""
    assert (not_ranked, bot, shared_network, pair_limit) == FILTERS


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"mode": "boosted"}, Reason.NOT_RANKED),
        ({"mode": "tournament"}, Reason.NOT_RANKED),
        ({"winner_is_bot": True}, Reason.BOT),
        ({"loser_is_bot": True}, Reason.BOT),
        ({"loser_network": "net-a"}, Reason.SHARED_NETWORK),
        ({"pair_rated_games": 3}, Reason.PAIR_LIMIT),
        ({"mode": "boosted", "winner_is_bot": True}, Reason.NOT_RANKED),
        ({"winner_is_bot": True, "loser_network": "net-a"}, Reason.BOT),
        ({"loser_network": "net-a", "pair_rated_games": 9}, Reason.SHARED_NETWORK),
        (
            {
                "mode": "tournament",
                "loser_is_bot": True,
                "loser_network": "net-a",
                "pair_rated_games": 9,
            },
            Reason.NOT_RANKED,
        ),
    ],
)
def test_the_first_matching_filter_decides(changes: dict[str, object], reason: Reason) -> None:
    """SPEC 2.4: the first filter that matches decides (a boosted bot game ⇒ not_ranked)."""
    assert reason == verdict(facts(**changes), DEFAULTS)


@pytest.mark.parametrize(
    ("switch", "changes"),
    [
        ("not_ranked", {"mode": "boosted"}),
        ("bots", {"winner_is_bot": True}),
        ("shared_network", {"loser_network": "net-a"}),
        ("pair_limit", {"pair_rated_games": 3}),
    ],
)
def test_each_filter_can_be_switched_off(switch: str, changes: dict[str, object]) -> None:
    """SPEC 2.4: each filter can be switched off in the ladder's config."""
    off = dataclasses.replace(DEFAULTS, **{switch: False})
    assert None is verdict(facts(**changes), off)


def test_a_switched_off_filter_lets_the_next_one_decide() -> None:
    """With the bot filter off, a bot game on a shared network is caught by the next filter."""
    off = FairPlayConfig(bots=False)
    assert Reason.SHARED_NETWORK == verdict(facts(winner_is_bot=True, loser_network="net-a"), off)


@pytest.mark.parametrize(
    ("winner_network", "loser_network", "reason"),
    [
        ("net-a", "net-a", Reason.SHARED_NETWORK),
        ("net-a", "net-b", None),
        (None, "net-a", None),
        ("net-a", None, None),
        (None, None, None),
    ],
)
def test_a_network_is_shared_only_when_both_tokens_are_present_and_equal(
    winner_network: str | None, loser_network: str | None, reason: Reason | None
) -> None:
    """Seed 004: players who appear to share a network; a missing token proves nothing."""
    changes = {"winner_network": winner_network, "loser_network": loser_network}
    assert reason == verdict(facts(**changes), DEFAULTS)


@pytest.mark.parametrize(
    ("pair_rated_games", "reason"),
    [(0, None), (2, None), (3, Reason.PAIR_LIMIT), (10, Reason.PAIR_LIMIT)],
)
def test_only_the_first_3_rated_games_of_a_pair_in_24_hours_count(
    pair_rated_games: int, reason: Reason | None
) -> None:
    """Seed 003 section 06: with 2 earlier rated games the third is rated; with 3 it is not."""
    assert reason == verdict(facts(pair_rated_games=pair_rated_games), DEFAULTS)


def test_the_pair_limit_is_configurable() -> None:
    """SPEC 2.4: "N rated games (default 3)"."""
    assert Reason.PAIR_LIMIT == verdict(
        facts(pair_rated_games=1), FairPlayConfig(pair_limit_games=1)
    )


def test_reasons_store_as_their_snake_case_names() -> None:
    """The audit row stores the reason's string value."""
    assert ["not_ranked", "bot", "shared_network", "pair_limit"] == [str(r) for r in Reason]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"mode": "casual"}, "mode"),
        ({"mode": "RANKED"}, "mode"),
        ({"pair_rated_games": -1}, "pair_rated_games"),
    ],
)
def test_facts_reject_values_the_engine_does_not_know(
    changes: dict[str, object], field: str
) -> None:
    """The wire alias "casual" must be mapped to "boosted" before it reaches the engine."""
    with pytest.raises(ValueError, match=field):
        facts(**changes)


@pytest.mark.parametrize(
    "changes",
    [{"pair_limit_games": 0}, {"pair_window_hours": 0}],
)
def test_config_rejects_empty_limits(changes: dict[str, int]) -> None:
    """A pair limit of 0 games or 0 hours is a config error; switch the filter off instead."""
    with pytest.raises(ValueError, match=next(iter(changes))):
        FairPlayConfig(**changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("203.0.113.9", "203.0.113.200"),
        ("203.0.113.9", "::ffff:203.0.113.77"),
        ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"),
        (" 203.0.113.9 ", "203.0.113.0"),
        ("203.0.113.9", "::203.0.113.77"),  # IPv4-compatible
        ("203.0.113.9", "2002:cb00:7142::1"),  # 6to4 of 203.0.113.66
        ("203.0.113.9", "2002:cb00:71ff:1234::1"),
    ],
)
def test_addresses_in_one_network_get_one_token(a: str, b: str) -> None:
    """IPv4 by /24, IPv6 by /64; IPv4-mapped, IPv4-compatible and 6to4 IPv6 as their IPv4
    (SPEC 2.4 step 4: "a keyed hash of the IPv4 /24 or IPv6 /64")."""
    token = network_token(a, KEY)
    assert token is not None and token == network_token(b, KEY)


@pytest.mark.parametrize(
    "ip", ["127.0.0.1", "127.9.9.9", "::1", "169.254.10.20", "fe80::1", "fe80::abcd:1", "::"]
)
def test_loopback_and_link_local_addresses_are_no_network_identity(ip: str) -> None:
    """Every host has them, so they never make two players "appear to share a network"."""
    assert network_token(ip, KEY) is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("203.0.113.9", "203.0.114.9"),
        ("2001:db8:1:2::1", "2001:db8:1:3::1"),
        ("10.0.0.1", "::a00:101"),  # IPv4-compatible 10.0.1.1: another /24
        ("203.0.113.9", "2002:cb00:7200::1"),  # 6to4 of 203.0.114.0
    ],
)
def test_addresses_in_different_networks_get_different_tokens(a: str, b: str) -> None:
    """A different /24 (IPv4) or /64 (IPv6) gives a different token."""
    assert network_token(a, KEY) != network_token(b, KEY)


def test_tokens_depend_on_the_key() -> None:
    """The hash is keyed, so a token cannot be reversed by hashing all 2^24 /24s."""
    assert network_token("203.0.113.9", KEY) != network_token("203.0.113.9", b"other key")


def test_a_token_is_ip_dash_32_hex_digits_of_the_hmac() -> None:
    """The token is "ip-" + the first 32 hex digits of HMAC-SHA256(key, "a.b.c.0/24")."""
    expected = "ip-" + hmac.new(KEY, b"203.0.113.0/24", hashlib.sha256).hexdigest()[:32]
    assert expected == network_token("203.0.113.9", KEY)


@pytest.mark.parametrize("ip", ["203.0.113.9", "2001:db8:1:2::1", "::ffff:203.0.113.9"])
def test_the_raw_address_never_appears_in_the_token(ip: str) -> None:
    """SPEC 2.4 decision: the worker never stores or logs the raw address."""
    token = network_token(ip, KEY)
    assert token is not None
    assert ip not in token and "203.0.113" not in token and "2001:db8" not in token


@pytest.mark.parametrize("ip", ["", "not-an-ip", "203.0.113", "203.0.113.256", "2001:db8::g"])
def test_an_unparsable_address_raises_without_quoting_it(ip: str) -> None:
    """A bad address is a ValueError whose message does not repeat the input."""
    with pytest.raises(ValueError) as raised:
        network_token(ip, KEY)
    assert ip == "" or ip not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_an_empty_key_is_rejected() -> None:
    """An empty HMAC key would make the token an unkeyed, reversible hash."""
    with pytest.raises(ValueError, match="key"):
        network_token("203.0.113.9", b"")


def _read_by_ipaddress(ip: str) -> tuple[bool, str | None]:
    """Whether ``ipaddress`` takes ``ip`` as an ``ip`` field (``is_ip_address``), and the token
    of the network it reads (``"error"`` where it refuses the address)."""
    valid = 0 < len(ip) <= 128 and "%" not in ip
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        valid = False
    try:
        network = _network(ip)
    except ValueError:
        return valid, "error"
    if network is None:
        return valid, None
    return valid, "ip-" + hmac.new(KEY, str(network).encode(), hashlib.sha256).hexdigest()[:32]


_EDGES = [
    *("0.0.0.0", "0.0.0.1", "127.0.0.1", "127.255.0.9", "126.0.0.1", "128.0.0.1"),
    *("169.254.1.1", "169.253.1.1", "169.255.0.1", "255.255.255.255", "256.1.1.1"),
    *("01.2.3.4", "1.2.3.04", "00.0.0.0", "1.2.3", "1.2.3.4.5", "1..2.3", "+1.2.3.4"),
    *(" 1.2.3.4", "1.2.3.4 ", "1.2.3.4\n", "\u0661.2.3.4", "1.2.3.4/24", "1.2.3.-4", "1.2.3.4\x00"),
    *("::1", "::ffff:1.2.3.4", "2002:0102:0304::1", "fe80::1", "::1.2.3.4", "2001:db8::1"),
]


def test_a_dotted_quad_is_read_as_ipaddress_reads_it() -> None:
    """The IPv4 fast path (``engine.network.IPV4``) takes exactly the addresses ``ipaddress``
    takes and gives each the token of the network ``ipaddress`` reads: on edge cases and
    60,000 random dotted strings (octets 0-299, with leading zeros, empty, 3 to 5 of them)
    and random IPv4 and IPv6 addresses."""
    rng = random.Random(7)
    cases = list(_EDGES)
    for _ in range(60_000):
        octets = [
            rng.choice(
                (str(rng.randrange(300)), f"0{rng.randrange(10)}", str(rng.randrange(256)), "")
            )
            for _ in range(rng.choice((3, 4, 4, 4, 5)))
        ]
        cases.append(".".join(octets))
    cases += [str(ipaddress.IPv4Address(rng.getrandbits(32))) for _ in range(20_000)]
    cases += [str(ipaddress.IPv6Address(rng.getrandbits(128))) for _ in range(2_000)]
    differ = []
    for ip in cases:
        try:
            token: str | None = network_token(ip, KEY)
        except ValueError:
            token = "error"
        if (is_ip_address(ip), token) != _read_by_ipaddress(ip):
            differ.append(ip)
    assert [] == differ
    assert sum(1 for ip in cases if IPV4.fullmatch(ip)) > 20_000  # the fast path ran
