"""The in-page settle wait (web) in real Chromium: what it waits for, what it does not, and navigation under it.

Each page reacts to a tap the way real apps do — a slow fetch, a CSS transition, a navigation scheduled by a
script, a spinner that never stops — and the capture taken by ``Device.settle_and_capture`` must show the
settled screen, in bounded time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from explorers.profiles import VIEWPORTS, Profile
from explorers.scripts import locate
from explorers.sessions import EndpointSpec, OpenedDevice, open_device
from explorers.settle import SettleConfig
from explorers.web_platform import MAX_ELEMENTS
from explorers.web_script import SETTLE_EXTRACT_JS
from tests.pages import HTML, PageHandler, serve

_NAVIGATE_ON_WAIT = """<script>window.__armed = false; const ga = Document.prototype.getAnimations;
    Document.prototype.getAnimations = function () {
      if (window.__armed) { window.__armed = false; location.href = 'TARGET'; }
      return ga.apply(this, arguments); };
    </script><button id=go onclick="window.__armed = true; document.getElementById('st').textContent = 'armed'">
    Go</button><p id=st>idle</p>"""

# A script (not a tap: no input event, so the quiet window counts from the wait's start) arms the page; the settle
# wait's first look (its document.getAnimations call, made just before the early read of the screen) then
# schedules CHANGE for the next task, which runs after that read and inside the window: a reading kept without
# checking would miss it, however fast or loaded the machine is.
_CHANGE_AFTER_FIRST_LOOK = """<script>window.__armed = false; const ga = Document.prototype.getAnimations;
    Document.prototype.getAnimations = function () {
      if (window.__armed) { window.__armed = false; setTimeout(function () { CHANGE; }, 0); }
      return ga.apply(this, arguments); };
    </script><button id=go>Go</button><p id=st>before</p>
    <div style="height:3000px"></div><p>bottom</p>"""

PAGES = {
    # A click starts a fetch that answers after 400 ms; only then is the result rendered.
    "/fetch": """<button id=go onclick="fetch('/slow').then(r => r.text()).then(t => {
        const p = document.createElement('p'); p.id = 'result'; p.textContent = t; document.body.append(p); })">
        Load</button>""",
    # A click starts a 400 ms transition (no DOM mutation while it runs) that ends by revealing a label.
    "/transition": """<style>#box{width:50px;height:50px;background:#c00;transition:width .4s linear}
        #box.wide{width:300px}</style><button id=go onclick="const b=document.getElementById('box');
        b.addEventListener('transitionend', () => { document.getElementById('lbl').textContent = 'opened'; });
        b.classList.add('wide')">Open</button><div id=box></div><p id=lbl>closed</p>""",
    # A click arms the page; the settle wait's first look (its document.getAnimations call) then starts a
    # navigation to a page the server answers only after 500 ms. So the navigation always begins inside the wait
    # however loaded the machine is, and the old page stays alive and quiet meanwhile: a wait that only watched
    # for DOM quiet would capture it (a fixed delay before navigating raced the tap's return on a loaded machine).
    "/navigate": _NAVIGATE_ON_WAIT.replace("TARGET", "/landed"),
    # The same, to an address that answers 204 No Content: the navigation never commits and the page stays.
    "/nowhere": _NAVIGATE_ON_WAIT.replace("TARGET", "/no-content"),
    "/landed": "<h1>Landed page</h1>",
    "/plain": "<h1>Plain page</h1>",
    # A click whose whole reaction runs in the click handler: done before the wait starts.
    "/instant": """<button id=go onclick="document.getElementById('st').textContent = 'tapped'">Go</button>
        <p id=st>idle</p>""",
    # Reactions that arrive just after the early read: a DOM change, and a scroll (no DOM mutation at all).
    "/late-text": _CHANGE_AFTER_FIRST_LOOK.replace("CHANGE", "document.getElementById('st').textContent = 'after'"),
    "/late-scroll": _CHANGE_AFTER_FIRST_LOOK.replace("CHANGE", "window.scrollTo(0, 600)"),
    # A page that scrolls smoothly: a scroll by script animates over several frames, with no DOM mutation.
    "/smooth": """<style>html{scroll-behavior:smooth}</style><p>top</p><div style="height:6000px"></div>
        <p>bottom</p>""",
    # Records every mouse event the target receives, for the desktop click variants.
    "/mouse": """<div id=go style="width:200px;height:100px;background:#ccc">target</div><p id=log></p><script>
        const log = []; const t = document.getElementById('go');
        for (const k of ['click', 'dblclick', 'contextmenu', 'auxclick', 'mouseover']) {
          t.addEventListener(k, e => { log.push(k + ':' + e.button); if (k === 'contextmenu') e.preventDefault(); });
        }
        window.__log = log;</script>""",
    # A search box that renders its results 300 ms after the last keystroke (a debounce: docsify waits 100 ms,
    # TiddlyWiki 400 ms), with nothing happening in the page meanwhile.
    "/debounce": """<input id=go type=search><ul id=hits></ul><script>let t = null;
        document.getElementById('go').addEventListener('input', e => { clearTimeout(t); t = setTimeout(() => {
          const li = document.createElement('li'); li.textContent = 'hits for ' + e.target.value;
          document.getElementById('hits').replaceChildren(li); }, 300); });</script>""",
    # A tap starts a clock whose every tick schedules the next one, and a reminder due in 10 s: the first tick is
    # the action's reaction and is awaited; the chain after it and the far-off reminder are not.
    "/ticker": """<button id=go onclick="let n = 0; setTimeout(function tick() {
        document.getElementById('n').textContent = 'ticks ' + (++n); setTimeout(tick, 150); }, 150);
        setTimeout(() => {}, 10000);">Start</button>
        <p id=n>ticks 0</p>""",
    # An endless spinner: an infinite animation is not "still settling".
    "/spinner": """<style>@keyframes s{to{transform:rotate(360deg)}}
        #sp{width:30px;height:30px;border:3px solid #000;animation:s 1s linear infinite}</style>
        <div id=sp></div><button id=go onclick="document.getElementById('t').textContent='tapped'">Tap</button>
        <p id=t>waiting</p>""",
}


class _Handler(PageHandler):
    def do_GET(self) -> None:
        if self.path == "/no-content":
            time.sleep(0.2)
            self.reply(b"", status=204)
            return
        if self.path == "/landed":
            time.sleep(0.5)  # the old page is left alone and quiet for this long
        if self.path == "/slow":
            time.sleep(0.4)
            body = b"slow answer"
        else:
            body = f"<!doctype html><html><body>{PAGES.get(self.path, 'missing')}</body></html>".encode()
        self.reply(body, "text/plain" if self.path == "/slow" else HTML)


@pytest.fixture(scope="module")
def pages_url() -> Iterator[str]:
    with serve(_Handler) as url:
        yield url


@pytest.fixture(scope="module")
def device(chromedriver_url: str) -> Iterator[OpenedDevice]:
    d = open_device(EndpointSpec("settle", chromedriver_url), Profile(VIEWPORTS["desktop"]),
                    SettleConfig(timeout_s=3.0))
    try:
        yield d
    finally:
        d.quit()


def _open_and_tap(device: OpenedDevice, url: str) -> None:
    device.open(url)
    device.settle()
    pos = locate(device, "#go")
    assert pos is not None
    device.tap(*pos)


def _texts(screen: object) -> set[str]:
    return {w.element.text for w in screen.widgets}  # type: ignore[attr-defined]


def test_waits_for_a_slow_fetch_to_be_rendered(device: OpenedDevice, pages_url: str) -> None:
    _open_and_tap(device, pages_url + "/fetch")
    settled, screen = device.settle_and_capture()
    assert settled.stable and settled.polls == 1  # one round trip
    assert "slow answer" in _texts(screen)
    assert settled.waited_s >= 0.3


def test_waits_for_a_finite_css_transition(device: OpenedDevice, pages_url: str) -> None:
    _open_and_tap(device, pages_url + "/transition")
    settled, screen = device.settle_and_capture()
    assert settled.stable
    assert "opened" in _texts(screen)


def test_a_navigation_during_the_wait_is_followed_to_the_new_page(device: OpenedDevice, pages_url: str) -> None:
    _open_and_tap(device, pages_url + "/navigate")
    settled, screen = device.settle_and_capture()
    assert screen.location.endswith("/landed")
    assert "Landed page" in _texts(screen)
    assert settled.stable and settled.polls >= 2  # the first wait died with its page


def test_a_navigation_that_never_commits_holds_one_wait_only(device: OpenedDevice, pages_url: str) -> None:
    _open_and_tap(device, pages_url + "/nowhere")
    held, screen = device.settle_and_capture()
    assert screen.location.endswith("/nowhere")  # a 204 leaves the page where it was
    assert not held.stable  # the wait could not know the navigation would not commit: it ran to its timeout
    again = device.settle()
    assert again.stable and again.polls == 1  # the next wait is not held by the old navigation


def test_going_back_to_a_cached_page_does_not_hold_the_wait(device: OpenedDevice, pages_url: str) -> None:
    # Leaving /plain for /landed marks /plain as being left; Back brings that very document back from the
    # back-forward cache. It must count as shown again, not as still being left (which held every wait on it
    # to the timeout: 3 s per Back in a crawl).
    device.open(pages_url + "/plain")
    assert device.settle().stable
    device.open(pages_url + "/landed")
    assert device.settle().stable
    device.back()
    settled, screen = device.settle_and_capture()
    assert screen.location.endswith("/plain") and "Plain page" in _texts(screen)
    assert settled.stable and settled.polls == 1  # stable: settled before the timeout (no wall-clock bound)


def test_an_endless_spinner_does_not_hold_the_wait_to_its_timeout(device: OpenedDevice, pages_url: str) -> None:
    _open_and_tap(device, pages_url + "/spinner")
    settled, screen = device.settle_and_capture()
    # stable means the page settled before the timeout (a wait held by the spinner returns stable=False at it);
    # no wall-clock bound, so a loaded machine cannot fail it.
    assert settled.stable
    assert "tapped" in _texts(screen)


def _settle_extract(device: OpenedDevice, quiet_ms: int = 30) -> dict:
    """The in-page wait-and-read script itself, for what the adapter does not pass on (which reading it kept, how
    many looks it took, how long before its start the action was)."""
    got = device.driver.execute_async_script(SETTLE_EXTRACT_JS, quiet_ms, 3000, 2000, MAX_ELEMENTS)
    assert got["settle"]["stable"], got["settle"]
    return got


def _open_and_arm(device: OpenedDevice, url: str) -> None:
    device.open(url)
    device.settle()
    device.driver.execute_script("window.__armed = true")


def test_the_quiet_window_counts_from_the_action(device: OpenedDevice, pages_url: str) -> None:
    # The tap's input events reached the page at least 0.4 s before the wait starts; nothing changed since the
    # click handler ran. A 0.3 s window counted from the action is over: the first look settles it.
    _open_and_tap(device, pages_url + "/instant")
    time.sleep(0.4)  # a lower bound on the time since the action, not a race
    got = _settle_extract(device, quiet_ms=300)
    assert got["settle"]["since"] >= 300
    assert got["settle"]["looks"] == 1 and got["settle"]["extract"] == "early"
    assert "tapped" in {e["text"] for e in got["screen"]["elements"]}


def test_a_document_the_action_loaded_counts_from_its_load(device: OpenedDevice, pages_url: str) -> None:
    # The wait's script is the first to run in the new document: what the document did before cannot be watched,
    # but its load ended (and every resource arrived) at least 0.4 s ago, so a 0.3 s window is already over.
    device.open(pages_url + "/plain")  # returns once the page has loaded
    time.sleep(0.4)
    got = _settle_extract(device, quiet_ms=300)
    assert got["settle"]["fresh"] and got["settle"]["since"] >= 300
    assert got["settle"]["looks"] == 1
    assert "Plain page" in {e["text"] for e in got["screen"]["elements"]}


def test_without_an_action_the_quiet_window_counts_from_the_wait(device: OpenedDevice, pages_url: str) -> None:
    # The previous wait already consumed the tap: a second wait on the same page has no action to count from.
    _open_and_tap(device, pages_url + "/instant")
    device.settle()
    got = _settle_extract(device, quiet_ms=200)
    assert got["settle"]["since"] == 0
    assert got["settle"]["waited"] >= 200 and got["settle"]["looks"] > 1


def test_a_smooth_scroll_is_awaited_to_its_end(device: OpenedDevice, pages_url: str) -> None:
    device.open(pages_url + "/smooth")
    device.settle()
    device.scroll("down")
    settled, screen = device.settle_and_capture()
    assert settled.stable
    end = device.driver.execute_async_script(
        """const done = arguments[0]; const se = document.scrollingElement;
        let last = -1; (function look() { if (se.scrollTop === last) done(last); else { last = se.scrollTop;
        setTimeout(look, 200); } })();""")
    assert end > 0
    assert screen.scroll_y == end  # read where the scroll ended, not on its way


def test_a_screen_done_with_the_action_is_read_once_at_the_first_look(
    device: OpenedDevice, pages_url: str
) -> None:
    _open_and_tap(device, pages_url + "/instant")
    got = _settle_extract(device)
    assert got["settle"]["extract"] == "early"  # read while the quiet window ran, and kept
    assert "tapped" in {e["text"] for e in got["screen"]["elements"]}


def test_a_change_after_the_early_read_is_read_again(device: OpenedDevice, pages_url: str) -> None:
    _open_and_arm(device, pages_url + "/late-text")
    got = _settle_extract(device)
    assert got["settle"]["extract"] == "again"
    texts = {e["text"] for e in got["screen"]["elements"]}
    assert "after" in texts and "before" not in texts


def test_a_scroll_after_the_early_read_is_read_again(device: OpenedDevice, pages_url: str) -> None:
    # A scroll mutates nothing in the DOM, yet moves every rect: the early reading must not be kept.
    _open_and_arm(device, pages_url + "/late-scroll")
    settled, screen = device.settle_and_capture()
    assert settled.stable
    assert screen.scroll_y == 600
    assert "Go" not in _texts(screen)  # scrolled out of the viewport


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"button": "right"}, ["contextmenu:2", "auxclick:2"]),
        ({"clicks": 2}, ["click:0", "click:0", "dblclick:0"]),
        ({"button": "middle"}, ["auxclick:1"]),
    ],
)
def test_desktop_click_variants_reach_the_page_as_mouse_events(
    device: OpenedDevice, pages_url: str, fields: dict, expected: list[str]
) -> None:
    from schemas import Action

    device.open(pages_url + "/mouse")
    device.settle()
    x, y = locate(device, "#go")
    w, h = device.capture().width, device.capture().height
    device.perform(Action(type="click", x=x, y=y, image_width=w, image_height=h, **fields))
    log = [e for e in device.driver.execute_script("return window.__log") if not e.startswith("mouseover")]
    assert log == expected


def test_hover_moves_the_mouse_without_pressing(device: OpenedDevice, pages_url: str) -> None:
    from schemas import Action

    device.open(pages_url + "/mouse")
    device.settle()
    x, y = locate(device, "#go")
    w, h = device.capture().width, device.capture().height
    device.perform(Action(type="hover", x=x, y=y, image_width=w, image_height=h))
    log = device.driver.execute_script("return window.__log")
    assert "mouseover:0" in log and not any(e.startswith(("click", "contextmenu")) for e in log)


def test_a_debounced_search_is_captured_with_its_results(device: OpenedDevice, pages_url: str) -> None:
    device.open(pages_url + "/debounce")
    device.settle()
    pos = locate(device, "#go")
    assert pos is not None
    device.type_text("herons", *pos)
    settled, screen = device.settle_and_capture()
    assert settled.stable
    # without awaiting the timer the capture shows the empty list, and the results land on the next action's screen
    assert "hits for herons" in _texts(screen)


def test_a_clock_started_by_the_action_does_not_hold_the_wait(device: OpenedDevice, pages_url: str) -> None:
    device.open(pages_url + "/ticker")
    device.settle()
    pos = locate(device, "#go")
    assert pos is not None
    device.tap(*pos)
    settled, screen = device.settle_and_capture()
    # stable: neither the tick chain nor the 10 s reminder held the wait to its 3 s timeout
    assert settled.stable
    assert "ticks 0" not in _texts(screen)
