"""The app's own JavaScript coverage (``explorers.js_coverage``): merging V8's precise-coverage ranges (fast), and
in real Chromium that clicking a button covers its handler's function, across a page navigation, and that a
crawl with ``js_coverage: true`` records it (``js_coverage`` off: nothing measured)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.js_coverage import JsCoverage, covered_map, is_app_script, shared_baseline, summary_of
from explorers.policy import LANDING_RETRIES
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import EndpointSpec, open_device
from tests.pages import HTML, PageHandler, serve

HOSTS = ["127.0.0.1"]


def _fn(start: int, end: int, count: int, *blocks: tuple[int, int, int]) -> dict:
    return {"functionName": "", "isBlockCoverage": True,
            "ranges": [{"startOffset": start, "endOffset": end, "count": count}]
            + [{"startOffset": s, "endOffset": e, "count": c} for s, e, c in blocks]}


def test_the_innermost_range_decides_whether_a_character_ran() -> None:
    # script [0,100) ran; a function [10,40) never ran; inside it a nested function [20,30) that did (hoisted and
    # called from outside); a block [60,70) of the script that was skipped.
    fns = [_fn(0, 100, 1, (60, 70, 0)), _fn(10, 40, 0), _fn(20, 30, 1)]
    buf = covered_map(fns, 100)
    assert sum(buf) == 100 - 30 - 10 + 10
    assert buf[15] == 0 and buf[25] == 1 and buf[65] == 0 and buf[5] == 1


def test_takes_merge_by_script_and_keep_what_ran_in_any_take() -> None:
    cov = JsCoverage(HOSTS)
    url = "http://127.0.0.1:9/app.js"
    cov.add([{"scriptId": "1", "url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 0), _fn(50, 80, 0)]}])
    # the next take (counts were reset): only the second function ran; the first's bytes stay covered
    cov.add([{"scriptId": "1", "url": url, "functions": [_fn(0, 100, 0), _fn(10, 40, 1), _fn(50, 80, 0)]}])
    s = cov.summary()
    assert s == {"scripts": 1, "bytes": 100, "covered_bytes": 70, "functions": 3, "covered_functions": 2,
                 "baseline_bytes": 0, "baseline_functions": 0, "beyond_bytes": 70, "beyond_functions": 2}


def test_a_take_reports_the_characters_that_ran_for_the_first_time() -> None:
    """What guides a coverage-guided crawl: each take's new code, not what ran again."""
    cov = JsCoverage(HOSTS)
    url = "http://127.0.0.1:9/app.js"
    top = _fn(0, 100, 1, (10, 40, 0), (50, 80, 0))  # the top level ran, two blocks of it did not
    assert cov.add([{"url": url, "functions": [top]}], baseline=True) == 40
    # an action ran the first block: 30 new characters; the top level again adds nothing
    assert cov.add([{"url": url, "functions": [_fn(0, 100, 1, (10, 40, 1), (50, 80, 0))]}]) == 30
    assert cov.add([{"url": url, "functions": [_fn(0, 100, 1, (10, 40, 1), (50, 80, 0))]}]) == 0
    # a script of another host is not the app's: never new code
    assert cov.add([{"url": "http://cdn.example/x.js", "functions": [_fn(0, 500, 1)]}]) == 0
    assert cov.summary()["covered_bytes"] == 70


def test_takes_that_report_different_parts_of_a_script_are_one_script() -> None:
    """V8 reports what it chooses per take, so the largest offset a take names varies: it is not the script's
    identity (keyed by it, docsify.js became dozens of scripts, each with an empty baseline)."""
    cov = JsCoverage(HOSTS)
    url = "http://127.0.0.1:9/app.js"
    cov.add([{"url": url, "functions": [_fn(0, 1000, 1, (100, 900, 0))]}], baseline=True)  # load: 200 ran
    # a later take reports only a function at [100, 400): it ran, and the part [100, 200) of it is new ...
    assert cov.add([{"url": url, "functions": [_fn(100, 400, 1)]}]) == 300
    # ... and a take of the page load again, reported up to offset 600 only, adds nothing and is no new script
    assert cov.add([{"url": url, "functions": [_fn(0, 600, 1, (100, 600, 0))]}]) == 0
    assert len(cov.scripts) == 1
    s = cov.summary()
    assert (s["bytes"], s["covered_bytes"], s["baseline_bytes"], s["beyond_bytes"]) == (1000, 500, 200, 300)


def test_a_coverage_file_that_holds_a_script_twice_reads_back_as_one(tmp_path: Path) -> None:
    """Files written while scripts were keyed by URL and length list one URL under several lengths."""
    cov = JsCoverage(HOSTS)
    url = "http://127.0.0.1:9/app.js"
    cov.add([{"url": url, "functions": [_fn(0, 100, 1)]}], baseline=True)
    cov.save(tmp_path / "a.json")
    data = json.loads((tmp_path / "a.json").read_text())
    other = JsCoverage(HOSTS)
    other.add([{"url": url, "functions": [_fn(50, 300, 1)]}])
    other.save(tmp_path / "b.json")
    data["scripts"] += json.loads((tmp_path / "b.json").read_text())["scripts"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    back = JsCoverage.load(tmp_path / "old.json")
    assert list(back.scripts) == [url]
    s = back.summary()
    assert (s["bytes"], s["covered_bytes"], s["baseline_bytes"], s["beyond_bytes"]) == (300, 300, 100, 200)


def test_what_the_landing_ran_is_the_baseline_and_only_code_beyond_it_counts_as_reached() -> None:
    cov = JsCoverage(HOSTS)
    url = "http://127.0.0.1:9/app.js"
    # loading the entry screen: the script's top level and an init function [50,80) ran, a handler [10,40) not
    cov.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 0), _fn(50, 80, 1)]}], baseline=True)
    assert cov.summary()["beyond_bytes"] == 0
    # an interaction: the handler ran, and init ran again (it is still baseline code)
    cov.add([{"url": url, "functions": [_fn(0, 100, 0), _fn(10, 40, 1), _fn(50, 80, 1)]}])
    s = cov.summary()
    assert (s["covered_bytes"], s["baseline_bytes"], s["beyond_bytes"]) == (100, 70, 30)
    assert (s["covered_functions"], s["baseline_functions"], s["beyond_functions"]) == (3, 2, 1)
    # a later landing (a restart) runs the handler on load because of what the crawl left behind (a draft it opened
    # is restored): that is the crawl's coverage, not the app's start-up, so the baseline stays the first landing's
    cov.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 1), _fn(50, 80, 0)]}], baseline=True)
    s = cov.summary()
    assert (s["baseline_bytes"], s["beyond_bytes"], s["beyond_functions"]) == (70, 30, 1)


def test_a_resumed_crawl_keeps_its_first_landing_as_the_baseline(tmp_path: Path) -> None:
    """A crawl resumed after a kill loads its coverage file; its next landing is a restart, not the app's start-up.
    A file written before baselines existed has none, so the resumed crawl's first landing becomes it."""
    url = "http://127.0.0.1:9/app.js"
    cov = JsCoverage(HOSTS)
    cov.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 0), _fn(50, 80, 0)]}], baseline=True)
    cov.save(tmp_path / "w1.json")
    resumed = JsCoverage.load(tmp_path / "w1.json")
    assert resumed.has_baseline
    resumed.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 1), _fn(50, 80, 0)]}], baseline=True)
    assert (resumed.summary()["baseline_bytes"], resumed.summary()["beyond_bytes"]) == (40, 30)
    data = json.loads((tmp_path / "w1.json").read_text())
    for script in data["scripts"]:
        del script["baseline"], script["baseline_called"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = JsCoverage.load(tmp_path / "old.json")
    assert not old.has_baseline
    old.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 1), _fn(50, 80, 0)]}], baseline=True)
    assert old.has_baseline and old.summary()["beyond_bytes"] == 0


def test_crawls_compared_side_by_side_are_measured_beyond_one_baseline() -> None:
    """Each crawl ran on its own instance (another port); one read its landing before the page had rendered, so
    its own baseline lacks the renderer, which then counted as code its first action reached."""
    early, late = JsCoverage(HOSTS), JsCoverage(HOSTS)
    late.add([{"url": "http://127.0.0.1:9001/app.js", "functions": [_fn(0, 200, 1, (100, 200, 0))]}], baseline=True)
    late.add([{"url": "http://127.0.0.1:9001/app.js", "functions": [_fn(150, 200, 1)]}])
    early.add([{"url": "http://127.0.0.1:9002/app.js", "functions": [_fn(0, 200, 1, (50, 200, 0))]}], baseline=True)
    early.add([{"url": "http://127.0.0.1:9002/app.js", "functions": [_fn(50, 100, 1), _fn(150, 200, 1)]}])
    assert (early.summary()["beyond_bytes"], late.summary()["beyond_bytes"]) == (100, 50)
    shared = shared_baseline({"early": early, "late": late})
    assert (shared["early"]["beyond_bytes"], shared["late"]["beyond_bytes"]) == (50, 50)  # the same code reached
    assert shared["early"]["covered_bytes"] == early.summary()["covered_bytes"]  # raw totals are untouched


def test_the_baseline_survives_save_load_and_merges_across_workers(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/app.js"
    a, b = JsCoverage(HOSTS), JsCoverage(HOSTS)
    a.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 0)]}], baseline=True)
    a.add([{"url": url, "functions": [_fn(0, 100, 0), _fn(10, 40, 1)]}])
    b.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 1)]}], baseline=True)  # b's landing ran it
    a.save(tmp_path / "js-coverage" / "w1.json")
    b.save(tmp_path / "js-coverage" / "w2.json")
    assert JsCoverage.load(tmp_path / "js-coverage" / "w1.json").summary()["beyond_bytes"] == 30
    merged = summary_of(tmp_path)
    assert merged is not None and merged["beyond_bytes"] == 0 and merged["baseline_bytes"] == 100
    # a file from before the baseline existed: no baseline, so everything that ran counts as beyond it
    old = tmp_path / "old.json"
    data = json.loads((tmp_path / "js-coverage" / "w1.json").read_text())
    for script in data["scripts"]:
        del script["baseline"], script["baseline_called"]
    old.write_text(json.dumps(data))
    assert JsCoverage.load(old).summary()["beyond_bytes"] == 100


def test_only_the_apps_own_scripts_count() -> None:
    assert is_app_script("http://127.0.0.1:8080/lib/docsify.js", HOSTS)
    assert is_app_script("$:/core/modules/widgets/button.js", HOSTS)  # TiddlyWiki's //# sourceURL names
    assert not is_app_script("", HOSTS)  # the crawler's injected scripts
    assert not is_app_script("https://cdn.example.org/lib.js", HOSTS)
    assert not is_app_script("chrome-extension://abc/x.js", HOSTS)
    cov = JsCoverage(HOSTS)
    cov.add([{"url": "", "functions": [_fn(0, 50, 1)]}, {"url": "https://cdn.example.org/a.js",
                                                          "functions": [_fn(0, 9, 1)]}])
    assert cov.summary()["scripts"] == 0


def test_saved_coverage_reads_back_and_merges_across_workers(tmp_path: Path) -> None:
    a, b = JsCoverage(HOSTS), JsCoverage(HOSTS)
    url = "http://127.0.0.1:9/app.js"
    a.add([{"url": url, "functions": [_fn(0, 100, 1), _fn(10, 40, 0)]}])
    b.add([{"url": url, "functions": [_fn(0, 100, 0), _fn(10, 40, 1)]}])
    a.save(tmp_path / "js-coverage" / "w1.json")
    b.save(tmp_path / "js-coverage" / "w2.json")
    assert JsCoverage.load(tmp_path / "js-coverage" / "w1.json").summary() == a.summary()
    assert summary_of(tmp_path) == {"scripts": 1, "bytes": 100, "covered_bytes": 100, "functions": 2,
                                    "covered_functions": 2, "baseline_bytes": 0, "baseline_functions": 0,
                                    "beyond_bytes": 100, "beyond_functions": 2}
    assert summary_of(tmp_path / "nothing") is None


def test_a_damaged_coverage_file_names_the_script_and_field(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text('{"scripts": [{"url": "http://127.0.0.1/a.js", "size": 10, "functions": [], "called": [],'
                    ' "covered": "not base64!"}]}')
    with pytest.raises(ValueError, match=r"script 0 \(http://127.0.0.1/a.js\): bad field"):
        JsCoverage.load(path)


def test_js_coverage_is_refused_off_the_web() -> None:
    with pytest.raises(ValueError, match="js_coverage needs platform 'web'"):
        parse_config({"run_id": "r", "output": "out", "devices": [{"name": "d", "url": "http://x"}],
                      "apps": [{"id": "a", "platform": "android", "entry": "org.example/.Main",
                                "js_coverage": True}]})


# --- real Chromium ---------------------------------------------------------------------------------------
APP_JS = """// the page's handlers (this line keeps every function off offset 0, where the script's own range starts)
function onSave() {
  document.getElementById('out').textContent = 'Saved';
}
function neverCalled() {
  return 'nobody clicks this';
}
function onNext() {
  document.getElementById('out').textContent = 'Next';
}
function drawEditor() {
  document.body.insertAdjacentHTML('beforeend', '<button id="start" onclick="onSave()">Start</button><p id="out"></p>');
}
"""
PAGES = {
    "/app.js": APP_JS,
    "/": '<h1>One</h1><script src="/app.js"></script><button id="save" onclick="onSave()">Save</button>'
         '<p id="out"></p><a id="two" href="/two">Page two</a>',
    "/two": '<h1>Two</h1><script src="/app.js"></script><button id="next" onclick="onNext()">Next</button>'
            '<p id="out"></p>',
    # an editor that draws itself well after its load event (Node-RED: a bare header while it fetches its settings,
    # node types and flows one after another): six parts, each served after a delay, then the editor
    "/late": '<header>Editor</header><script src="/app.js"></script><script>'
             '(async function () { for (let i = 0; i < 6; i++) await fetch("/part?" + i); drawEditor(); })();'
             '</script>',
    # the same editor behind a navigation bar drawn at once (MLflow: its sidebar, then its welcome page): the
    # page offers a link long before it is drawn
    "/nav-first": '<nav><a id="two" href="/two">Page two</a></nav><script src="/app.js"></script><script>'
                  '(async function () { for (let i = 0; i < 6; i++) await fetch("/part?" + i); drawEditor(); })();'
                  '</script>',
    # a page that offers nothing to act on and loads nothing more: drawn as it is
    "/empty": '<p>Nothing here yet.</p>',
    # an editor that, the first time this tab opens it, pauses past the landing wait's idle limit before drawing
    # itself (a loaded machine parsing its scripts); from the second load on it draws at once
    "/slow-first": '<header>Editor</header><script src="/app.js"></script><script>'
                   'if (sessionStorage.getItem("seen")) drawEditor(); else sessionStorage.setItem("seen", "1");'
                   '</script>',
}
PART_DELAY_S = 0.25  # the server's time per part: each arrives well inside the landing wait's idle limit


class _Handler(PageHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/part?"):
            time.sleep(PART_DELAY_S)  # the server is slow, as an editor's API is on first load
            self.reply(b"{}", "application/json")
            return
        body = PAGES.get(self.path, "missing").encode()
        self.reply(body, "application/javascript" if self.path.endswith(".js") else HTML,
                   200 if self.path in PAGES else 404)


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    with serve(_Handler) as url:
        yield url


def _ran(cov: JsCoverage, name: str, baseline: bool = False) -> bool:
    """Whether the function declared as ``function <name>`` in app.js was called (``baseline``: while a landing
    screen loaded)."""
    start = APP_JS.index(f"function {name}")
    end = APP_JS.index("{", start)
    return any(start <= off <= end for s in cov.scripts.values() if s.url.endswith("/app.js")
               for off in (s.baseline_called if baseline else s.called))


def _crawl(out: Path, chromedriver_url: str, entry: str, js_coverage: bool, steps: int) -> Crawler:
    """A greedy crawl of one page of the test site, run to its budget."""
    cfg = parse_config({"run_id": "jscov", "output": str(out), "seed": 3,
                        "devices": [{"name": "d0", "url": chromedriver_url}],
                        "apps": [{"id": "site", "entry": entry, "js_coverage": js_coverage}],
                        "budget": {"max_steps": steps, "max_seconds": 300, "max_restarts": 10}})
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    crawler.run()
    return crawler


@pytest.mark.server
def test_clicking_a_button_covers_its_handler_across_a_navigation(chromedriver_url: str, site_url: str) -> None:
    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    cov = JsCoverage(HOSTS)
    try:
        drv = device.driver
        cov.start(drv)
        drv.get(site_url + "/")
        cov.take(drv)
        assert not _ran(cov, "onSave")  # loading the page defines the handler but does not run it
        drv.find_element("css selector", "#save").click()
        cov.take(drv)
        assert _ran(cov, "onSave") and not _ran(cov, "onNext")
        drv.find_element("css selector", "#two").click()  # a new document: its counts start from zero
        drv.find_element("css selector", "#next").click()
        cov.take(drv)
    finally:
        device.quit()
    assert _ran(cov, "onSave") and _ran(cov, "onNext")  # page one's handler is still counted
    assert not _ran(cov, "neverCalled")
    s = cov.summary()
    assert s["scripts"] >= 1 and 0 < s["covered_bytes"] < s["bytes"], s


@pytest.mark.server
@pytest.mark.parametrize("on", [True, False])
def test_a_crawl_with_js_coverage_records_the_handlers_it_clicked(chromedriver_url: str, site_url: str,
                                                                   tmp_path: Path, on: bool) -> None:
    crawler = _crawl(tmp_path, chromedriver_url, site_url + "/", on, steps=6)
    app_dir = tmp_path / "site"
    if not on:
        assert summary_of(app_dir) is None and not (app_dir / "js-coverage").exists()
        assert not any(e["decision"] == "js-new-code" for e in crawler.audit.entries())
        return
    entries = crawler.audit.entries()
    clicked = " ".join(e["action"] for e in entries if e["decision"] == "act")
    cov = JsCoverage.load(next((app_dir / "js-coverage").glob("*.json")))
    # every action's new code is audited and given to the policy, which is then coverage-guided
    acts = [e for e in entries if e["decision"] == "act"]
    code = [e for e in entries if e["decision"] == "js-new-code"]
    assert len(code) == len(acts) and all(e["chars"] >= 0 for e in code)
    save = next(i for i, e in enumerate(acts) if "'Save'" in e["action"])
    assert code[save]["chars"] >= len("document.getElementById('out').textContent = 'Saved';"), code[save]
    assert crawler.policy.snapshot()["code_guided"] is True
    assert "'Save'" in clicked, clicked  # greedy tries every action on the entry screen first
    assert _ran(cov, "onSave")
    assert _ran(cov, "onNext") == ("'Next'" in clicked)
    assert not _ran(cov, "neverCalled")
    # loading the entry screen ran the script's top level (the baseline), not the handler the crawl clicked
    assert not _ran(cov, "onSave", baseline=True)
    s = cov.summary()
    assert 0 < s["baseline_bytes"] < s["covered_bytes"] and s["beyond_functions"] >= 1, s


@pytest.mark.server
def test_a_replay_start_waits_for_an_editor_that_draws_itself_late(chromedriver_url: str, site_url: str) -> None:
    """A replay's fresh start reads the landing as the crawl did, once drawn: compared too early with the crawl's
    recorded entry, a single-page app's empty shell matched nothing (every MLflow replay: start_state_mismatch)."""
    from explorers.device import offers_actions
    from pipelines.synthesis.verify.replay import fresh_start

    profile = Profile(VIEWPORTS["desktop"])
    device = open_device(EndpointSpec("d0", chromedriver_url), profile)
    try:
        fresh_start(None, site_url + "/late", "web", profile)(device)
        screen = device.capture()
    finally:
        device.quit()
    assert offers_actions(screen), [w.element.label for w in screen.widgets]


@pytest.mark.server
def test_a_restart_waits_for_an_editor_that_draws_itself_late(chromedriver_url: str, site_url: str,
                                                             tmp_path: Path) -> None:
    """The landing is read once the screen offers something to act on: the graph's entry is the drawn editor, and
    its start-up code is baseline, not credited to the first action."""
    crawler = _crawl(tmp_path, chromedriver_url, site_url + "/late", True, steps=2)
    acts = [e["action"] for e in crawler.audit.entries() if e["decision"] == "act"]
    assert acts and "'Start'" in acts[0], acts  # the first action is on the drawn editor, not "back" from a blank page
    cov = JsCoverage.load(next((tmp_path / "site" / "js-coverage").glob("*.json")))
    assert _ran(cov, "drawEditor", baseline=True)
    assert _ran(cov, "onSave") and not _ran(cov, "onSave", baseline=True)


@pytest.mark.server
def test_a_landing_read_before_it_drew_itself_is_reloaded_not_the_end_of_the_crawl(
        chromedriver_url: str, site_url: str, tmp_path: Path) -> None:
    """Every policy stops on a one-state graph with nothing to try; on the entry the crawler reloads instead (what
    CI's loaded machine needed for Node-RED), and the crawl goes on from the drawn editor."""
    crawler = _crawl(tmp_path, chromedriver_url, site_url + "/slow-first", False, steps=3)
    entries = crawler.audit.entries()
    reloads = [e for e in entries if e["decision"] == "restart" and "offers nothing to act on" in e["reason"]]
    acts = [e["action"] for e in entries if e["decision"] == "act"]
    assert len(reloads) == 1 and acts and "'Start'" in acts[0], (reloads, acts)
    assert crawler.stats.stopped == "step budget" and crawler.stats.restarts == 1, crawler.stats


@pytest.mark.server
def test_a_landing_is_read_once_drawn_not_when_its_navigation_first_offers_a_link(
        chromedriver_url: str, site_url: str, tmp_path: Path) -> None:
    """Offering a link is not yet drawn: the crawl's entry must be the page a fresh start later shows (a replay
    compares the two), not its navigation bar alone."""
    crawler = _crawl(tmp_path, chromedriver_url, site_url + "/nav-first", False, steps=1)
    first = next(o for _w, step in crawler.store.steps() for o in step.observations)
    labels = [e.get("text") or e.get("content_desc") for e in first.elements if e.get("visible", True)]
    assert "Start" in labels and "Page two" in labels, labels


@pytest.mark.server
def test_a_landing_that_offers_nothing_and_loads_nothing_is_read_as_it_is(chromedriver_url: str, site_url: str,
                                                                         tmp_path: Path, monkeypatch) -> None:
    """An empty page is what the app shows (an error page, an empty app): the wait ends once the page has loaded
    nothing for LANDING_IDLE_S, however long its bound. Counted in polls, not seconds: each poll reads the page's
    idle time, which only grows, so a slow machine polls fewer times, never more."""
    from explorers import device as device_mod
    from explorers.device import Device

    monkeypatch.setattr(device_mod, "LANDING_WAIT_S", 600.0)
    polls = []
    real = Device.idle_s
    monkeypatch.setattr(Device, "idle_s", lambda self: polls.append(1) or real(self))
    crawler = _crawl(tmp_path, chromedriver_url, site_url + "/empty", False, steps=2)
    landings = [o for _w, step in crawler.store.steps() for o in step.observations]
    assert landings and all(o.location.endswith("/empty") for o in landings)
    restarts = sum(1 for e in crawler.audit.entries() if e["decision"] == "restart")
    limit = device_mod.LANDING_IDLE_S / (crawler.settle.interval_s * 2) + 2
    assert 0 < len(polls) <= restarts * limit, (len(polls), restarts)
    # a page that stays empty is reloaded a bounded number of times, then the crawl ends as explored
    assert restarts == 1 + crawler.stats.restarts and crawler.stats.restarts <= LANDING_RETRIES, crawler.stats
