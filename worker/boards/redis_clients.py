"""Redis clients for the leaderboards: one Redis server, or a Redis Cluster.

The queue (RQ, the inbox, the dead-letter registry) always needs one plain Redis: RQ does not
run on a Redis Cluster. The leaderboards may live elsewhere (``LEADERBOARD_REDIS_URL``),
including on a Redis Cluster, because every leaderboard key carries its ladder's hash tag
and so one ladder's keys share one slot.

URLs:

- ``redis://host:6379/0``, ``rediss://...``, ``unix://...``: one Redis server.
- ``redis+cluster://[user:password@]host:port[,host:port...][?options]`` and
  ``rediss+cluster://...`` (TLS): a Redis Cluster. The listed nodes are only where discovery
  starts; the client learns the rest of the cluster from them. A cluster has database 0
  only, so a path other than empty, ``/`` or ``/0`` is refused.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from redis import Redis
from redis.cluster import ClusterNode, RedisCluster

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
HEALTH_CHECK_INTERVAL = 30


class RedisURLError(ValueError):
    """A Redis URL that names no usable server or cluster."""


def is_cluster_url(url: str) -> bool:
    return url.partition("://")[0].lower() in CLUSTER_SCHEMES


def leaderboard_client(url: str, **options: Any) -> Redis | RedisCluster:
    """A client for ``url``: a ``RedisCluster`` for a ``redis+cluster://`` URL, else ``Redis``."""
    options.setdefault("health_check_interval", HEALTH_CHECK_INTERVAL)
    if not is_cluster_url(url):
        return Redis.from_url(url, **options)
    first, others = _cluster_urls(url)
    return RedisCluster.from_url(first, startup_nodes=others, **options)


def _cluster_urls(url: str) -> tuple[str, list[ClusterNode]]:
    """Split a cluster URL into a plain URL for its first node and the other startup nodes."""
    scheme, _, rest = url.partition("://")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    userinfo, at, hosts = netloc.rpartition("@")
    path = tail.partition("?")[0]
    if path not in ("", "/", "/0"):
        raise RedisURLError(f"a Redis Cluster has database 0 only, not {path.lstrip('/')!r}")
    nodes = [_node(hostport) for hostport in hosts.split(",") if hostport.strip()]
    if not nodes:
        raise RedisURLError("a redis+cluster:// URL names no node")
    base = CLUSTER_SCHEMES[scheme.lower()]
    first = f"{base}://{userinfo}{at}{nodes[0].host}:{nodes[0].port}{tail}"
    return first, nodes[1:]


def _node(hostport: str) -> ClusterNode:
    parsed = urlsplit(f"redis://{hostport.strip()}")
    try:
        port = parsed.port or 6379
    except ValueError:
        raise RedisURLError(f"not a host:port: {hostport!r}") from None
    if not parsed.hostname:
        raise RedisURLError(f"not a host:port: {hostport!r}")
    return ClusterNode(parsed.hostname, port)  # type: ignore[no-untyped-call]
