"""A throw-away PostgreSQL server for tests, from Debian's ``postgresql`` package.

Why a real server: the review labels must work on PostgreSQL in production (append-only triggers, time zones,
concurrent writers), and SQLite would hide dialect differences. The server gets a fresh cluster in a temp
dir, listens only on a free loopback port (unix socket in the same temp dir), and is stopped by its PID.
PostgreSQL refuses to run as root, so when the tests run as root the cluster is created and run as the
``postgres`` system user.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import LOOPBACK, free_port

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
RUN_AS = "postgres"
DB_USER = "trajforge"


def pg_bin(name: str) -> Path | None:
    for d in PG_BIN_DIRS:
        if (d / name).exists():
            return d / name
    found = shutil.which(name)
    return Path(found) if found else None


def available() -> bool:
    return pg_bin("initdb") is not None and pg_bin("postgres") is not None


@dataclass
class PgServer:
    url: str
    popen: subprocess.Popen[bytes]
    base: Path

    def stop(self) -> None:
        """Fast shutdown (SIGINT) by PID, SIGKILL if it lingers, then remove the cluster."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        shutil.rmtree(self.base, ignore_errors=True)


def _demote() -> dict:
    if os.geteuid() != 0:
        return {}
    pw = pwd.getpwnam(RUN_AS)
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


def start(timeout_s: float = 30.0) -> PgServer:
    """initdb + postgres on a free port; returns once it accepts connections."""
    initdb, postgres = pg_bin("initdb"), pg_bin("postgres")
    if initdb is None or postgres is None:
        raise FileNotFoundError("PostgreSQL server binaries not found (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="trajforge-pg-"))
    data, log = base / "data", base / "postgres.log"
    demote = _demote()
    if demote:
        os.chown(base, demote["user"], demote["group"])
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    subprocess.run([str(initdb), "-D", str(data), "-U", DB_USER, "--auth=trust", "-E", "UTF8", "--no-sync"],
                   check=True, capture_output=True, env=env, cwd=base, timeout=120, **demote)
    port = free_port()
    with log.open("wb") as out:
        popen = subprocess.Popen(
            [str(postgres), "-D", str(data), "-p", str(port), "-c", f"listen_addresses={LOOPBACK}",
             "-c", f"unix_socket_directories={base}", "-c", "fsync=off", "-c", "full_page_writes=off"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=base,
            start_new_session=True, **demote,
        )
    server = PgServer(f"postgresql://{DB_USER}@{LOOPBACK}:{port}/postgres", popen, base)
    isready = pg_bin("pg_isready")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            text = log.read_text(errors="replace")[-3000:]
            server.stop()
            raise RuntimeError(f"postgres exited with code {popen.returncode}:\n{text}")
        ok = subprocess.run([str(isready), "-h", LOOPBACK, "-p", str(port), "-U", DB_USER], capture_output=True)
        if ok.returncode == 0:
            return server
        time.sleep(0.2)
    server.stop()
    raise TimeoutError(f"postgres not ready on port {port} after {timeout_s}s")


def create_database(server: PgServer, name: str) -> str:
    """A fresh database on the server (tests isolate by database, not by server); returns its URL."""
    psql = pg_bin("psql")
    port = server.url.rsplit(":", 1)[1].split("/")[0]
    subprocess.run([str(psql), "-h", LOOPBACK, "-p", port, "-U", DB_USER, "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                    "-c", f'CREATE DATABASE "{name}"'], check=True, capture_output=True, timeout=30)
    return server.url.rsplit("/", 1)[0] + f"/{name}"


# --- pytest fixtures: import them into a test module (``from pg import pg_server, pg_url``) -----------------
_db_names = itertools.count()


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server per test session (skipped locally, failed under CI, when not installed)."""
    from conftest import require

    require(available(), "PostgreSQL (initdb/postgres)", "apt-get install -y postgresql")
    server = start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh, empty database on the session's server."""
    return create_database(pg_server, f"t{os.getpid()}_{next(_db_names)}")
