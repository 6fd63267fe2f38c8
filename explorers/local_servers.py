"""Local WebDriver servers (chromedriver, Appium) and the demo app as managed subprocesses.

Why this exists: the demo job, nightly runs on a single host and the tests all need real WebDriver endpoints
next to them. Each server gets a free loopback port, logs to a file (pipes would block a chatty server once
the buffer fills), and is stopped by its PID: SIGTERM to the leader so it can close its browsers, then SIGKILL
to its whole process group so no Chromium or chromedriver child outlives the run.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from explorers.capabilities import CHROMEDRIVER_BINARY, free_port

REPO_ROOT = Path(__file__).resolve().parent.parent
# Appium lives in the checkout (installed by scripts/bootstrap.sh); a farm host may point elsewhere.
APPIUM_DIR = Path(os.environ.get("TRAJFORGE_APPIUM_DIR", REPO_ROOT / "tools" / "appium"))
APPIUM_BINARY = APPIUM_DIR / "node_modules" / ".bin" / "appium"
APPIUM_HOME = APPIUM_DIR / ".appium"
APPIUM_CHROMIUM_DRIVER_DIR = APPIUM_HOME / "node_modules" / "appium-chromium-driver"
LOOPBACK = "127.0.0.1"

# Servers still running, so an interpreter exit that skips fixture teardown still stops them.
_LIVE: dict[int, ManagedProcess] = {}


@dataclass
class ManagedProcess:
    """A server subprocess that owns its own process group, plus the log file it writes to."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    url: str = ""
    _stopped: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, max_chars: int = 4000) -> str:
        """Last part of the server log, for error messages that explain why a start failed."""
        try:
            return self.log_path.read_text(errors="replace")[-max_chars:]
        except OSError:
            return "<no log>"

    def stop(self, grace_s: float = 10.0) -> None:
        """Terminate by PID, then kill the PID's process group if anything is left.

        SIGTERM lets Appium and chromedriver end their sessions (and thus their browsers) cleanly;
        the group SIGKILL afterwards catches children such as Chromium renderers that would otherwise
        be orphaned if the leader crashed or ignored the signal.
        """
        if self._stopped:
            return
        self._stopped = True
        _LIVE.pop(self.pid, None)
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.terminate()
            try:
                self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.popen.kill()
                self.popen.wait(timeout=grace_s)
        # The leader is gone; sweep its group (pgid == leader pid thanks to start_new_session).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)


def _stop_all_live() -> None:
    for proc in list(_LIVE.values()):
        proc.stop(grace_s=3.0)


atexit.register(_stop_all_live)


def start_process(
    name: str,
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO_ROOT,
    log_dir: Path | None = None,
) -> ManagedProcess:
    """Start ``argv`` in a new session (own process group) with stdout+stderr sent to a log file."""
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix=f"trajforge-{name}-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    full_env = {**os.environ, **(env or {})}
    with log_path.open("wb") as log:
        popen = subprocess.Popen(
            [str(a) for a in argv],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    proc = ManagedProcess(name=name, popen=popen, log_path=log_path)
    _LIVE[popen.pid] = proc
    return proc


def http_get(url: str, timeout_s: float = 2.0) -> tuple[int, str]:
    """GET ``url`` and return (status, body); HTTP error statuses are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status, resp.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", errors="replace")


def wait_until_ready(
    proc: ManagedProcess,
    url: str,
    *,
    ready: Callable[[int, str], bool] = lambda status, _body: status == 200,
    timeout_s: float = 60.0,
    interval_s: float = 0.1,
) -> None:
    """Poll ``url`` until ``ready(status, body)``; fail fast, with the server log, if the process dies."""
    deadline = time.monotonic() + timeout_s
    last_error = "no response yet"
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise RuntimeError(
                f"{proc.name} exited with code {proc.popen.returncode} before {url} was ready.\n"
                f"--- {proc.log_path} ---\n{proc.log_tail()}"
            )
        try:
            status, body = http_get(url)
            if ready(status, body):
                return
            last_error = f"HTTP {status}: {body[:200]}"
        except (OSError, urllib.error.URLError) as err:
            last_error = repr(err)
        time.sleep(interval_s)
    raise TimeoutError(
        f"{proc.name} not ready at {url} after {timeout_s:.0f}s ({last_error}).\n"
        f"--- {proc.log_path} ---\n{proc.log_tail()}"
    )


def _started(
    proc: ManagedProcess,
    url: str,
    ready_path: str,
    ready: Callable[[int, str], bool],
    timeout_s: float = 60.0,
) -> ManagedProcess:
    """Wait for readiness; a server that never became ready is stopped before the error propagates."""
    try:
        wait_until_ready(proc, url + ready_path, ready=ready, timeout_s=timeout_s)
    except BaseException:
        proc.stop()
        raise
    proc.url = url
    return proc


def start_demo_app(python: str | os.PathLike[str], *, log_dir: Path | None = None) -> ManagedProcess:
    """Start ``python -m explorers.demo_app`` on a free port; ready once ``/healthz`` answers "ok"."""
    port = free_port()
    proc = start_process(
        "demo_app",
        [python, "-m", "explorers.demo_app", "--host", LOOPBACK, "--port", str(port)],
        env={"PYTHONUNBUFFERED": "1"},
        log_dir=log_dir,
    )
    return _started(
        proc,
        f"http://{LOOPBACK}:{port}",
        "/healthz",
        ready=lambda status, body: status == 200 and body.strip() == "ok",
        timeout_s=30.0,
    )


def start_chromedriver(*, log_dir: Path | None = None) -> ManagedProcess:
    """Start the system chromedriver on a free port; ready once ``/status`` reports ready."""
    port = free_port()
    proc = start_process(
        "chromedriver",
        [CHROMEDRIVER_BINARY, f"--port={port}", "--allowed-ips=127.0.0.1"],
        log_dir=log_dir,
    )
    return _started(proc, f"http://{LOOPBACK}:{port}", "/status", ready=_webdriver_status_ready)


def start_appium(*, log_dir: Path | None = None) -> ManagedProcess:
    """Start the repo-local Appium server (drivers from the repo-local APPIUM_HOME) on a free port."""
    port = free_port()
    proc = start_process(
        "appium",
        [APPIUM_BINARY, "--address", LOOPBACK, "--port", str(port), "--log-no-colors"],
        env={"APPIUM_HOME": str(APPIUM_HOME)},
        log_dir=log_dir,
    )
    return _started(proc, f"http://{LOOPBACK}:{port}", "/status", ready=_webdriver_status_ready)


def _webdriver_status_ready(status: int, body: str) -> bool:
    """W3C ``/status``: HTTP 200 with ``value.ready`` true."""
    if status != 200:
        return False
    try:
        return json.loads(body).get("value", {}).get("ready") is True
    except (ValueError, AttributeError):
        return False
