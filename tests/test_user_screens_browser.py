"""Screens as a user counts them, on captures real Chromium takes of a tiny local page set.

One ledger page carries everything that split screens on real apps: a breadcrumb trail that grows with every
visit, a login flash shown once (``role="alert"``), a ticking clock, a sort link that reorders the table, a search
box, a long scroll, a user menu in the banner and a delete button that opens a modal ``<dialog>``. None of the
first ones may make another screen; the dialog must, and the screen is named by its main heading, never by the
user menu or the site title.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from explorers.profiles import VIEWPORTS, Profile
from explorers.scripts import locate
from explorers.sessions import EndpointSpec, OpenedDevice, open_device
from explorers.settle import SettleConfig
from graph.reader import AppGraph, build_graph
from graph.screen import Screen
from graph.user_screens import screen_key, screen_name, screens_of
from schemas import Action, ActionType, DeviceProfile, Observation, Platform, Transition
from schemas.base import stable_id
from tests.pages import PageHandler, serve

ROWS = [("Rent", 900), ("Power", 80), ("Water", 30), ("Phone", 45)]


class _Handler(PageHandler):
    visits = 0

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != "/ledger":
            self.reply(b"", status=404)
            return
        type(self).visits += 1
        n = type(self).visits
        desc = parse_qs(parts.query).get("sort") == ["desc"]
        rows = sorted(ROWS, key=lambda r: r[1], reverse=desc)
        trail = "".join(f'<li><a href="/ledger?from={i}">Visit {i}</a></li>' for i in range(1, n + 1))
        flash = '<div role="alert"><p>Welcome back, you are logged in</p></div>' if n == 1 else ""
        table = "".join(f"<tr><td>{name}</td><td>{amount}</td></tr>" for name, amount in rows)
        body = f"""<!doctype html><html><head><title>Invoices - Ledger</title></head><body>
<header><a href="/ledger">Ledger</a> <h3>Admin</h3><a href="/ledger?user=1">admin@example.org</a>
  <time id=clock>{datetime.now(UTC).strftime('%H:%M:%S')}.{n}</time></header>
<nav aria-label="Breadcrumb"><ol>{trail}</ol></nav>
<main>{flash}<h1>Invoices</h1>
  <form action="/ledger"><input type=search name=q aria-label="Search invoices"></form>
  <a id=sort href="/ledger?sort={'asc' if desc else 'desc'}">Sort by amount</a>
  <table><tr><th>Name</th><th>Amount</th></tr>{table}</table>
  <button id=del onclick="document.getElementById('dlg').showModal()">Delete all</button>
  <div style="height:2400px"></div><h2>Notes on invoices</h2><p>Paid monthly.</p>
</main>
<dialog id=dlg><h2>Delete all invoices?</h2><button onclick="this.closest('dialog').close()">Cancel</button>
  <button>Delete</button></dialog>
<footer><p>Ledger 1.0</p></footer>
<script>setInterval(() => {{ document.getElementById('clock').textContent = new Date().toISOString(); }}, 300);
</script></body></html>"""
        self.reply(body.encode())


@pytest.fixture(scope="module")
def pages_url() -> Iterator[str]:
    with serve(_Handler) as url:
        yield url


@pytest.fixture(scope="module")
def device(chromedriver_url: str) -> Iterator[OpenedDevice]:
    d = open_device(EndpointSpec("screens", chromedriver_url), Profile(VIEWPORTS["desktop"]),
                    SettleConfig(timeout_s=3.0))
    try:
        yield d
    finally:
        d.quit()


def _look(device: OpenedDevice) -> Screen:
    return device.settle_and_capture()[1]


def test_real_captures_count_screens_as_a_user_does(device: OpenedDevice, pages_url: str) -> None:
    device.open(pages_url + "/ledger")
    first = _look(device)  # flash, a trail of one, the clock at one time
    assert any(w.element.role == "alert" for w in first.widgets)
    assert screen_name(first.widgets, first.title) == "Invoices"  # not "Admin" (the user menu), not "Ledger"
    device.open(pages_url + "/ledger")
    again = _look(device)  # no flash, a trail of two, another time
    assert not any(w.element.role == "alert" for w in again.widgets)
    base = screen_key(first.location, first.widgets, first.title)
    assert screen_key(again.location, again.widgets, again.title) == base

    box = locate(device, "input[type=search]")
    assert box is not None
    device.type_text("rent", *box)  # typed, never submitted
    typed = _look(device)
    assert screen_key(typed.location, typed.widgets, typed.title) == base

    sort = locate(device, "#sort")
    assert sort is not None
    device.tap(*sort)
    desc = _look(device)
    device.tap(*(locate(device, "#sort") or sort))
    asc = _look(device)
    assert "sort=desc" in desc.location and "sort=asc" in asc.location
    assert [w.element.text for w in desc.widgets if w.element.role == "cell"] != \
        [w.element.text for w in asc.widgets if w.element.role == "cell"]
    sorted_key = screen_key(desc.location, desc.widgets, desc.title)
    assert screen_key(asc.location, asc.widgets, asc.title) == sorted_key  # sort order: one screen
    assert sorted_key == base  # sorted under its heading: the query's keys only order what it names

    device.scroll("down")
    device.scroll("down")
    down = _look(device)
    assert not any(w.element.text == "Invoices" for w in down.widgets)  # the heading scrolled away
    graph = _graph([asc, down], [("scroll", 0, 1)])
    keys = screens_of(graph)
    assert keys["s0"] == keys["s1"]  # scroll position: one screen

    device.open(pages_url + "/ledger")
    _look(device)
    delete = locate(device, "#del")
    assert delete is not None
    device.tap(*delete)
    dialog = _look(device)
    assert screen_name(dialog.widgets, dialog.title) == "Delete all invoices?"
    dkey = screen_key(dialog.location, dialog.widgets, dialog.title)
    assert dkey != base and "dialog" in dkey.skeleton  # an open dialog: another screen


T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _graph(captures: list[Screen], edges: list[tuple[str, int, int]]) -> AppGraph:
    obs = [Observation(
        id=f"o{i}", screenshot_sha256=hashlib.sha256(str(i).encode()).hexdigest(), width=c.width, height=c.height,
        device=DeviceProfile(name="desktop", width=c.width, height=c.height), platform=Platform.WEB, app_id="ledger",
        location=c.location, elements=c.elements, timestamp=T0) for i, c in enumerate(captures)]
    transitions = [Transition(
        id=stable_id("t", str(n)), run_id="r", app_id="ledger", from_state=f"s{a}", to_state=f"s{b}",
        from_observation_id=obs[a].id, to_observation_id=obs[b].id,
        action=Action(type=ActionType.SCROLL, direction="down"), effective=True, timestamp=T0 + timedelta(seconds=n))
        for n, (_kind, a, b) in enumerate(edges)]
    return build_graph("ledger", obs, transitions)
