"""Shared plumbing for the suite apps that run from a pinned virtualenv or a Debian package (suite-b's apps).

Why one module: each app module should read as its recipe (what to install, how to seed, how to serve), not as
install boilerplate. Installs reuse ``tests.thirdparty`` (locks, stamps, one-line errors) so a benchmark run and
the tests never install the same thing twice.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.suite.registry import INSTALL_DIR
from tests.thirdparty import InstallError, _locked, _run


def venv_dir(name: str) -> Path:
    return INSTALL_DIR / f"{name}-venv"


def venv_bin(name: str, program: str) -> Path:
    return venv_dir(name) / "bin" / program


def pip_app(name: str, requirements: list[str], version: str) -> tuple[Callable[[], None], Callable[[], bool]]:
    """``install``/``installed`` for an app pip-installed (pinned) into its own venv ``tools/thirdparty/<name>-venv``;
    ``requirements`` are pinned specs (the app first, then any pinned extras its recipe needs)."""
    from tests.thirdparty_apps import install_venv_app

    venv = venv_dir(name)

    def install() -> None:
        if installed():
            return
        install_venv_app(name, venv, requirements[0], version)
        for extra in requirements[1:]:
            _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", extra], f"pip install {extra}")

    def installed() -> bool:
        stamp = venv / ".installed-version"
        return stamp.exists() and stamp.read_text().strip() == version and (venv / "bin" / "python").exists()

    return install, installed


def apt_app(name: str, packages: list[str], probe: Path) -> tuple[Callable[[], None], Callable[[], bool]]:
    """``install``/``installed`` for an app from Debian packages: ``apt-get install`` when running as root, else one
    clear line saying which packages to install. ``probe`` is a file the packages provide."""

    def installed() -> bool:
        return probe.exists()

    def install() -> None:
        if installed():
            return
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise InstallError(f"{name} needs the Debian packages {' '.join(packages)}: "
                               f"run `apt-get install -y {' '.join(packages)}` as root")
        with _locked(f"apt-{name}"):
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for argv in (["apt-get", "update", "-q"],
                         ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
                done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, check=False)
                if done.returncode != 0:
                    raise InstallError(f"{name}: {' '.join(argv)} failed (exit {done.returncode}): "
                                       f"{(done.stdout + done.stderr).strip().splitlines()[-1:]}")
        if not installed():
            raise InstallError(f"{name}: apt-get installed {' '.join(packages)} but {probe} is missing")

    return install, installed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(argv: list[str], health_url: str, *, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout_s: float = 90.0) -> Iterator[subprocess.Popen[bytes]]:
    """Run the app's own server while a seed talks to it through its API; stopped (and waited for) after."""
    proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise InstallError(f"{argv[0]} exited ({proc.returncode}) while seeding: {err.strip()[-500:]}")
            try:
                with urllib.request.urlopen(health_url, timeout=5):
                    break
            except urllib.error.HTTPError as exc:
                if exc.code < 500:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise InstallError(f"{argv[0]} did not answer {health_url} within {timeout_s:.0f}s while seeding")
            time.sleep(0.3)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        if proc.stderr:
            proc.stderr.close()


def quiesce_sqlite(folder: Path) -> list[Path]:
    """Switch every SQLite database under ``folder`` from WAL to a rollback journal (its content unchanged).

    Why: a snapshot is read by every instance's copy, and a reader of a WAL database writes the ``-wal``/``-shm``
    side files next to it, so the pristine folder would change under its readers; a database in rollback-journal
    mode is read without writing anything. The app switches its copy back to WAL when it wants to."""
    import sqlite3

    done = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name.endswith(("-wal", "-shm", "-journal")):
            continue
        with p.open("rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                continue
        con = sqlite3.connect(p)
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("PRAGMA journal_mode=DELETE")
        finally:
            con.close()
        for side in ("-wal", "-shm"):
            Path(f"{p}{side}").unlink(missing_ok=True)
        done.append(p)
    return done
