"""A crawl never dies of one page: DOM property shadowing, a page the extractor cannot read, a hidden login marker.

Real Chromium against small pages served here. A form whose controls are named ``action``, ``method``,
``submit``, ``id``, ``name`` (and even ``getAttribute`` or ``parentElement``) shadows the form's own DOM
properties, as wiki page-history screens do; the extractor must still read the real ones. A page whose script
makes extraction throw is a logged, skipped action, not a dead job; a job that cannot start reports URL, state
and traceback; and a login marker that exists but is hidden is an error, not a silently anonymous crawl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.device import SessionLost
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import COMMAND_TIMEOUT_MARGIN_S, EndpointSpec, open_device
from explorers.settle import SettleConfig
from explorers.store import read_log
from explorers.web_parse import parse_web_elements
from tests.pages import PageHandler, serve

SHADOW_FORM = """<form name="title" id="f1" method="post" action="/shadow-target">
<input type="hidden" name="action" value="history"><input type="hidden" name="method" value="x">
<input type="hidden" name="id" value="7"><input type="hidden" name="getAttribute" value="g">
<input type="hidden" name="parentElement" value="p"><input type="hidden" name="tagName" value="t">
<label for="q">Name</label><input id="q" name="name" type="text">
<select name="elements" id="sel"><option value="a">Alpha</option><option value="b" disabled>Beta</option>
<option value="c">Gamma</option></select>
<button type="submit" name="submit" id="go">Show revisions</button></form>"""

PAGES = {
    "/": """<h1>Start</h1><ul><li><a href="/plain">Plain page</a></li><li><a href="/broken">Broken page</a></li>
        <li><a href="/shadow">History page</a></li><li><a href="/other">Other page</a></li>
        <li><a href="https://partner.example.org/">Our partner</a></li><li><a href="mailto:team@example.org">Mail
        us</a></li></ul>""",
    "/plain": '<h1>Plain</h1><p><a href="/">Home</a></p><button onclick="this.textContent=\'Pressed\'">Press</button>',
    "/other": '<h1>Other</h1><p><a href="/">Home</a> <a href="/plain">Plain again</a></p>',
    "/shadow": "<title>Shadow test</title><h1>History</h1>" + SHADOW_FORM + '<p><a href="/">Home</a></p>',
    # A page whose own script makes every read of the viewport throw: the extractor cannot read it at all.
    "/broken": """<script>Object.defineProperty(window, 'innerWidth', {get() { throw new Error('hostile page'); }});
        </script><h1>Broken</h1><a href="/">Home</a>""",
    # An add-bill form like I Hate Money's: the payer select's values are member ids, its options their names;
    # the text field has focus, as it does when the page loads.
    "/bill": """<h1>Add a bill</h1><form method="post" action="/bill"><label for="what">What?</label>
        <input id="what" name="what" autofocus required><label for="payer">Who paid?</label>
        <select id="payer" name="payer">
        <option value="6">Alice</option><option value="7">Bob</option></select><button>Add</button></form>""",
    # The login field exists but is hidden (as on a page that keeps a collapsed login box in its header).
    "/login-hidden": """<h1>Welcome</h1><form action="/login"><input name="pass" type="password"
        style="display:none"></form><a href="/plain">Plain page</a>""",
    # A chain whose last page still has an untried button when the crawl is back at the start: one opened URL
    # reaches it, where walking costs four steps.
    "/chain": '<h1>Chain</h1><a href="/chain/1">Chapter one</a>',
    "/chain/1": '<h1>One</h1><a href="/chain/2">Chapter two</a>',
    "/chain/2": '<h1>Two</h1><a href="/chain/3">Chapter three</a>',
    "/chain/3": '<h1>Three</h1><a href="/chain/end">The end</a>'
                '<button onclick="this.textContent=\'Pressed\'">Press</button>',
    "/chain/end": '<h1>End</h1><a href="/chain">Back to the start</a>',
    # Two ways a page opens another tab: a link with target=_blank to a page of the app, and a script's window.open
    # of another site's page.
    "/tabs": """<h1>Tabs</h1><p><a href="/tabs/help" target="_blank">Help in a new tab</a></p>
        <p><button onclick="window.open('https://partner.example.org/offer')">Partner offer</button></p>
        <label for="note">Note</label><textarea id="note"></textarea>""",
    "/tabs/help": '<h1>Help</h1><a href="/tabs">Back to the tabs</a>',
    # A bill list with a create form (empty) and a seeded bill's edit form (filled in with its stored text).
    "/bills": '<h1>Bills</h1><a href="/bills/add">Add a bill</a> <a href="/bills/3/edit">Edit “Weekly groceries”</a>',
    "/bills/add": """<h1>Add a bill</h1><form method="post" action="/bills/add"><label for="what">What?</label>
        <input id="what" name="what" required><button>Add</button></form>""",
    "/bills/3/edit": """<h1>Edit a bill</h1><form method="post" action="/bills/3/edit"><label for="what">What?</label>
        <input id="what" name="what" value="Weekly groceries"><label for="note">Note</label>
        <textarea id="note" name="note">Split between Alice and Bob</textarea><button>Save the bill</button></form>""",
    # A screen drawn by script, as TiddlyWiki's and Node-RED's are: its buttons change the page and add no history
    # entry, so "back" from it leaves the app; one link is a real navigation, from which back stays in the app.
    "/drawn": """<h1>Drawn</h1><p id="view">Home view</p>
        <button onclick="document.getElementById('view').textContent='First view'">First</button>
        <button onclick="document.getElementById('view').textContent='Second view'">Second</button>
        <a href="/drawn/about">About</a>""",
    "/drawn/about": '<h1>About</h1><button onclick="this.textContent=\'Pressed\'">Press</button>',
    # Prose as wikis write it: links, emphasis and code inside a paragraph; a paragraph that only wraps a link;
    # a block holding another block; a hidden inline note; a paragraph longer than a name may be.
    "/prose": """<h1 id="title">About <a href="#title">¶</a><span style="visibility:hidden">hover me</span></h1>
        <div style="display:flex; gap:20px"><h6 id="anchored"><a href="#anchored"><span>Trails</span></a></h6>
        <h6 id="routed"><a href="#/guide?id=routed">Trail guide</a></h6>
        <h6 id="elsewhere"><a href="#/other">Other page</a></h6></div>
        <p id="intro">Trac is a <a href="/plain">minimalistic</a> approach to
        <strong>web-based</strong> project management.<br>Run <code>trac-admin</code> to start
        <span style="display:none">(hidden aside)</span>here.</p><p id="wrap"><a href="/">Only a link</a></p>
        <div id="card">Card title<div id="inner">Nested block text</div></div>
        <p id="long">""" + "A long sentence about the project goes on. " * 8 + """</p>
        <h2 id="ticket"><span class="summary">Crash when the dialog closes</span></h2>
        <h3 id="badges"><a href="/plain">#1</a> <span><a href="/plain">defect</a></span></h3>
        <h3 id="mixed"><a href="/plain">Ticket</a> <span>opened today</span></h3>
        <style>#crumb strong::before { content: "›"; margin: 0 10px; } .gap { margin-left: 8px; }
          .u { position: relative; } .u::after { content: ""; position: absolute; left: 0; bottom: 0; }</style>
        <h2 id="crumb">Household accounts<strong>Income Statement</strong></h2>
        <h2 id="boxed" style="display:flex">Ledger<span>Balance</span></h2>
        <h2 id="gapped">Ledger<span class="gap">Sheet</span></h2>
        <h2 id="glued">W<b>ord</b>s</h2>
        <h2 id="letters">W<span style="display:inline-block">o</span>rd</h2>
        <h2 id="underlined">Read the <a class="u" href="/plain">guide</a>.</h2>""",
}


# A single-page app that fetches the code of the page a tap opens: the button adds a <script>, served late (after
# the quiet window and the request stale limit), which draws the page when it runs.
PAGES["/lazy"] = """<h1>Shell</h1><div id="main"></div><button id="open" onclick="
    const s = document.createElement('script'); s.src = '/chunk.js'; document.head.appendChild(s);">Open</button>"""
CHUNK_DELAY_S = 1.5
# Scripts that never load nor report: one set as markup (browsers never run those), one of a template type.
PAGES["/inert"] = """<h1>Inert</h1><p id="main">Closed</p><button id="open" onclick="
    document.body.insertAdjacentHTML('beforeend', '<div><script src=/chunk.js></script></div>');
    const t = document.createElement('script'); t.type = 'text/template'; t.src = '/chunk.js';
    document.body.appendChild(t); document.getElementById('main').textContent = 'Opened';">Open</button>"""


POSTED = {"/bill": 0, "/reset": 0, "/bills/add": 0, "/bills/3/edit": 0}  # posts the crawl made, by form URL


class _Handler(PageHandler):
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/chunk.js":
            time.sleep(CHUNK_DELAY_S)  # a slow chunk, not a race: the wait under test has no bound below 30 s
            self.reply(b"document.getElementById('main').innerHTML = '<h2>Experiments</h2>';",
                       content_type="text/javascript")
            return
        body = f"<!doctype html><html><body>{PAGES.get(path, '<h1>Missing</h1>')}</body></html>".encode()
        self.reply(body, status=200 if path in PAGES else 404)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in POSTED:
            POSTED[path] += 1
            body = {"/bill": b'<!doctype html><h1>Bill added</h1><a href="/bill">Add another</a>',
                    "/reset": b"ok", "/bills/add": b'<!doctype html><h1>Added</h1><a href="/bills">Bills</a>',
                    "/bills/3/edit": b'<!doctype html><h1>Saved</h1><a href="/bills">Bills</a>'}[path]
            self.reply(body)
            return
        self.do_GET()


@pytest.fixture(scope="module")
def pages_url() -> Iterator[str]:
    with serve(_Handler) as url:
        yield url


def _config(out: Path, device_url: str, apps: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """These apps are the tests' own: crawled as apps allowed to take posts (read-only mode, the default without a
    reset or environment, has its own tests in ``test_environments.py``)."""
    apps = [{"read_only": False, **a} for a in apps]
    return {"run_id": "robust", "output": str(out), "devices": [{"name": "d0", "url": device_url}], "apps": apps,
            "budget": {"max_steps": steps, "max_seconds": 300, "max_restarts": 40}}


def test_extraction_reads_the_real_form_properties_when_controls_shadow_them(
        chromedriver_url: str, pages_url: str) -> None:
    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        device.open(pages_url + "/shadow")
        device.settle()
        _settled, screen = device.settle_and_capture()
        fallback = device.capture()  # the extraction without the wait goes through the same safe accessors
    finally:
        device.quit()
    for s in (screen, fallback):
        assert s.extract_errors == []
        assert s.title == "Shadow test"  # <form name="title"> shadows document.title
        by_id = {w.element.resource_id: w for w in s.widgets}
        submit = by_id["go"]
        assert submit.form_action == pages_url + "/shadow-target"
        assert submit.form_method == "post"
        # The path walks up through the form, whose parentElement / tagName are shadowed.
        assert "/form[1]/button[1]" in submit.element.path and submit.element.path.startswith("html") is False
        assert submit.element.path.startswith("body[1]/")
        field = by_id["q"]
        assert field.element.text == "Name" and field.input_name == "name" and field.element.editable
        select = by_id["sel"]  # a control named "elements" shadows form.elements
        assert select.options == ["a", "c"] and select.option_labels == ["Alpha", "Gamma"]


def test_a_text_block_reads_with_its_inline_links_and_emphasis_but_not_its_block_children(
        chromedriver_url: str, pages_url: str) -> None:
    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        device.open(pages_url + "/prose#/guide")  # a single-page app's hash route: its page is #/guide
        _settled, screen = device.settle_and_capture()
    finally:
        device.quit()
    by_id = {w.element.resource_id: w.element for w in screen.widgets}
    assert by_id["intro"].text == ("Trac is a minimalistic approach to web-based project management. "
                                   "Run trac-admin to start here.")
    assert by_id["title"].text == "About"  # no permalink mark, nothing hidden
    assert "wrap" not in by_id  # no own words: the link inside is the element
    assert by_id["card"].text == "Card title" and by_id["inner"].text == "Nested block text"
    long = by_id["long"].text
    assert 300 < len(long) <= 400 and long.startswith("A long sentence about the project goes on.")
    # A heading whose words are all in inline children is still a heading: the screen's title.
    assert by_id["ticket"].role == "heading" and by_id["ticket"].text == "Crash when the dialog closes"
    assert by_id["mixed"].role == "heading" and by_id["mixed"].text == "Ticket opened today"
    # words the page draws apart (a generated "›", an inline-block, a margin) read apart; glued letters stay glued
    assert by_id["crumb"].text == "Household accounts Income Statement"
    assert by_id["boxed"].text == "Ledger Balance" and by_id["gapped"].text == "Ledger Sheet"
    assert by_id["glued"].text == "Words" and by_id["letters"].text == "Word"
    assert by_id["underlined"].text == "Read the guide."  # an empty, absolutely placed mark separates nothing
    assert "badges" not in by_id  # only links (a brand link in an <h1>): the links are the elements
    # a heading wrapped in its own anchor (documentation sites: #section, or a hash route's #/page?id=section) keeps
    # its words; one that links to another page is a link
    assert by_id["anchored"].role == "heading" and by_id["anchored"].text == "Trails"
    assert by_id["routed"].role == "heading" and by_id["routed"].text == "Trail guide"
    assert "elsewhere" not in by_id
    assert [w.element.text for w in screen.widgets if w.element.role == "link"] == [
        "¶", "Trails", "Trail guide", "Other page", "minimalistic", "Only a link", "#1", "defect", "Ticket", "guide"]


def _tap_open(chromedriver_url: str, url: str) -> tuple[Any, Any]:
    """Open ``url``, tap its "open" button and settle: (the settle result, the screen after). The waits are
    bounded at 30 s, so only a wait that never ends could fail them."""
    settle = SettleConfig(timeout_s=30.0, stale_request_s=30.0)
    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]), settle=settle)
    try:
        device.open(url)
        _settled, screen = device.settle_and_capture()
        button = next(w for w in screen.widgets if w.element.resource_id == "open")
        device.tap(*button.element.bbox.center)
        return device.settle_and_capture()
    finally:
        device.quit()


def test_a_tap_that_loads_the_next_pages_code_is_read_once_that_code_has_drawn_it(
        chromedriver_url: str, pages_url: str) -> None:
    """A script the page adds is awaited like a request, and longer: nothing else moves while a chunk loads, so
    the screen was read with the shell only (no fetch in flight, no DOM change for the quiet window)."""
    settled, after = _tap_open(chromedriver_url, pages_url + "/lazy")
    assert settled.stable
    assert "Experiments" in [w.element.text for w in after.widgets if w.element.role == "heading"]


def test_scripts_that_never_run_do_not_hold_the_wait(chromedriver_url: str, pages_url: str) -> None:
    """Markup's scripts never run and a template-typed one is never fetched: neither reports, so neither may be
    awaited (each would hold every wait to its timeout, here 30 s, and the wait would end unstable)."""
    settled, after = _tap_open(chromedriver_url, pages_url + "/inert")
    assert settled.stable
    assert "Opened" in [w.element.text for w in after.widgets]


def test_demo_app_history_page_with_shadowing_controls_is_crawled(
        tmp_path: Path, chromedriver_url: str, demo_app_url: str) -> None:
    """The bundled demo app has such a page (note history); a crawl reaches it, submits its form, and goes on."""
    from explorers.demo_app.crawl_config import app_config

    cfg = parse_config(_config(tmp_path, chromedriver_url, [app_config(demo_app_url + "/")], 60))
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    stats = crawler.run()
    assert stats.errors == 0 and stats.budget_used == 60, stats
    records = list(read_log(crawler.store.log_path(crawler.worker)))
    history = [o for r in records for o in r["observations"] if "/history" in o["observation"]["location"]]
    assert history, "the crawl never reached a note's history page"
    submits = [e for o in history for e in o["observation"]["elements"] if e["resource_id"] == "history-submit"]
    assert submits
    # The form was submitted: a history URL carrying the form's query (action=history&id=…&submit=1) was seen.
    assert any("submit=1" in o["observation"]["location"] and "action=history" in o["observation"]["location"]
               for o in history)


def test_dry_run_forms_fills_the_demo_forms_but_commits_none(
        tmp_path: Path, chromedriver_url: str, demo_app_url: str) -> None:
    from explorers.demo_app.crawl_config import app_config

    cfg = parse_config(_config(tmp_path, chromedriver_url, [app_config(demo_app_url + "/", dry_run_forms=True)], 45))
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    crawler.run()
    audit = crawler.audit.entries()
    refused = [e for e in audit if e["decision"] == "blocked" and "dry_run_forms" in e["reason"]]
    assert {e["action"] for e in refused} >= {"click 'Create note'", "click 'Save settings'"}
    typed = [e for e in audit if e["decision"] == "act" and e["action"].startswith("type")]
    assert typed, "forms are still filled"
    records = list(read_log(crawler.store.log_path(crawler.worker)))
    unscripted = [o["observation"] for r in records for o in r["observations"] if not o["scripted"]]
    # Every committed POST in the demo app ends on a page with a flash message ("Note created.", "Settings saved.").
    assert not any(e["resource_id"] == "flash" for o in unscripted for e in o["elements"])
    # GET forms (the history filter) are still submitted.
    assert any("submit=1" in o["location"] for o in unscripted)


def test_a_page_the_extractor_cannot_read_is_a_skipped_action_not_a_dead_job(
        tmp_path: Path, chromedriver_url: str, pages_url: str) -> None:
    cfg = parse_config(_config(tmp_path, chromedriver_url, [{"id": "pages", "entry": pages_url + "/"}], 14))
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    stats = crawler.run()
    assert stats.errors == 1, stats  # the link to /broken failed once and was never taken again
    assert stats.budget_used == 14 or stats.stopped.startswith("done"), stats
    audit = crawler.audit.entries()
    errors = [e for e in audit if e["decision"] == "error"]
    assert len(errors) == 1
    err = errors[0]
    assert err["action"] == "click 'Broken page'" and err["url"] == pages_url + "/"
    assert err["state"] and "Traceback" in err["traceback"] and "hostile page" in err["reason"]
    assert err["landed_url"] == pages_url + "/broken"
    acts = [e for e in audit if e["decision"] == "act"]
    assert sum(e["action"] == "click 'Broken page'" for e in acts) == 1
    # Leaving the app is refused before the link is followed, not noticed afterwards.
    blocked = {e["action"]: e["reason"] for e in audit if e["decision"] == "blocked"}
    assert "external host 'partner.example.org'" in blocked["click 'Our partner'"]
    assert "mailto" in blocked["click 'Mail us'"]
    assert not any("Our partner" in e["action"] or "Mail us" in e["action"] for e in acts)
    assert acts[-1]["time"] > err["time"], "the crawl went on after the failure"
    # The skip survives a resume: the log says which action failed, and a rerun does not try it again.
    records = list(read_log(crawler.store.log_path(crawler.worker)))
    assert [r["failed"]["key"] for r in records if r.get("failed")] == [err["key"]]
    cfg2 = parse_config(_config(tmp_path, chromedriver_url, [{"id": "pages", "entry": pages_url + "/"}], 20))
    again = Crawler(cfg2, cfg2.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    assert again.graph.failed == {(err["state"], err["key"])}
    again.run()
    later = [e for e in again.audit.entries() if e["decision"] == "act"]
    assert sum(e["action"] == "click 'Broken page'" for e in later) == 1


def test_a_tab_the_page_opens_is_closed_and_an_app_page_it_showed_is_followed_in_the_crawl_tab(
        tmp_path: Path, chromedriver_url: str, pages_url: str) -> None:
    """A new tab takes the foreground and leaves the crawl's tab drawing no frames: chromedriver's next pointer action
    there waits for a frame (5 s a step here; Trac's crawl stalled for good). The tab is closed, and the app page it
    showed is what the action led to."""
    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        device.open(pages_url + "/tabs")
        device.settle()
        _settled, before = device.settle_and_capture()
        link = next(w for w in before.widgets if w.label == "Help in a new tab")
        device.tap(*link.element.bbox.center)
        _settled, after = device.settle_and_capture()
        assert after.background and after.location == pages_url + "/tabs"
        assert device.close_strays() == [pages_url + "/tabs/help"]
        _settled, back = device.settle_and_capture()
        assert not back.background and device.driver.window_handles == [device.driver.current_window_handle]
    finally:
        device.quit()
    cfg = parse_config(_config(tmp_path, chromedriver_url, [{"id": "tabs", "entry": pages_url + "/tabs",
                                                              "allowed_hosts": ["127.0.0.1"]}], 10))
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    stats = crawler.run()
    assert stats.errors == 0, stats
    audit = crawler.audit.entries()
    windows = {e["url"]: e["reason"] for e in audit if e["decision"] == "new-window"}
    assert "shown in the crawl's tab" in windows[pages_url + "/tabs/help"], windows
    partner = next(r for u, r in windows.items() if u.startswith("https://partner.example.org/"))
    assert "shown in the crawl's tab" not in partner  # another site's page is closed, not followed
    states = crawler.graph.states
    led = [{states[t].location for t in tos if t in states} for (src, _key), tos in crawler.graph.edges.items()
           if src in states and states[src].location == pages_url + "/tabs"]
    assert {pages_url + "/tabs/help"} in led, led  # the link led to the help page
    assert any(e["decision"] == "act" and e["action"].startswith("type") for e in audit)  # and the crawl went on


def test_a_command_the_browser_never_answers_ends_the_session_not_the_job(
        chromedriver_url: str, pages_url: str) -> None:
    """The safety net under the new-tab handling: a tab left in the background (closing it is skipped here) makes
    the next typing wait on chromedriver with no end; past the session's command timeout (twice the page-load
    timeout plus a margin) that is a lost session, which the crawler replaces, instead of a job stuck for good."""
    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]), timeout_s=1.0)
    try:
        assert device.driver.command_executor.client_config.timeout == 2 * 1.0 + COMMAND_TIMEOUT_MARGIN_S
        device.open(pages_url + "/tabs")
        device.settle()
        _settled, screen = device.settle_and_capture()
        link = next(w for w in screen.widgets if w.label == "Help in a new tab")
        note = next(w for w in screen.widgets if w.element.resource_id == "note")
        device.tap(*link.element.bbox.center)
        with pytest.raises(SessionLost):
            for _ in range(5):  # a pointer action in a background tab waits for a frame that is never drawn
                device.type_text("a note", *note.element.bbox.center)
        assert device.wedged  # so quitting asks the stuck server in the background instead of queueing behind it
    finally:
        device.quit()


def test_failed_jobs_report_url_state_and_traceback_in_plain_text(
        tmp_path: Path, chromedriver_url: str, pages_url: str) -> None:
    """Two jobs that cannot run: an entry page nobody can read, and a login marker that exists but is hidden.

    The CLI exits 1 and prints both reasons verbatim: ``[name=pass]`` must not be eaten as Rich markup."""
    apps = [{"id": "broken", "entry": pages_url + "/broken"},
            {"id": "hidden-login", "entry": pages_url + "/login-hidden",
             "login": {"when_present": "[name=pass]", "steps": [{"type": "[name=pass]", "text": "x"}]}}]
    config = tmp_path / "crawl.yaml"
    config.write_text(yaml.safe_dump(_config(tmp_path / "out", chromedriver_url, apps, 5)))
    env = {**os.environ, "COLUMNS": "400"}
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "crawl", "--config", str(config), "--no-progress"],
                          capture_output=True, text=True, timeout=300, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    broken = next(line for line in out.splitlines() if line.startswith("FAILED broken/"))
    assert "hostile page" in broken
    assert f"at {pages_url}/broken (state -, step 0)" in out and "Traceback (most recent call last)" in out
    hidden = next(line for line in out.splitlines() if line.startswith("FAILED hidden-login/"))
    assert "LoginError" in hidden and "'[name=pass]'" in hidden and "hidden" in hidden
    # The audit log of the hidden-login job shows it never acted anonymously.
    audit = tmp_path / "out" / "hidden-login" / "audit" / "desktop-en-light-fs1.jsonl"
    decisions = [json.loads(line)["decision"] for line in audit.read_text().splitlines()] if audit.exists() else []
    assert "act" not in decisions


def test_parsed_fields_that_are_not_strings_read_as_empty() -> None:
    """A page that smuggles an element reference into a string field loses that field, not the screen."""
    result = {"w": 100, "h": 100, "elements": [
        {"tag": "button", "rect": [0, 0, 10, 10], "form_action": {"element-6066": "ref"}, "form_method": None,
         "text": "Go", "clickable": True, "options": [["a", "A", False], ["b", "B", True], "c"]},
        {"tag": "a", "rect": "not a rect"},
    ]}
    widgets = parse_web_elements(result, 200, 200)
    assert len(widgets) == 1
    w = widgets[0]
    assert w.form_action == "" and w.form_method == "" and w.element.text == "Go"
    assert w.options == ["a", "c"] and w.option_labels == ["A", "c"]
    assert w.element.bbox.x2 == 20.0


def test_replay_refuses_a_hidden_login_marker_like_the_crawler(chromedriver_url: str, pages_url: str) -> None:
    """Replay starts an app through the crawler's own login helper: a marker that is in the page but hidden is a
    ``LoginError``, not a replay that silently runs logged out (and then fails for the wrong reason)."""
    from explorers.scripts import LoginError
    from pipelines.synthesis.verify.replay import fresh_start

    cfg = parse_config(_config(Path("unused"), chromedriver_url, [
        {"id": "hidden-login", "entry": pages_url + "/login-hidden",
         "login": {"when_present": "[name=pass]", "steps": [{"type": "[name=pass]", "text": "x"}]}}], 5))
    profile = Profile(VIEWPORTS["desktop"])
    device = open_device(EndpointSpec("d0", chromedriver_url), profile)
    try:
        with pytest.raises(LoginError, match=r"'\[name=pass\]'.*hidden"):
            fresh_start(cfg.apps[0], pages_url + "/login-hidden", "web", profile)(device)
        # The same helper with a visible marker logs in and says so (the crawler's path).
        cfg2 = parse_config(_config(Path("unused"), chromedriver_url, [
            {"id": "plain", "entry": pages_url + "/shadow",
             "login": {"when_present": "#q", "steps": [{"type": "#q", "text": "x"}]}}], 5))
        with pytest.raises(LoginError, match="still shown"):
            fresh_start(cfg2.apps[0], pages_url + "/shadow", "web", profile)(device)
    finally:
        device.quit()


def test_a_select_action_names_the_option_and_sets_the_select_under_its_point(
        chromedriver_url: str, pages_url: str) -> None:
    """A select's action says the option people see ("Bob", not the member id "7": that is what instructions
    quote), and performing it sets that select even while another field has focus; before, the value was typed
    into whatever field had focus."""
    from explorers.candidates import candidates
    from schemas import ActionType

    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        device.open(pages_url + "/bill")
        device.settle()
        screen = device.capture()
        picks = [c for c in candidates(screen) if c.type is ActionType.SELECT]
        assert [c.action.text for c in picks] == ["Bob"]  # a real option other than the current one, by label
        device.driver.execute_script("document.getElementById('what').focus()")
        device.perform(picks[0].action, picks[0].widget)
        got = device.driver.execute_script(
            "return [document.getElementById('payer').value, document.getElementById('what').value]")
        assert got == ["7", ""]
        # A value (what login scripts and older graphs hold) still picks its option.
        device.perform(picks[0].action.model_copy(update={"text": "6"}), picks[0].widget)
        assert device.driver.execute_script("return document.getElementById('payer').value") == "6"
    finally:
        device.quit()


@pytest.mark.parametrize("after_write", [True, False])
def test_an_episode_ends_with_a_reset_right_after_typed_text_was_posted(
        tmp_path: Path, chromedriver_url: str, pages_url: str, after_write: bool) -> None:
    """With a reset hook the crawl restarts (and so resets) right after a form carrying typed text was posted,
    so no later screen shows what it typed; ``reset_after_write: false`` keeps exploring the changed app."""
    cfg = parse_config(_config(tmp_path, chromedriver_url, [
        {"id": "bills", "entry": pages_url + "/bill", "reset": {"url": pages_url + "/reset"},
         **({} if after_write else {"reset_after_write": False})}], 8))
    before = dict(POSTED)
    Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url)).run()
    recs = list(read_log(tmp_path / "bills" / "log" / "desktop-en-light-fs1.jsonl"))
    added = [i for i, r in enumerate(recs) if "transition" in r
             and any(o["observation"]["location"].endswith("/bill") and "Bill added" in json.dumps(o)
                     for o in r["observations"])]
    assert POSTED["/bill"] > before["/bill"] and added  # the crawl filled the form and posted it
    assert any(r["transition"]["action"]["type"] == "type" for r in recs[:added[0]] if "transition" in r)
    follow = recs[added[0] + 1]
    wrote = follow.get("restart") and "posted typed text" in follow.get("reason", "")
    assert bool(wrote) is after_write
    if after_write:
        assert POSTED["/reset"] >= before["/reset"] + 2  # the start, and the reset after the write


def test_greedy_opens_a_known_url_and_the_budget_counts_it(
        tmp_path: Path, chromedriver_url: str, pages_url: str) -> None:
    cfg = parse_config(_config(tmp_path, chromedriver_url, [{"id": "chain", "entry": pages_url + "/chain"}], 8))
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    stats = crawler.run()
    assert stats.opens >= 1 and stats.budget_used == 8 and stats.steps + stats.restarts + stats.opens == 8, stats
    records = list(read_log(crawler.store.log_path(crawler.worker)))
    i = next(i for i, r in enumerate(records) if r.get("opened"))
    assert records[i]["opened"] == pages_url + "/chain/3", records[i]  # not a restart and a walk of three steps
    assert not any(r.get("restart") for r in records[1:i])
    landed = records[i]["observations"][0]["state"]
    after = records[i + 1]["transition"]
    assert after["from_state"] == landed and after["action"]["target_element_id"], after
    assert "Press" in json.dumps(records[i + 1]["observations"][0]["observation"]["elements"]) or \
        "Pressed" in json.dumps(records[i + 1]["observations"][0]["observation"]["elements"])
    audit = [e for e in crawler.audit.entries() if e["decision"] == "open"]
    assert audit and audit[0]["url"] == pages_url + "/chain/3" and "open a known URL" in audit[0]["reason"]


@pytest.mark.parametrize("submit_edits", [None, True])
def test_an_edit_of_a_seeded_record_is_not_committed_without_a_reset(
        tmp_path: Path, chromedriver_url: str, pages_url: str, submit_edits: bool | None) -> None:
    """The bill's edit form came filled in with its stored text: by default (no reset hook) the crawl fills it but
    never saves it, while the empty create form is sent; ``submit_edits: true`` lets it save."""
    app = {"id": "bills", "entry": pages_url + "/bills", **({} if submit_edits is None else
                                                             {"submit_edits": submit_edits})}
    cfg = parse_config(_config(tmp_path, chromedriver_url, [app], 16))
    before = dict(POSTED)
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    crawler.run()
    assert POSTED["/bills/add"] > before["/bills/add"], "the create form is always sent"
    refused = [e for e in crawler.audit.entries() if e["decision"] == "blocked"
               and "edit of existing data" in e["reason"]]
    if submit_edits:
        assert POSTED["/bills/3/edit"] > before["/bills/3/edit"] and not refused
    else:
        assert POSTED["/bills/3/edit"] == before["/bills/3/edit"]
        assert {e["action"] for e in refused} == {"click 'Save the bill'"}
        assert "/bills/3/edit" in refused[0]["reason"] and "Weekly groceries" in refused[0]["reason"]


def test_a_resumed_greedy_crawl_keeps_what_its_policy_learned(
        tmp_path: Path, chromedriver_url: str, pages_url: str) -> None:
    cfg = parse_config(_config(tmp_path, chromedriver_url, [{"id": "chain", "entry": pages_url + "/chain"}], 5))
    first = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    first.run()
    learned = first.policy.snapshot()  # type: ignore[attr-defined]
    assert learned["tries"] and learned["visited"] and learned["seen"]
    cfg2 = parse_config(_config(tmp_path, chromedriver_url, [{"id": "chain", "entry": pages_url + "/chain"}], 8))
    again = Crawler(cfg2, cfg2.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    kept = again.policy.snapshot()  # type: ignore[attr-defined]
    assert {k: kept[k] for k in ("tries", "hits", "visited", "label_tries", "seen")} == \
        {k: learned[k] for k in ("tries", "hits", "visited", "label_tries", "seen")}
    stats = again.run()
    assert stats.budget_used == 8, stats
    audit = again.audit.entries()
    resumed = next(i for i, e in enumerate(audit) if e["decision"] == "restart" and e["reason"] == "resume")
    first_move = next(e for e in audit[resumed + 1:] if e["decision"] in ("act", "open", "restart"))
    # It knows the chain is explored up to the untried button: no first link followed again, no re-learning.
    assert first_move["decision"] == "open" and first_move["url"] == pages_url + "/chain/3", first_move


def test_back_is_offered_only_where_it_stays_in_the_app(tmp_path: Path, chromedriver_url: str,
                                                       pages_url: str) -> None:
    """Back from a fresh tab's first page showed Chromium's new-tab page: a screen of no app in the graph (TiddlyWiki
    and Node-RED crawls had one), and three steps lost to leave it (back, back again, restart). The web adapter
    reads the tab's history (DevTools), so back is offered only where it returns to a page of the app. The random
    policy, which picks back like any other action, is the one that found the new-tab page most (5 times in a
    200-action TiddlyWiki crawl)."""
    device = open_device(EndpointSpec("d0", chromedriver_url), Profile(VIEWPORTS["desktop"]))
    try:
        device.open(pages_url + "/drawn")
        _settled, landing = device.settle_and_capture()
        assert landing.back_target is not None and not landing.back_target.startswith(pages_url), landing.back_target
        device.tap(*next(w for w in landing.widgets if w.label == "About").element.bbox.center)
        _settled, about = device.settle_and_capture()
        assert about.location == pages_url + "/drawn/about" and about.back_target == pages_url + "/drawn"
    finally:
        device.quit()
    cfg = parse_config({**_config(tmp_path, chromedriver_url, [{"id": "drawn", "entry": pages_url + "/drawn"}], 14),
                        "policy": "random", "seed": 3})
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    stats = crawler.run()
    assert stats.errors == 0 and stats.steps >= 10, stats
    states = crawler.graph.states
    assert {s.location for s in states.values()} == {pages_url + "/drawn", pages_url + "/drawn/about"}, states
    backs = {s.location: any(a.type == "navigate_back" for a in s.actions.values()) for s in states.values()}
    assert backs[pages_url + "/drawn/about"] and not backs[pages_url + "/drawn"], backs
    assert not [e for e in crawler.audit.entries() if "left the app" in str(e.get("reason"))]
