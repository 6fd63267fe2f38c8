"""Shared fixtures that start real servers (demo app, chromedriver, Appium) on free loopback ports.

Servers are session-scoped because starting them costs seconds and they hold no per-test state;
browser sessions (cheap to isolate, expensive to share) are created by the tests themselves.
A missing binary skips the dependent tests locally but fails them under CI (env ``CI`` set), so a
green CI run can never mean "nothing actually ran".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import servers


def require(condition: bool, what: str, hint: str) -> None:
    """Skip (locally) or fail (CI) when a prerequisite is missing, with a message saying how to fix it."""
    if condition:
        return
    message = f"{what} is missing; {hint}"
    if os.environ.get("CI"):
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message)


BOOTSTRAP_HINT = "run `make bootstrap` (scripts/bootstrap.sh)"


@pytest.fixture(scope="session")
def server_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory for all server logs of the run, so a failure message can point at them."""
    return tmp_path_factory.mktemp("server-logs")


@pytest.fixture(scope="session")
def demo_app_url(server_log_dir: Path) -> Iterator[str]:
    """Base URL of ``explorers.demo_app`` served by the test interpreter (the venv's python)."""
    proc = servers.start_demo_app(sys.executable, log_dir=server_log_dir)
    try:
        yield proc.url
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def chromium_binary() -> Path:
    """Path of the system Chromium, or skip/fail when it is not installed."""
    require(servers.CHROMIUM_BINARY.exists(), str(servers.CHROMIUM_BINARY), BOOTSTRAP_HINT)
    return servers.CHROMIUM_BINARY


@pytest.fixture(scope="session")
def chromedriver_url(chromium_binary: Path, server_log_dir: Path) -> Iterator[str]:
    """Base URL of a system chromedriver (needs Chromium too, since every session launches one)."""
    require(servers.CHROMEDRIVER_BINARY.exists(), str(servers.CHROMEDRIVER_BINARY), BOOTSTRAP_HINT)
    proc = servers.start_chromedriver(log_dir=server_log_dir)
    try:
        yield proc.url
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def appium_url(chromium_binary: Path, server_log_dir: Path) -> Iterator[str]:
    """Base URL of the repo-local Appium server with the Chromium driver from the repo-local APPIUM_HOME."""
    require(servers.APPIUM_BINARY.exists(), f"Appium ({servers.APPIUM_BINARY})", BOOTSTRAP_HINT)
    require(
        servers.APPIUM_CHROMIUM_DRIVER_DIR.is_dir(),
        f"appium-chromium-driver ({servers.APPIUM_CHROMIUM_DRIVER_DIR})",
        BOOTSTRAP_HINT,
    )
    require(servers.CHROMEDRIVER_BINARY.exists(), str(servers.CHROMEDRIVER_BINARY), BOOTSTRAP_HINT)
    proc = servers.start_appium(log_dir=server_log_dir)
    try:
        yield proc.url
    finally:
        proc.stop()


@pytest.fixture
def browser_profile_dir(tmp_path: Path) -> Path:
    """A fresh, empty Chromium ``--user-data-dir`` per test, so no cookies or cache leak between tests."""
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    return profile


_TIMINGS = pytest.StashKey[dict[str, list[float]]]()


@pytest.fixture
def session_timings(request: pytest.FixtureRequest) -> Callable[[str], Callable[[float], None]]:
    """``session_timings("appium")(seconds)`` records a WebDriver session start for the run summary.

    Session start-up is the dominant fixed cost of a crawl worker, so the suite reports it every run.
    """
    store = request.config.stash.setdefault(_TIMINGS, {})

    def recorder(kind: str) -> Callable[[float], None]:
        return store.setdefault(kind, []).append

    return recorder


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    timings = config.stash.get(_TIMINGS, {})
    if not timings:
        return
    terminalreporter.section("WebDriver session start")
    for kind, values in sorted(timings.items()):
        shown = ", ".join(f"{v:.2f}s" for v in values)
        mean = sum(values) / len(values)
        terminalreporter.write_line(f"{kind}: mean {mean:.2f}s over {len(values)} ({shown})")
