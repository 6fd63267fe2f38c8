"""State identity without sibling positions: what makes two captures one state, and what keeps them apart.

A wiki that shows a flash message ("Your changes were saved") or one more breadcrumb above the page renumbers the
DOM path of everything after it (``div[3]`` becomes ``div[4]``); with paths as identity every such visit was a new
state (the issue counted 44 URLs as 99 states on one wiki). Identity is the element's row template and its order
among its look-alikes (``abstraction.slot_keys``). What must stay apart: a modal dialog over its page (synthesis uses
it as a goal), two sibling buttons, a ticked box. Fast tier, hand-built screens.
"""

from __future__ import annotations

from graph.abstraction import StateTable, exact_hash, features, slot_keys
from graph.screen import Screen, Widget
from schemas import BBox, Element, Platform


def _w(path: str, text: str, role: str = "text", **kw: object) -> Widget:
    el = Element(id=path, role=role, text=text, path=path, bbox=BBox(x1=0, y1=0, x2=100, y2=40),
                 clickable=role in ("button", "link"), **kw)  # type: ignore[arg-type]
    return Widget(element=el)


def _page(first: int, *extra: Widget, title: str = "Front page") -> Screen:
    """A wiki page whose content column starts at ``div[first]`` (something inserted above shifts it)."""
    body = [
        _w("body[1]/nav[1]/a[1]", "Home", role="link"),
        _w(f"body[1]/div[{first}]/h1[1]", title, role="heading"),
        _w(f"body[1]/div[{first}]/p[1]", "Welcome to the wiki."),
        _w(f"body[1]/div[{first}]/p[2]", "Start with the guide."),
        _w(f"body[1]/div[{first}]/button[1]", "Edit", role="button"),
        _w(f"body[1]/div[{first}]/button[2]", "History", role="button"),
    ]
    return Screen(Platform.WEB, "http://h/wiki/Front", 400, 800, 1.0, [*extra, *body], b"")


def _key(screen: Screen) -> str:
    """The capture's identity before any learning (no dynamic regions masked yet)."""
    return exact_hash(features(screen, False))


def test_content_shifted_by_an_inserted_sibling_is_the_same_state() -> None:
    # A container the page script does not report (no text, nothing to press: an empty notice area, an ad slot)
    # was inserted above the content column on this visit: every path after it moved.
    assert {w.element.path for w in _page(1).widgets}.isdisjoint(
        {w.element.path for w in _page(2).widgets if "div" in w.element.path})
    assert _key(_page(2)) == _key(_page(1))
    table = StateTable("wiki")
    assert table.assign(features(_page(1), False))[0] == table.assign(features(_page(2), False))[0]


def test_a_dialog_over_its_page_two_sibling_buttons_and_another_page_stay_apart() -> None:
    dialog = _page(1, _w("body[1]/div[2]/h2[1]", "Delete this page?", role="heading"),
                   _w("body[1]/div[2]/button[1]", "Cancel", role="button"),
                   _w("body[1]/div[2]/button[2]", "Delete", role="button"))
    assert features(dialog, False).structural_hash != features(_page(1), False).structural_hash
    table = StateTable("wiki")
    page = table.assign(features(_page(1), False))[0]
    assert table.canonical(table.assign(features(dialog, False))[0]) != page  # a modal is a goal of its own
    assert _key(_page(1, title="Sandbox")) != _key(_page(1))
    keys = slot_keys(_page(1).widgets)
    assert len(set(keys)) == len(keys)  # "Edit" and "History" are two slots, not one
    assert [k.rsplit("#", 1)[1] for k in keys if "button" in k] == ["1", "2"]


def test_swapped_sibling_buttons_are_another_screen_and_a_ticked_box_too() -> None:
    swapped = _page(1)
    edit, history = swapped.widgets[4], swapped.widgets[5]
    edit.element.text, history.element.text = "History", "Edit"
    assert _key(swapped) != _key(_page(1))  # the order of look-alikes is part of the screen
    box = _w("body[1]/div[1]/input[1]", "Watch this page", role="checkbox", checkable=True)
    ticked = _w("body[1]/div[1]/input[1]", "Watch this page", role="checkbox", checkable=True, checked=True)
    assert _key(_page(1, box)) != _key(_page(1, ticked))


def test_ids_built_from_database_keys_match_across_instances() -> None:
    """I Hate Money numbers its bill form's boxes by participant id (``payed_for-7``); a fresh instance numbered them
    ``payed_for-99``, and every replay of "open the Add a bill form" diverged at its first step. State identity is
    instance-free (issue 49): the crawl's own features read ids with ``stable_ids`` by default, as replay does; only
    ``stable_ids=False`` (the older exact reading) still tells them apart. The replayed tap finds its box by the
    same reading."""
    from pipelines.synthesis.verify.replay import ground_action
    from schemas import Action, ActionType, DeviceProfile, Observation

    def form(first_id: int) -> Screen:
        boxes = [_w(f"body[1]/form[1]/label[{i + 1}]/input[1]", name, role="checkbox", checked=True,
                    resource_id=f"payed_for-{first_id + i}") for i, name in enumerate(("Alice", "Amina", "Georg"))]
        return _page(1, *boxes)

    crawl, fresh = form(7), form(99)
    assert features(crawl, False).structural_hash == features(fresh, False).structural_hash
    assert features(crawl, False, stable_ids=False).structural_hash != \
        features(fresh, False, stable_ids=False).structural_hash
    els = [w.element for w in crawl.widgets]
    recorded = Observation(id="o1", screenshot_sha256="0" * 64, width=400, height=800,
                           device=DeviceProfile(name="desktop", width=400, height=800), platform=Platform.WEB,
                           app_id="ihm", location="http://h/wiki/Front", elements=els, exact_hash="x",
                           structural_hash="y")
    amina = next(e for e in els if e.text == "Amina")
    tap = Action(type=ActionType.CLICK, x=50, y=20, image_width=400, image_height=800, target_element_id=amina.id)
    moved = ground_action(tap, recorded, fresh)
    assert moved is not None and moved.target_element_id == next(
        w.element.id for w in fresh.widgets if w.element.resource_id == "payed_for-100")


def test_a_flash_or_toast_in_a_live_region_is_the_same_state() -> None:
    """A flash ("Your changes were saved", ``role="status"``) or a toast with its close button (``role="alert"``)
    comes and goes on one screen: no part of its state. Text outside a live region still is."""
    flash = _w("body[1]/div[1]/p[1]", "Your changes were saved", role="status")
    toast = [_w("body[1]/div[9]", "Logged in", role="alert"), _w("body[1]/div[9]/button[1]", "×", role="button")]
    assert _key(_page(2, flash)) == _key(_page(2, *toast)) == _key(_page(2))
    table = StateTable("wiki")
    assert table.assign(features(_page(2, flash), False))[0] == table.assign(features(_page(2), False))[0]
    assert _key(_page(2, _w("body[1]/div[1]/p[1]", "Your changes were saved"))) != _key(_page(2))
