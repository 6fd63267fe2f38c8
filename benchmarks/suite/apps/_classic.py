"""Shared pieces of the six apps the benchmark has crawled since before the suite (installers and seeds live in
``tests/thirdparty.py`` / ``tests/thirdparty_apps.py``, which the tests also use): serve scripts written once
beside the installs, and a seeding run that starts an app once so its first-start files are part of the snapshot."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from benchmarks.suite.registry import INSTALL_DIR

LOOPBACK = "127.0.0.1"
SCRIPTS = INSTALL_DIR / "suite-serve"


def serve_script(name: str, text: str) -> Path:
    """A serve script as a file (an environment's start command is an argv; a multi-line ``-c`` would need shell
    quoting), rewritten only when its text changed."""
    SCRIPTS.mkdir(parents=True, exist_ok=True)
    path = SCRIPTS / f"serve_{name}.py"  # never the package's own name: the script's folder is on sys.path
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node is not installed (scripts/bootstrap.sh installs node and npm)")
    return found


def _port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def run_once(argv_for_port: list[str], cwd: Path, visit: list[str], ready: str = "/", timeout_s: float = 60) -> None:
    """Start the app on a free port, wait for ``ready``, GET each of ``visit`` (what a first user does: the app
    creates its first-run data), then stop it — so the snapshot holds what the app writes when it first runs."""
    port = _port()
    argv = [a.replace("{port}", str(port)) for a in argv_for_port]
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        base = f"http://{LOOPBACK}:{port}"
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(base + ready, timeout=5):
                    break
            except (urllib.error.URLError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{argv[0]} did not serve {ready} while seeding") from None
                time.sleep(0.2)
        for path in visit:
            with urllib.request.urlopen(base + path, timeout=30) as r:
                r.read()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
