"""Start ``trajforge review serve`` as a real process (uvicorn on a free loopback port) for server / browser tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests import servers


def add_user(db_url: str, name: str, password: str, *extra: str) -> None:
    """Create an account through the CLI, as an administrator would."""
    env = {**os.environ, "TRAJFORGE_REVIEW_PASSWORD": password}
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "review", "user", "add", name, "--db", db_url,
                           *extra], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@contextmanager
def serve(version: Path, db_url: str, log_dir: Path, *extra: str | os.PathLike[str],
          name: str = "review") -> Iterator[str]:
    """The base URL of a review server over ``version``; stopped by PID on exit."""
    port = servers.free_port()
    argv: Sequence[str | os.PathLike[str]] = [
        sys.executable, "-m", "pipelines.cli", "review", "serve", "--data", str(version), "--db", db_url,
        "--port", str(port), *extra]
    proc = servers.start_process(name, argv, env={"PYTHONUNBUFFERED": "1"}, log_dir=log_dir)
    url = f"http://{servers.LOOPBACK}:{port}"
    try:
        servers.wait_until_ready(proc, url + "/healthz", timeout_s=90)
        yield url
    finally:
        proc.stop()
