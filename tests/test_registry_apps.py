"""The benchmark's newer registry apps — datasette and Trac (PyPI), a docsify site and Node-RED (npm) — each
installed by the test setup (pinned, ``tests/thirdparty_apps.py``), started fresh and seeded, and crawled for a
handful of steps with the config a user would write from its README, in real Chromium.

Each crawl must get past the entry screen (reach an in-app screen at another address, or other screens of a
one-page editor), leave every seeded record as it was, and its own-code coverage must be measured: coverage.py
lines for the Python apps (the server saves them on SIGTERM; datasette's also split into the entry screen's
baseline and the lines only the crawl reached), Chromium's precise coverage of the page's own
scripts for docsify and Node-RED (whose deployed flows must stay as seeded: Deploy is denied). Trac also checks
its reset hook: a ticket filed after the seed is deleted, the seeded ones stay.
"""

from __future__ import annotations

import sqlite3
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest

from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.js_coverage import JsCoverage, summary_of
from explorers.local_servers import ManagedProcess
from explorers.profiles import VIEWPORTS, Profile
from explorers.reset import run_reset
from explorers.sessions import EndpointSpec
from explorers.store import GraphStore
from tests import thirdparty, thirdparty_apps

STEPS = 6
pytestmark = pytest.mark.server


def _start(start: Callable[..., ManagedProcess], data: Path, **kw: Any) -> ManagedProcess:
    try:
        return start(data, log_dir=data, **kw)
    except thirdparty.InstallError as exc:
        from conftest import require  # skip locally (no registry reachable), fail under CI

        require(False, "a third-party test app", f"{exc} (python -m tests.thirdparty install)")
        raise


def _crawl(out: Path, driver_url: str, app: dict[str, Any]) -> tuple[Crawler, list[str]]:
    cfg = parse_config({"run_id": "registry", "output": str(out), "devices": [{"name": "d0", "url": driver_url}],
                        "apps": [app], "budget": {"max_steps": STEPS, "max_seconds": 600, "max_restarts": 10}})
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", driver_url))
    stats = crawler.run()
    # The budget counts actions, restarts and opened URLs (a landing still drawing is reloaded: a restart).
    assert stats.budget_used == STEPS and stats.steps > 0 and stats.errors == 0, stats
    GraphStore(out, app["id"]).export()
    locations = pq.read_table(out / app["id"] / "nodes.parquet", columns=["location"]).column("location").to_pylist()
    return crawler, locations


def _past_entry(entry: str, locations: list[str]) -> list[str]:
    """In-app screens at another address than the entry (another page, or another hash route of a one-page app)."""
    host = urlsplit(entry).hostname
    return [loc for loc in locations if urlsplit(loc).hostname == host and loc.rstrip("/#") != entry.rstrip("/#")]


def _left_entry(crawler: Crawler, min_states: int = 3) -> bool:
    """A one-page app keeps its address: past its entry screen means an action led from a screen a restart landed
    on to another screen, and the crawl found at least ``min_states``.

    Every restart's landing counts as the entry, not only the first: on a loaded machine the first capture of an
    editor can come before it has drawn itself (Node-RED's ``/`` before it routes to ``#flow/tab1``); the policy
    then reloads, and the actions start from the second landing."""
    steps = [step for _w, step in crawler.store.steps()]
    landings = {step.observations[-1].state for step in steps if step.restart and step.observations}
    moved = any(step.transition.from_state in landings and step.transition.to_state != step.transition.from_state
                for step in steps if step.transition is not None)
    return moved and len(crawler.graph.states) >= min_states


def test_datasette_from_pypi(tmp_path: Path, chromedriver_url: str) -> None:
    data = tmp_path / "ds"
    cov = data / "cov.sqlite"
    proc = _start(thirdparty_apps.start_datasette, data, coverage_file=cov)
    try:
        before = thirdparty_apps.datasette_rows(data)
        app = thirdparty_apps.datasette_app(proc.url)
        urllib.request.urlopen(app["entry"], timeout=30).read()  # the entry screen once: the coverage baseline
        thirdparty.mark_baseline(proc, cov)
        _crawler, locations = _crawl(tmp_path / "out", chromedriver_url, app)
        assert _past_entry(app["entry"], locations), locations
        assert thirdparty.changed_rows(before, thirdparty_apps.datasette_rows(data)) == []
        assert sum(len(rows) for rows in before.values()) == 8 + 22 + 6 + 30
    finally:
        proc.stop()  # SIGTERM: the server saves the lines that ran
    python = thirdparty_apps.install_datasette()
    lines = thirdparty.line_coverage(python, cov)
    assert thirdparty_apps.covered_lines(python, cov) == lines["lines"] > 100
    # the entry page's code is the baseline; the table and facet pages the crawl opened ran code beyond it
    assert lines["baseline_lines"] > 100 and lines["beyond_lines"] > 20, lines
    assert lines["baseline_lines"] + lines["beyond_lines"] == lines["lines"], lines


def test_trac_from_pypi_and_its_reset_hook(tmp_path: Path, chromedriver_url: str) -> None:
    data = tmp_path / "trac"
    proc = _start(thirdparty_apps.start_trac, data, coverage_file=data / "cov.sqlite")
    try:
        before = thirdparty_apps.trac_rows(data)
        assert len(before["ticket"]) == len(thirdparty_apps.TRAC_TICKETS)
        app = thirdparty_apps.trac_app(proc.url)
        crawler, locations = _crawl(tmp_path / "out", chromedriver_url, app)
        assert _past_entry(app["entry"], locations), locations
        assert thirdparty.changed_rows(before, thirdparty_apps.trac_rows(data)) == []
        blocked = [e for e in crawler.audit.entries() if e["decision"] == "blocked"]
        assert any("/login" in e["reason"] or "Login" in e["action"] for e in blocked), blocked
    finally:
        proc.stop()
    assert thirdparty_apps.covered_lines(thirdparty_apps.install_trac(), data / "cov.sqlite") > 100
    # The reset hook removes a ticket filed after the seed and keeps the seeded ones.
    db = data / "env" / "db" / "trac.db"
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO ticket (id, summary, status) VALUES (?, 'filed by the crawl', 'new')",
                    (len(thirdparty_apps.TRAC_TICKETS) + 1,))
    run_reset(parse_config({"run_id": "r", "output": str(tmp_path), "devices": [{"name": "d", "url": "http://x"}],
                            "apps": [{"id": "t", "entry": "http://x/", "reset": thirdparty_apps.trac_reset(data)}]}
                           ).apps[0].reset)
    after = thirdparty_apps.trac_rows(data)
    assert sorted(after["ticket"]) == sorted(before["ticket"])


def test_docsify_site_from_npm_with_js_coverage(tmp_path: Path, chromedriver_url: str) -> None:
    proc = _start(thirdparty_apps.start_docsify, tmp_path / "docs")
    try:
        app = {**thirdparty_apps.docsify_app(proc.url), "js_coverage": True}
        crawler, locations = _crawl(tmp_path / "out", chromedriver_url, app)
    finally:
        proc.stop()
    assert _left_entry(crawler), locations  # the cover page was left (for the page, a sidebar route, search)
    js = summary_of(crawler.store.dir)
    assert js is not None and js["covered_functions"] > 50 and 0 < js["covered_bytes"] < js["bytes"], js
    saved = JsCoverage.load(next((crawler.store.dir / "js-coverage").glob("*.json")))
    scripts = {s.url.rsplit("/", 1)[-1] for s in saved.scripts.values()}
    assert {"docsify.js", "search.js"} <= scripts, scripts


def test_node_red_editor_from_npm_with_js_coverage(tmp_path: Path, chromedriver_url: str) -> None:
    data = tmp_path / "nr"
    proc = _start(thirdparty_apps.start_node_red, data)
    try:
        before = thirdparty_apps.node_red_flows(data)
        app = {**thirdparty_apps.node_red_app(proc.url), "js_coverage": True}
        crawler, locations = _crawl(tmp_path / "out", chromedriver_url, app)
        assert thirdparty.changed_rows(before, thirdparty_apps.node_red_flows(data)) == []  # nothing deployed
    finally:
        proc.stop()
    # A one-page editor: past the entry screen means another screen (a menu, a sidebar tab, a dialog) was reached;
    # in 6 steps greedy mostly presses palette entries, which change nothing, so one other screen is the bar here.
    assert _left_entry(crawler, min_states=2), locations
    js = summary_of(crawler.store.dir)
    assert js is not None and js["covered_functions"] > 200 and 0 < js["covered_bytes"] < js["bytes"], js


def test_the_installers_are_idempotent_and_pinned() -> None:
    """A second install is a stamp check (no pip, no npm), and the stamps hold the pinned versions."""
    try:
        paths = [thirdparty_apps.install_datasette(), thirdparty_apps.install_trac(), thirdparty_apps.install_docsify(),
                 thirdparty_apps.install_node_red()]
    except thirdparty.InstallError as exc:
        from conftest import require

        require(False, "a third-party test app", str(exc))
        raise
    assert all(p.exists() for p in paths)
    for venv, version in ((thirdparty_apps.DATASETTE_VENV, thirdparty_apps.DATASETTE_VERSION),
                          (thirdparty_apps.TRAC_VENV, thirdparty_apps.TRAC_VERSION),
                          (thirdparty_apps.DOCSIFY_DIR, thirdparty_apps.DOCSIFY_VERSION),
                          (thirdparty_apps.NODE_RED_DIR, thirdparty_apps.NODE_RED_VERSION)):
        assert (venv / ".installed-version").read_text().strip() == version
    done = subprocess.run([str(paths[0]), "-c", "import datasette; print(datasette.__version__)"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == thirdparty_apps.DATASETTE_VERSION
