"""The Android adapter end to end through a real Appium server, with Appium's fake driver as the device.

An Android device or emulator cannot run on this machine, so ``@appium/fake-driver`` (installed by
scripts/bootstrap.sh next to the Chromium driver) stands in for one: it loads a UiAutomator2 page source from
tests/fixtures/android/ as its "app", returns it from ``GET /source``, returns a fixed 400 x 852 PNG as the
screenshot, and records every W3C action sequence it receives (``GET /log`` of type ``actions``). Everything
between the explorer and that driver is real: ``open_device`` with an ``appium-android`` endpoint, the Appium
server, appium-python-client, the adapter's parsing, ``Device``'s gestures, the crawler and the graph store.

What the fake driver cannot do, a real UiAutomator2 session can: report the current activity and package,
press key codes (back, home), launch apps, report an active element to type into, and scroll with
``mobile: scrollGesture``. Those commands must fail with an error that names what is missing, as a
``WebDriverException`` the crawler records on the transition, never as a lost session.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from selenium.common.exceptions import WebDriverException

from explorers.android_platform import AndroidAdapter
from explorers.candidates import candidates
from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.device import Device, png_size
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import EndpointSpec, OpenedDevice, open_device
from explorers.settle import SettleConfig
from schemas import Action, ActionType, Platform
from tests import servers

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).parent / "fixtures" / "android"
NOTES_APP = FIXTURES / "notes_fake_app.xml"  # a notes app with status bar, navigation bar and keyboard windows
SHADE_APP = FIXTURES / "notification_shade_fake_app.xml"  # only System UI windows: no app package in the source
FAKE_DRIVER_DIR = servers.APPIUM_HOME / "node_modules" / "@appium" / "fake-driver"
FAKE_SCREENSHOT = FAKE_DRIVER_DIR / "build" / "lib" / "screen.png"  # what the fake driver returns as a screenshot
PACKAGE = "com.example.notes"
SETTLE = SettleConfig(timeout_s=2.0, interval_s=0.02, quiet_polls=2)


@pytest.fixture(scope="module")
def fake_appium_url(server_log_dir: Path) -> Iterator[str]:
    """The repo-local Appium server; skips locally (fails under CI) without node, Appium or the fake driver."""
    from conftest import BOOTSTRAP_HINT, require

    require(shutil.which("node") is not None, "node", BOOTSTRAP_HINT)
    require(servers.APPIUM_BINARY.exists(), f"Appium ({servers.APPIUM_BINARY})", BOOTSTRAP_HINT)
    require(FAKE_DRIVER_DIR.is_dir(), f"@appium/fake-driver ({FAKE_DRIVER_DIR})", BOOTSTRAP_HINT)
    proc = servers.start_appium(log_dir=server_log_dir)
    try:
        yield proc.url
    finally:
        proc.stop()


def _endpoint(url: str, app: Path) -> EndpointSpec:
    return EndpointSpec("fake-android", url, "appium-android", {
        "platformName": "Fake", "appium:automationName": "Fake", "appium:app": str(app.resolve()),
        "appium:newCommandTimeout": 120,
    })


@pytest.fixture
def device(fake_appium_url: str) -> Iterator[OpenedDevice]:
    dev = open_device(_endpoint(fake_appium_url, NOTES_APP), Profile(VIEWPORTS["phone"]), SETTLE)
    try:
        yield dev
    finally:
        dev.quit()


def _bounds(node: ET.Element) -> tuple[float, ...]:
    m = re.fullmatch(r"\[(\d+),(\d+)\]\[(\d+),(\d+)\]", node.get("bounds", ""))
    assert m, node.attrib
    return tuple(float(g) for g in m.groups())


def _nodes_by_path(root: ET.Element) -> dict[str, ET.Element]:
    """Page-source nodes by the index path the parser gives its elements (``0/0/2`` = third child of ...)."""
    out: dict[str, ET.Element] = {}

    def walk(node: ET.Element, path: str) -> None:
        out[path] = node
        for child in node:
            walk(child, f"{path}/{child.get('index')}")

    for top in root:
        walk(top, str(top.get("index")))
    return out


def _actions(dev: Device) -> list[list[dict[str, Any]]]:
    """Every W3C action sequence the fake driver has received in this session, oldest first."""
    return dev.driver.get_log("actions")


def test_capture_turns_the_fake_drivers_page_source_into_app_widgets(device: OpenedDevice) -> None:
    """settle_and_capture reads the UiAutomator2 XML and the screenshot through Appium: app widgets with their
    text, resource-id, bounds, flags and roles; System UI and keyboard windows dropped; location = package."""
    settled, screen = device.settle_and_capture()
    assert settled.stable and settled.polls >= SETTLE.quiet_polls  # the polling fallback ran on page sources
    source_text = NOTES_APP.read_text(encoding="utf-8")
    assert screen.raw_tree is not None and screen.raw_tree.decode("utf-8") == source_text  # served verbatim

    # Screenshot size comes from the PNG the driver sent, and the fixture is drawn at that size.
    root = ET.fromstring(source_text)
    assert (screen.width, screen.height) == png_size(FAKE_SCREENSHOT.read_bytes())
    assert (screen.width, screen.height) == (int(root.get("width", 0)), int(root.get("height", 0)))
    assert screen.screenshot == FAKE_SCREENSHOT.read_bytes()

    # The fake driver has no `mobile: getCurrentActivity`: the capture still works, located by the package alone.
    with pytest.raises(WebDriverException, match="mobile: getCurrentActivity"):
        _ = device.driver.current_activity
    assert screen.platform == Platform.ANDROID
    assert (screen.package, screen.location) == (PACKAGE, PACKAGE)

    # Every widget is the app node at its index path, with that node's box, ids and flags.
    by_path = _nodes_by_path(root)
    assert screen.widgets and all(w.package == PACKAGE for w in screen.widgets)
    for w in screen.widgets:
        e, node = w.element, by_path[w.element.path]
        assert (node.get("package"), node.get("class")) == (PACKAGE, e.class_name), e
        assert e.bbox.as_tuple() == _bounds(node), e
        assert (e.resource_id, e.content_desc) == (node.get("resource-id", ""), node.get("content-desc", "")), e
        flags = (e.scrollable, e.long_clickable, e.checkable, e.checked)
        assert flags == tuple(node.get(k) == "true" for k in ("scrollable", "long-clickable", "checkable",
                                                               "checked")), e
        assert e.bbox.y2 <= 560, e  # nothing from the keyboard (from y=560) or the navigation bar
    by_id = {w.element.resource_id: w.element for w in screen.widgets if w.element.resource_id}
    by_desc = {w.element.content_desc: w.element for w in screen.widgets if w.element.content_desc}

    search = by_id[f"{PACKAGE}:id/search"]
    assert (search.role, search.text, search.editable, search.clickable) == ("textbox", "Search notes", True, False)
    assert search.bbox.as_tuple() == (16, 88, 384, 136)
    note_list = by_id[f"{PACKAGE}:id/note_list"]
    assert (note_list.role, note_list.scrollable, note_list.bbox.as_tuple()) == ("list", True, (0, 144, 400, 560))
    drawer = by_desc["Open navigation drawer"]
    assert (drawer.role, drawer.clickable, drawer.bbox.as_tuple()) == ("button", True, (0, 24, 56, 80))
    fab = by_desc["New note"]  # class com.google...FloatingActionButton: a button
    assert (fab.role, fab.clickable, fab.resource_id) == ("button", True, f"{PACKAGE}:id/fab_new_note")
    rows = [w.element for w in screen.widgets if w.element.resource_id == f"{PACKAGE}:id/note_row"]
    assert [r.role for r in rows] == ["group"] * 3 and all(r.clickable and r.long_clickable for r in rows)
    assert [r.bbox.as_tuple() for r in rows] == [(0, 144, 400, 216), (0, 216, 400, 288), (0, 288, 400, 360)]
    assert "Dentist" in rows[1].text and "Tuesday 9:30" in rows[1].text  # a row is labelled by its children
    boxes = {e.content_desc: e for e in by_desc.values() if e.role == "checkbox"}
    assert {d: b.checked for d, b in boxes.items()} == {
        "Done: Groceries": False, "Done: Dentist": True, "Done: Book club": False}

    # Dropped: status bar (clock, battery), keyboard keys, navigation buttons, and the hidden zero-size view.
    labels = {w.element.text for w in screen.widgets} | set(by_desc)
    for gone in ("9:41", "9:41 AM", "Battery 87 percent.", "q", "w", "Enter", "Back", "Home", "No notes yet"):
        assert gone not in labels
    assert not any("systemui" in w.package or "inputmethod" in w.package for w in screen.widgets)


def test_gestures_reach_the_fake_driver_as_w3c_touch_actions(device: OpenedDevice) -> None:
    """A candidate click, a long press, a swipe and a key go through Device as W3C actions, in screenshot pixels
    (pointer scale 1 on Android), and the driver logs exactly what was sent."""
    screen = device.capture()
    fab_click = next(c for c in candidates(screen) if c.type is ActionType.CLICK and c.widget is not None
                     and c.widget.element.content_desc == "New note")
    device.perform(fab_click.action, fab_click.widget)
    row = next(w.element for w in screen.widgets if w.element.resource_id.endswith(":id/note_row"))
    rx, ry = row.bbox.center
    device.perform(Action(type=ActionType.LONG_PRESS, x=rx, y=ry, duration_ms=650, image_width=screen.width,
                          image_height=screen.height))
    device.swipe(200, 500, 200, 200, ms=90)
    device.key("enter")

    log = _actions(device)
    assert len(log) == 4, log
    (tap,), (press,), (swipe,), key_seq = log
    fab = fab_click.widget.element.bbox  # type: ignore[union-attr]
    assert tap["parameters"]["pointerType"] == "touch"
    assert [a["type"] for a in tap["actions"]] == ["pointerMove", "pointerDown", "pointerUp"]
    assert (tap["actions"][0]["x"], tap["actions"][0]["y"]) == (round(fab.center[0]), round(fab.center[1]))
    assert (fab.x1 <= tap["actions"][0]["x"] <= fab.x2) and (fab.y1 <= tap["actions"][0]["y"] <= fab.y2)
    assert [a["type"] for a in press["actions"]] == ["pointerMove", "pointerDown", "pause", "pointerUp"]
    assert press["actions"][2]["duration"] == 650
    assert (press["actions"][0]["x"], press["actions"][0]["y"]) == (round(rx), round(ry))
    moves = [a for a in swipe["actions"] if a["type"] == "pointerMove"]
    assert [(m["x"], m["y"], m["duration"]) for m in moves] == [(200, 500, 90), (200, 200, 90)]
    keys = next(s for s in key_seq if s["type"] == "key")
    assert [a["type"] for a in keys["actions"]] == ["keyDown", "keyUp"] and keys["actions"][0]["value"] == "\ue007"


def test_commands_the_fake_driver_lacks_fail_clearly_and_leave_the_session_usable(device: OpenedDevice) -> None:
    """back/home (mobile: pressKey), open (mobile: activateApp / startActivity), typing (active element) and
    scrolling raise a WebDriverException naming what is missing — not SessionLost — and the session lives on."""
    cases = [
        (device.back, "mobile: pressKey"),
        (device.home, "mobile: pressKey"),
        (lambda: device.open(PACKAGE), "mobile: activateApp"),
        (lambda: device.open(f"{PACKAGE}/.NotesListActivity"), "mobile: startActivity"),
        (lambda: device.type_text("milk", 200, 112), "not yet been implemented"),  # no active-element command
    ]
    for call, message in cases:
        with pytest.raises(WebDriverException, match=re.escape(message)):
            call()
    # Scrolling asks for the window size, which the fake driver only knows for its own <app> format.
    with pytest.raises(WebDriverException):
        device.scroll("down")
    # type_text tapped the field before asking for the active element: that tap reached the driver.
    assert [(s[0]["actions"][0]["x"], s[0]["actions"][0]["y"]) for s in _actions(device)] == [(200, 112)]
    assert device.alive()
    assert device.capture().location == PACKAGE


def test_source_without_app_windows_is_captured_without_the_current_package(fake_appium_url: str) -> None:
    """With only System UI on screen the page source names no app package; the adapter then asks the driver,
    and a driver without `mobile: getCurrentPackage` (like this fake one) gives an empty location, not an error."""
    dev = open_device(_endpoint(fake_appium_url, SHADE_APP), Profile(VIEWPORTS["phone"]), SETTLE)
    try:
        with pytest.raises(WebDriverException, match="mobile: getCurrentPackage"):
            _ = dev.driver.current_package
        screen = dev.capture()
    finally:
        dev.quit()
    assert (screen.package, screen.location, screen.widgets) == ("", "", [])
    assert screen.raw_tree is not None and b"notification_panel" in screen.raw_tree


class _AlreadyOpenApp(AndroidAdapter):
    """The fake driver loads its app when the session starts and cannot launch one: ``open`` only records the
    target (a real device would run ``mobile: activateApp``)."""

    def __init__(self) -> None:
        self.opened: list[str] = []

    def open(self, driver: Any, target: str) -> None:
        self.opened.append(target)


def test_crawler_records_the_fake_app_in_the_graph_store(tmp_path: Path, fake_appium_url: str) -> None:
    """A short crawl on the fake app: the crawler observes the Android screen, acts on its candidates (taps are
    accepted, unsupported commands become transition errors), and the exported graph holds the app's state.

    The one stand-in beyond the fake driver: opening the entry only records the package (``_AlreadyOpenApp``),
    because the fake driver cannot launch apps. The fake app never changes its screen, so the crawl finds one
    state; what it proves is the Android path through the crawler and the store, not exploration."""
    steps = 14
    cfg = parse_config({
        "run_id": "fake-android", "output": str(tmp_path),
        "devices": [{"name": "fake-android", "url": fake_appium_url, "kind": "appium-android"}],
        "apps": [{"id": "notes", "platform": "android", "entry": PACKAGE}],
        "budget": {"max_steps": steps, "max_seconds": 120, "max_restarts": 3, "max_session_restarts": 0},
        "settle": {"timeout_s": 2.0, "interval_s": 0.02, "quiet_polls": 2},
    })
    profile = Profile(VIEWPORTS["phone"])
    endpoint = _endpoint(fake_appium_url, NOTES_APP)
    adapters: list[_AlreadyOpenApp] = []

    def factory() -> Device:
        dev = open_device(endpoint, profile, SETTLE)
        adapters.append(_AlreadyOpenApp())
        dev.adapter = adapters[-1]
        return dev

    crawler = Crawler(cfg, cfg.apps[0], profile, endpoint, device_factory=factory)
    stats = crawler.run()
    assert stats.session_restarts == 0, stats
    assert len(adapters) == 1 and adapters[0].opened and set(adapters[0].opened) == {PACKAGE}
    assert stats.steps >= 3, stats  # the page source never changes, so the policy may stop before the budget
    assert stats.budget_used == steps or stats.stopped.startswith(("done", "restart budget")), stats

    summary = crawler.store.export()
    assert summary.states >= 1 and summary.transitions == stats.steps
    nodes = pq.read_table(crawler.store.dir / "nodes.parquet").to_pylist()
    assert {n["location"] for n in nodes} == {PACKAGE}
    observations = pq.read_table(crawler.store.dir / "observations.parquet").to_pylist()
    assert {o["platform"] for o in observations} == {"android"}
    assert all((o["width"], o["height"]) == png_size(FAKE_SCREENSHOT.read_bytes()) for o in observations)
    assert all(crawler.store.blobs.exists(o["screenshot_sha256"]) for o in observations)
    transitions = pq.read_table(crawler.store.dir / "transitions.parquet").to_pylist()
    assert not any(t["effective"] for t in transitions)  # the fake app's screen never changes
    for t in transitions:
        kind = t["action"]["type"]
        if kind in ("click", "long_press"):
            assert t["error"] is None, t  # W3C pointer actions are accepted
        elif kind in ("navigate_back", "type", "scroll"):
            assert t["error"], t  # recorded, and the crawl carried on
    kinds = {t["action"]["type"] for t in transitions}
    assert {"click", "long_press"} <= kinds and {"type", "scroll"} & kinds, kinds
