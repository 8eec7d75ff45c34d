"""Network tokens: a keyed hash of the network an IP address belongs to.

Source: SPEC 2.4 step 4 and its **decision**: if a game server sends a raw IP instead of an
opaque network token, the worker turns it into a keyed hash of the IPv4 /24 or IPv6 /64 and
never stores or logs the raw address. Seed 004 explains why a shared network matters: the
easiest way to fake a rating is to play oneself from two devices at home.

The hash is keyed (HMAC) because there are only 2^24 IPv4 /24s: an unkeyed hash could be
reversed by trying them all. Error messages leave the address out too, since they get logged.
"""

import hmac
import ipaddress
import re
from typing import Final

__all__ = ["IPV4", "IPV4_PREFIX", "IPV6_PREFIX", "TOKEN_PREFIX", "network_token"]

IPV4_PREFIX: Final = 24  # one home or office NAT; nearby hosts of one household
IPV6_PREFIX: Final = 64  # the smallest prefix a household or site normally gets
TOKEN_PREFIX: Final = "ip-"  # marks tokens we derived, unlike tokens chosen by game servers
_TOKEN_HEX_CHARS: Final = 32  # 128 bits: collisions between networks are not a concern
_OCTET: Final = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
#: A dotted-quad IPv4 address exactly as ``ipaddress`` takes one (four decimal octets of 0-255,
#: no leading zero), its octets as groups: most addresses sent, read without building an
#: address object (a fifth of the cost). Anything else goes to ``ipaddress``.
IPV4: Final = re.compile(rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}")


def _network_text(ip: str) -> str | None:
    """The network of ``ip`` as ``ipaddress`` writes it (``a.b.c.0/24``), or None for an
    address that says nothing about where a player is (``_network``)."""
    quad = IPV4.fullmatch(ip.strip())
    if quad is None:
        network = _network(ip)
        return None if network is None else str(network)
    a, b, c, d = quad.groups()
    if a == "127" or (a, b) == ("169", "254") or (a, b, c, d) == ("0", "0", "0", "0"):
        return None  # loopback, link-local, unspecified
    return f"{a}.{b}.{c}.0/{IPV4_PREFIX}"


def _network(ip: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        address = ipaddress.ip_address(ip.strip())
    except ValueError:
        # Deliberately not chained and not quoting ``ip``: the input may be a real address.
        raise ValueError("ip: not a valid IPv4 or IPv6 address") from None
    if isinstance(address, ipaddress.IPv6Address):
        address = _embedded_ipv4(address) or address
    if address.is_loopback or address.is_link_local or address.is_unspecified:
        # The same on every host (127.0.0.1, fe80::1, 169.254.x.y): it says nothing about
        # where a player is, so two players with it do not share a network.
        return None
    if isinstance(address, ipaddress.IPv4Address):
        return ipaddress.IPv4Network((int(address), IPV4_PREFIX), strict=False)
    # Built from the integer so that a zone id ("fe80::1%eth0") cannot leak into the network.
    return ipaddress.IPv6Network((int(address), IPV6_PREFIX), strict=False)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 client behind an IPv6 form of its address, which must match its IPv4 form:
    ``::ffff:a.b.c.d`` (IPv4-mapped, a dual-stack socket), ``::a.b.c.d`` (IPv4-compatible,
    deprecated but still sent) and ``2002:AABB:CCDD::/48`` (6to4)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d, but not :: or ::1
        return ipaddress.IPv4Address(value)
    return None


def network_token(ip: str, key: bytes) -> str | None:
    """Return ``"ip-"`` + the first 32 hex digits of HMAC-SHA256(key, the address's network);
    None for an address that is no network identity (loopback, link-local, unspecified)."""
    if not key:
        raise ValueError("key: must not be empty (an unkeyed hash of a /24 can be reversed)")
    network = _network_text(ip)
    if network is None:
        return None
    digest = hmac.digest(key, network.encode("ascii"), "sha256").hex()  # one C call
    return TOKEN_PREFIX + digest[:_TOKEN_HEX_CHARS]
