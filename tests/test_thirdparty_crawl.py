"""Crawls of two real third-party apps, installed from their registries by the test setup, through the real
Appium server (Chromium driver): TiddlyWiki (npm) and I Hate Money (PyPI, in its own virtualenv).

Proves on software we did not write: several distinct states are found within a small budget, no deny-listed
action reaches the app (each app's own record: the wiki still holds every seeded tiddler, I Hate Money's access
log has no delete or logout request), every transition's observations and screenshots exist, and the exported
graph passes ``trajforge validate``. The first run installs the apps (tens of seconds; then a stamp check).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.local_servers import ManagedProcess
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import EndpointSpec
from explorers.store import GraphStore
from tests import thirdparty
from tests.app_resets import stored_tiddler

STEPS = 14


def _serve(start: Any, data: Path, log_dir: Path) -> Iterator[ManagedProcess]:
    try:
        proc = start(data, log_dir=log_dir)
    except thirdparty.InstallError as exc:
        from conftest import require  # skip locally, fail under CI

        require(False, "a third-party test app", f"{exc} (python -m tests.thirdparty install)")
        raise
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def tiddlywiki(tmp_path_factory: pytest.TempPathFactory, server_log_dir: Path) -> Iterator[ManagedProcess]:
    yield from _serve(thirdparty.start_tiddlywiki, tmp_path_factory.mktemp("wiki") / "wiki", server_log_dir)


@pytest.fixture(scope="module")
def ihatemoney(tmp_path_factory: pytest.TempPathFactory, server_log_dir: Path) -> Iterator[ManagedProcess]:
    yield from _serve(thirdparty.start_ihatemoney, tmp_path_factory.mktemp("ihm"), server_log_dir)


def _crawl(out: Path, appium_url: str, app: dict[str, Any], profile: Profile) -> tuple[Crawler, int]:
    """Crawl; returns the crawler and the actions it took (the budget also pays restarts and opened URLs)."""
    cfg = parse_config({
        "run_id": "thirdparty", "output": str(out),
        "devices": [{"name": "appium", "url": appium_url, "kind": "appium-chromium"}],
        "apps": [app], "budget": {"max_steps": STEPS, "max_seconds": 600, "max_restarts": 10},
    })
    crawler = Crawler(cfg, cfg.apps[0], profile, EndpointSpec("appium", appium_url, "appium-chromium"))
    stats = crawler.run()
    assert stats.budget_used == STEPS, stats
    assert stats.session_restarts == 0, stats
    return crawler, stats.steps


def _check_graph(crawler: Crawler, steps: int, min_states: int) -> list[dict[str, Any]]:
    """Export through the CLI, validate through the CLI, and check the graph's own invariants."""
    app_dir = crawler.store.dir
    cli = [sys.executable, "-m", "pipelines.cli"]
    done = subprocess.run([*cli, "graph", "export", str(app_dir)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([*cli, "validate", str(app_dir / "observations.parquet"),
                           str(app_dir / "transitions.parquet")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    nodes = pq.read_table(app_dir / "nodes.parquet").to_pylist()
    assert len(nodes) >= min_states, [n["title"] for n in nodes]
    obs = {o["id"]: o for o in pq.read_table(app_dir / "observations.parquet").to_pylist()}
    trans = pq.read_table(app_dir / "transitions.parquet").to_pylist()
    assert len(trans) == steps and len({t["id"] for t in trans}) == steps  # one transition per action
    assert sum(t["effective"] for t in trans) >= min_states - 2, "most steps should have changed the screen"
    blobs = GraphStore(app_dir.parent, app_dir.name).blobs
    for t in trans:
        for side in ("from_observation_id", "to_observation_id"):
            o = obs[t[side]]
            assert blobs.exists(o["screenshot_sha256"]), f"{t['id']}: screenshot of {side} missing"
    # No executed action was one the guard refused on the same screen. Compared by candidate key (the element's
    # place on the page) and description together: a page holds several controls that read the same ("link" icons
    # to GitHub and into the app), and one DOM path can hold another element in a later capture of the state.
    audit = crawler.audit.entries()
    blocked = {(e["state"], e["key"], e["action"]) for e in audit if e["decision"] == "blocked"}
    acted = {(e["state"], e["key"], e["action"]) for e in audit if e["decision"] == "act"}
    assert blocked, "the deny-list should have refused something on a real app"
    assert not (acted & blocked), sorted(acted & blocked)
    # A label the deny-list refuses is refused wherever it shows: no control with that label was ever acted on.
    assert not thirdparty.refused_labels(audit) & {e["action"] for e in audit if e["decision"] == "act"}
    return nodes


def test_tiddlywiki_from_npm_crawled_through_appium(tmp_path: Path, appium_url: str,
                                                    tiddlywiki: ManagedProcess) -> None:
    before = thirdparty.tiddler_titles(tiddlywiki.url)
    assert set(thirdparty.SEED_TIDDLERS) <= before
    crawler, steps = _crawl(tmp_path, appium_url, thirdparty.tiddlywiki_app(tiddlywiki.url),
                            Profile(VIEWPORTS["desktop"]))
    _check_graph(crawler, steps, min_states=5)
    # The wiki's own record: every tiddler that existed before the crawl still exists.
    assert before <= thirdparty.tiddler_titles(tiddlywiki.url)


DENIED_PATH = re.compile(r"/(delete|exit)\b|/members/\d+/delete")


def test_ihatemoney_from_pypi_crawled_through_appium(tmp_path: Path, appium_url: str,
                                                     ihatemoney: ManagedProcess) -> None:
    crawler, steps = _crawl(tmp_path, appium_url, thirdparty.ihatemoney_app(ihatemoney.url),
                            Profile(VIEWPORTS["phone"], locale="zh"))
    nodes = _check_graph(crawler, steps, min_states=4)
    assert any("/demo/" in n["location"] for n in nodes), "the demo project was entered"
    # The app's own access log: the crawl made requests, and none of them deleted or logged out anything.
    requests = thirdparty.requests_logged(ihatemoney)
    assert len(requests) > STEPS // 2
    bad = [(m, p) for m, p in requests if m == "POST" and DENIED_PATH.search(p)]
    assert bad == []


@pytest.mark.server  # starts the app's own server
def test_the_wiki_reset_undoes_system_tiddlers_too(tmp_path: Path, server_log_dir: Path) -> None:
    """A crawl that presses "retain story ordering" in the control panel writes ``$:/DefaultTiddlers``, which
    decides the start screen; the server's tiddler list leaves system tiddlers out, so a reset made from it alone
    let every later episode, probe and replay start on whatever the crawl last had open."""
    import json
    import urllib.parse
    import urllib.request

    from explorers.reset import ResetConfig, run_reset

    wiki = tmp_path / "wiki"
    served = _serve(thirdparty.start_tiddlywiki, wiki, server_log_dir)
    proc = next(served)
    try:
        def put(title: str, text: str) -> None:
            body = json.dumps({"title": title, "text": text}).encode()
            req = urllib.request.Request(f"{proc.url}/recipes/default/tiddlers/{urllib.parse.quote(title, safe='')}",
                                         data=body, method="PUT",
                                         headers={"X-Requested-With": "TiddlyWiki", "Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=10).close()

        def text(title: str) -> str:  # a core tiddler deleted from the store reads as its shadow again
            url = f"{proc.url}/recipes/default/tiddlers/{urllib.parse.quote(title, safe='')}"
            with urllib.request.urlopen(url, timeout=10) as r:
                return str(json.loads(r.read()).get("text", ""))

        seeded = thirdparty.tiddler_titles(proc.url)
        story = stored_tiddler(proc.url, "$:/StoryList")
        assert story is not None  # the seed holds it: a system tiddler the server's list leaves out
        run_reset(ResetConfig.model_validate(thirdparty.tiddlywiki_reset(proc.url, wiki)))
        after = stored_tiddler(proc.url, "$:/StoryList")
        assert after is not None and after.get("revision") == story.get("revision")  # nothing changed: nothing written
        put("$:/DefaultTiddlers", "[list[$:/StoryList]]")
        put("Junk page", "typed by a crawl")
        assert text("$:/DefaultTiddlers") == "[list[$:/StoryList]]"
        assert "Junk page" in thirdparty.tiddler_titles(proc.url)
        run_reset(ResetConfig.model_validate(thirdparty.tiddlywiki_reset(proc.url, wiki)))
        assert text("$:/DefaultTiddlers").strip() == "GettingStarted"  # the start screen is the seed's again
        assert not (wiki / "tiddlers" / "$__DefaultTiddlers.tid").exists()
        assert thirdparty.tiddler_titles(proc.url) == seeded
    finally:
        served.close()  # the generator's own finally stops the server


@pytest.mark.server  # starts the app's own server
def test_the_money_reset_drops_every_project_and_the_demo_comes_back(tmp_path: Path, server_log_dir: Path) -> None:
    """A project a crawl created outlived the reset (which dropped only the demo), so a replayed "Create a project
    titled …" task was refused as a duplicate on every fresh instance. After the reset no project is left, and the
    next visit to ``/demo`` brings the demo back with its bills."""
    import sqlite3
    import urllib.request

    from explorers.reset import ResetConfig, run_reset

    data = tmp_path / "ihm"
    served = _serve(thirdparty.start_ihatemoney, data, server_log_dir)
    proc = next(served)
    db = data / "ihatemoney.db"

    def projects() -> list[str]:
        with sqlite3.connect(db) as con:
            return sorted(r[0] for r in con.execute("SELECT id FROM project"))

    try:
        urllib.request.urlopen(proc.url + "/demo", timeout=30).close()
        with sqlite3.connect(db) as con:  # what a crawl's "Create" leaves: another project, a copy of the demo
            con.row_factory = sqlite3.Row
            row = dict(con.execute("SELECT * FROM project WHERE id = 'demo'").fetchone())
            row.update(id="weekly-team-sync", name="Weekly team sync")
            con.execute(f"INSERT INTO project ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                        list(row.values()))
        assert projects() == ["demo", "weekly-team-sync"]
        run_reset(ResetConfig.model_validate(thirdparty.ihatemoney_reset(data)))
        assert projects() == []
        urllib.request.urlopen(proc.url + "/demo", timeout=30).close()
        assert projects() == ["demo"]
        with sqlite3.connect(db) as con:
            assert con.execute("SELECT COUNT(*) FROM bill").fetchone()[0] > 0
    finally:
        served.close()
