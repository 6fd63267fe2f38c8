"""``trajforge graph stats`` and ``trajforge graph view`` on a real crawl, the page opened in real Chromium.

The page is what a data engineer looks at after a nightly crawl, so it is checked the way they use it: every
state is drawn with its decoded screenshot, every distinct transition is an arrow, clicking a screen shows its
details and highlights its edges, and the filter box dims the screens that do not match.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from selenium.webdriver.common.by import By

from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.demo_app.crawl_config import login_script
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import EndpointSpec, open_device

CLI = [sys.executable, "-m", "pipelines.cli"]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory, chromedriver_url: str, demo_app_url: str) -> Path:
    out = tmp_path_factory.mktemp("graph")
    cfg = parse_config({
        "run_id": "view", "output": str(out), "devices": [{"name": "d0", "url": chromedriver_url}],
        "apps": [{"id": "demo-notes", "entry": demo_app_url + "/", "login": login_script()}],
        "budget": {"max_steps": 25, "max_seconds": 600, "max_restarts": 10},
    })
    Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url)).run()
    return out / "demo-notes"


def test_graph_stats_prints_counts_and_draws_coverage(crawled: Path, tmp_path: Path) -> None:
    plot = tmp_path / "coverage.png"
    done = subprocess.run([*CLI, "graph", "stats", str(crawled), "--plot", str(plot)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    nodes = pq.read_table(crawled / "nodes.parquet").num_rows
    transitions = pq.read_table(crawled / "transitions.parquet").num_rows
    assert f"states {nodes}" in done.stdout and f"transitions {transitions}" in done.stdout
    assert "after" in done.stdout  # coverage over time
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 5000


def test_graph_view_page_draws_every_state_and_edge_and_reacts(crawled: Path, tmp_path: Path,
                                                                chromedriver_url: str) -> None:
    page = tmp_path / "graph.html"
    done = subprocess.run([*CLI, "graph", "view", str(crawled), "--out", str(page)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    nodes = pq.read_table(crawled / "nodes.parquet").to_pylist()
    trans = pq.read_table(crawled / "transitions.parquet").to_pylist()
    edges = {(t["from_state"], t["to_state"]) for t in trans if t["from_state"] != t["to_state"]}
    device = open_device(EndpointSpec("viewer", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        drv = device.driver
        drv.get(page.as_uri())
        js = drv.execute_script
        assert js("return document.querySelectorAll('.n').length") == len(nodes)
        # Every thumbnail is an inlined JPEG that the browser decoded.
        assert js("return [...document.querySelectorAll('.n image')].every(i => "
                  "i.getAttribute('href').startsWith('data:image/jpeg;base64,'))")
        assert js("""return Promise.all([...document.querySelectorAll('.n image')].map(i => new Promise(ok => {
            const img = new Image(); img.onload = () => ok(img.naturalWidth > 0); img.onerror = () => ok(false);
            img.src = i.getAttribute('href'); })))""") == [True] * len(nodes)
        drawn = js("return [...document.querySelectorAll('.e')].map(e => [e.dataset.from, e.dataset.to, "
                   "e.getAttribute('marker-end')])")
        assert {(a, b) for a, b, _m in drawn} == edges and all(m == "url(#arrow)" for *_x, m in drawn)

        # The busiest screen (the notes list): clicking it must show it and light up exactly its out-edges.
        entry = max(nodes, key=lambda n: sum(a == n["state_id"] for a, _b in edges))["state_id"]
        js("document.querySelector(`.n[data-id='${arguments[0]}']`)"
           ".dispatchEvent(new MouseEvent('click', {bubbles: true}))", entry)
        details = js("return document.getElementById('d').innerText")
        entry_node = next(n for n in nodes if n["state_id"] == entry)
        assert entry in details and entry_node["location"] in details
        outs = {b for a, b in edges if a == entry}
        assert set(js("return [...document.querySelectorAll('.e.out')].map(e => e.dataset.to)")) == outs
        assert len(outs) >= 2
        # Its actions are named the way a person would ("click 'New note'") with the screen each led to.
        acts = js("return [...document.querySelectorAll('#d ul.acts li')].map(li => li.innerText)")
        tried_here = [t for t in trans if t["from_state"] == entry]
        assert acts and len(acts) <= len(tried_here) and all(" → " in a for a in acts)
        assert any(a.startswith("click '") for a in acts)
        # A screen with a refused action lists it under Audit (the demo app's "Log out" is on the deny-list).
        audited = js("return Object.entries(INFO).filter(([k, v]) => v.audit.some(a => a.startsWith('blocked:')))"
                     ".map(([k]) => k)")
        assert audited
        js("document.querySelector(`.n[data-id='${arguments[0]}']`)"
           ".dispatchEvent(new MouseEvent('click', {bubbles: true}))", audited[0])
        assert any("Log out" in a for a in js(
            "return [...document.querySelectorAll('#d ul.audit li')].map(li => li.innerText)"))

        # Layers by depth from the entry: the first screen is in the first layer, and every arrow from a layer
        # to a deeper one goes exactly one layer deeper (BFS depth); thumbnails fill their cards.
        first = min(nodes, key=lambda n: n["first_seen"])["state_id"]
        xs = js("return Object.fromEntries([...document.querySelectorAll('.n')].map(g => [g.dataset.id, "
                "g.transform.baseVal[0].matrix.e]))")
        assert xs[first] == min(xs.values())
        layer_w = sorted(set(xs.values()))[1] - min(xs.values())
        assert all(xs[b] - xs[a] <= layer_w for a, b in edges)
        cards = js("return [...document.querySelectorAll('.n')].map(g => [g.querySelector('rect').height.baseVal"
                   ".value, g.querySelector('image').height.baseVal.value])")
        assert all(img > 0 and rect - img < 40 for rect, img in cards)

        box = drv.find_element(By.CSS_SELECTOR, "#q")
        box.send_keys("/settings")
        matching = {n["state_id"] for n in nodes if "/settings" in f"{n['title']} {n['location']}".lower()}
        shown = set(js("return [...document.querySelectorAll('.n:not(.dim)')].map(g => g.dataset.id)"))
        assert matching and shown == matching
    finally:
        device.quit()


def test_graph_view_says_when_screenshots_are_missing(crawled: Path, tmp_path: Path) -> None:
    page = tmp_path / "graph.html"
    empty = tmp_path / "no-blobs"
    empty.mkdir()
    done = subprocess.run([*CLI, "graph", "view", str(crawled), "--out", str(page), "--blob-root", str(empty)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    text = page.read_text(encoding="utf-8")
    nodes = pq.read_table(crawled / "nodes.parquet").num_rows
    assert f"{nodes} screenshot(s) not found in the blob store {empty}" in text
    assert text.count(">screenshot missing<") == nodes and "data:image/jpeg" not in text


def test_screen_details_name_the_actions_that_ran_new_code(tmp_path: Path) -> None:
    """On a coverage crawl the crawler audits, after each action, how much of the app's code ran for the first time;
    a screen's details say which of its actions did (the action is the one logged just before), and leave out the
    ones that ran nothing new."""
    import json

    from explorers.viewer import _audit

    (tmp_path / "audit").mkdir()
    lines = [
        {"step": 0, "state": "s1", "decision": "act", "action": "click 'Import'", "reason": "untried"},
        {"step": 0, "state": "s1", "decision": "js-new-code", "chars": 48211},
        {"step": 1, "state": "s2", "decision": "act", "action": "click 'Cancel'", "reason": "untried"},
        {"step": 1, "state": "s2", "decision": "js-new-code", "chars": 0},
        {"step": 2, "state": "s2", "decision": "blocked", "action": "click 'Deploy'", "reason": "deny: publish"},
    ]
    (tmp_path / "audit" / "w.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n",
                                                encoding="utf-8")
    got = _audit(tmp_path, {"s1": "s1", "s2": "s2"})
    assert got["s1"] == ["new code: 48211 characters of the app's scripts first ran after click 'Import'"]
    assert got["s2"] == ["blocked: click 'Deploy' — deny: publish"]
