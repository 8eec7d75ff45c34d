"""Network tokens: a keyed hash of the network an IP address belongs to.

Source: SPEC 2.4 step 4 and its **decision**: if a game server sends a raw IP instead of an
opaque network token, the worker turns it into a keyed hash of the IPv4 /24 or IPv6 /64 and
never stores or logs the raw address. Seed 004 explains why a shared network matters: the
easiest way to fake a rating is to play oneself from two devices at home.

The hash is keyed (HMAC) because there are only 2^24 IPv4 /24s: an unkeyed hash could be
reversed by trying them all. Error messages leave the address out too, since they get logged.
"""

import hashlib
import hmac
import ipaddress
from typing import Final

__all__ = ["IPV4_PREFIX", "IPV6_PREFIX", "TOKEN_PREFIX", "network_token"]

IPV4_PREFIX: Final = 24  # one home or office NAT; nearby hosts of one household
IPV6_PREFIX: Final = 64  # the smallest prefix a household or site normally gets
TOKEN_PREFIX: Final = "ip-"  # marks tokens we derived, unlike tokens chosen by game servers
_TOKEN_HEX_CHARS: Final = 32  # 128 bits: collisions between networks are not a concern


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
    network = _network(ip)
    if network is None:
        return None
    digest = hmac.new(key, str(network).encode("ascii"), hashlib.sha256).hexdigest()
    return TOKEN_PREFIX + digest[:_TOKEN_HEX_CHARS]
