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

# Test tiers. Unmarked tests are the fast tier (`make test-fast`, < 3 minutes, no browser, no servers); CI runs
# every tier (`make test`). A test that uses one of these fixtures, directly or through another fixture, gets the
# tier's marker automatically, so a new browser test cannot slip into the fast tier by forgetting a decorator.
TIER_MARKERS = {
    "browser": "starts Chromium, chromedriver or Appium",
    "server": "starts another real server (demo app, PostgreSQL, a third-party app, an HTTP server)",
    "e2e": "runs a whole CLI job or pipeline end to end",
    "slow": "takes more than a few seconds for another reason",
}
TIER_FIXTURES = {
    "chromium_binary": "browser",
    "chromedriver_url": "browser",
    "appium_url": "browser",
    "browser_profile_dir": "browser",
    "demo_app_url": "server",
    "pg_server": "server",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, doc in TIER_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in TIER_FIXTURES.items():
            if fixture in used:
                item.add_marker(marker)


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
