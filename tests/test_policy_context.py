"""The greedy policy's novelty estimates in context: relabelled elements, radio groups, forms, moved hops.

These are the behaviours that make a crawl spend its budget on new screens in real apps (the demo app's
language switch, I Hate Money's bill form, a settle page whose content changes after a settlement). Each test
drives ``GreedyPolicy.choose`` on hand-built screens and a real ``Graph``; the end-to-end effect is measured by
``benchmarks/bench_explore.py`` (``states_vs_random``).
"""

from __future__ import annotations

from explorers.candidates import Candidate, candidates
from explorers.graph import Graph
from explorers.policy import GreedyPolicy
from graph.abstraction import StateTable, features
from graph.screen import Screen, Widget
from graph.user_screens import screen_name
from schemas import BBox, Element, Platform


def _w(path: str, text: str, role: str = "link", **kw: object) -> Widget:
    el_kw = {k: kw.pop(k) for k in ("checked", "checkable", "editable") if k in kw}
    el = Element(id=path, role=role, text=text, path=path, bbox=BBox(x1=0, y1=0, x2=100, y2=40),
                 clickable=role not in ("textbox", "text", "heading"), **el_kw)
    return Widget(element=el, **kw)


class World:
    """A graph plus a state table: ``see`` a screen, get its state id and (guard-free) candidates."""

    def __init__(self) -> None:
        self.table = StateTable("app")
        self.graph = Graph(canonical=self.table.canonical)

    def see(self, url: str, *widgets: Widget, with_back: bool = False) -> tuple[str, list[Candidate]]:
        screen = Screen(Platform.WEB, url, 400, 800, 1.0, list(widgets), b"")
        sid = self.table.assign(features(screen, False))[0]
        info = self.graph.state(sid)
        info.location = url
        if not info.heading:  # as the crawler records it (``explorers.graph_log.remember``)
            info.heading = screen_name([w.element for w in widgets])
        cands = candidates(screen, with_back=with_back)
        for c in cands:
            self.graph.offer(sid, c.key, c.group, c.target_key, c.action)
        return sid, cands


def _label(c: Candidate | None) -> str:
    assert c is not None
    return c.widget.label if c.widget else c.type.value


def test_a_used_element_that_now_says_something_else_is_a_new_context() -> None:
    w, p = World(), GreedyPolicy()
    en, en_c = w.see("http://h/", _w("nav/a[1]", "Notes", href="http://h/notes"),
                     _w("nav/a[2]", "Settings", href="http://h/settings"))
    for dest in ("http://h/notes", "http://h/settings"):
        d = p.choose(w.graph, en, en_c)
        sid, _ = w.see(dest, _w("main/h1", dest, role="heading"))
        w.graph.record(en, d.candidate.key, sid, True)
        p.choose(w.graph, sid, [])  # the policy observes where it landed
    # Same page after switching the app to Chinese: the same two links, relabelled, plus one unused element.
    zh, zh_c = w.see("http://h/", _w("nav/a[1]", "笔记", href="http://h/notes"),
                     _w("nav/a[2]", "设置", href="http://h/settings"), _w("main/button[1]", "帮助", role="button"))
    d = p.choose(w.graph, zh, zh_c)
    assert _label(d.candidate) in {"笔记", "设置"} and "relabelled" in d.reason
    # The same link with its old label still predicts what it did before: a screen already seen.
    again, again_c = w.see("http://h/x", _w("nav/a[1]", "Notes", href="http://h/notes"), _w("main/p", "x", role="text"))
    assert "repeat-known" in p.choose(w.graph, again, again_c).reason


def test_a_radio_group_is_not_switched_back_before_the_form_is_saved() -> None:
    w, p = World(), GreedyPolicy()

    def settings(lang: str, theme: str) -> tuple[str, list[Candidate]]:
        return w.see(
            "http://h/settings",
            _w("form/en", "English", role="radio", checkable=True, checked=lang == "en", form_action="/s"),
            _w("form/zh", "中文", role="radio", checkable=True, checked=lang == "zh", form_action="/s"),
            _w("form/light", "Light", role="radio", checkable=True, checked=theme == "light", form_action="/s"),
            _w("form/dark", "Dark", role="radio", checkable=True, checked=theme == "dark", form_action="/s"),
            _w("form/save", "Save", role="button", tag="button", input_type="submit", form_action="/s"),
        )

    start, start_c = settings("en", "light")
    assert {_label(c) for c in start_c} == {"中文", "Dark", "Save"}  # a checked radio offers nothing to click
    chosen: list[str] = []
    sid, cands = start, start_c
    for _ in range(3):
        d = p.choose(w.graph, sid, cands)
        chosen.append(_label(d.candidate))
        lang = "zh" if "中文" in chosen else "en"
        theme = "dark" if "Dark" in chosen else "light"
        nxt, nxt_c = settings(lang, theme) if d.candidate.widget.label != "Save" else w.see("http://h/saved")
        w.graph.record(sid, d.candidate.key, nxt, nxt != sid)
        sid, cands = nxt, nxt_c
    # Both choices are made before saving; re-picking "English" or "Light" would undo them.
    assert sorted(chosen[:2]) == ["Dark", "中文"] and chosen[2] == "Save"


def test_filling_a_required_field_is_worth_its_submit_only_when_the_submit_is_on_offer() -> None:
    w, p = World(), GreedyPolicy()
    title = _w("form/title", "Title", role="textbox", editable=True, required=True, form_action="/notes/new")
    create = _w("form/create", "Create", role="button", tag="button", input_type="submit", form_action="/notes/new")
    other = _w("nav/a[1]", "Help", href="http://h/")  # a link back to a known page
    form, form_c = w.see("http://h/notes/new", title, create, other)
    w.see("http://h/", _w("main/p", "home", role="text"))
    d = p.choose(w.graph, form, form_c)
    assert _label(d.candidate) == "Title" and "type-required" in d.reason
    # The same kind of form whose send button the safety guard withheld: typing unlocks nothing.
    msg = _w("form/msg", "Message", role="textbox", editable=True, required=True, form_action="/messages/send")
    blocked, blocked_c = w.see("http://h/messages", msg)
    d = p.choose(w.graph, blocked, blocked_c)
    assert "type-required" not in d.reason and "(type," in d.reason


def test_a_walk_follows_where_an_action_led_last_not_where_it_led_most_often() -> None:
    w, p = World(), GreedyPolicy()
    home, home_c = w.see("http://h/", _w("nav/a[1]", "Settle", href="http://h/settle"))
    old, _ = w.see("http://h/settle", _w("main/button[1]", "Register", role="button"))
    d = p.choose(w.graph, home, home_c)
    assert _label(d.candidate) == "Settle"
    for _ in range(3):  # the settle link led to the old page three times (say, before a resume) ...
        w.graph.record(home, d.candidate.key, old, True)
    # ... and this time to a changed page: everyone has settled.
    new, new_c = w.see("http://h/settle", _w("main/p", "All settled", role="text"),
                       _w("main/a[1]", "Back", href="http://h/"))
    w.graph.record(home, d.candidate.key, new, True)
    p.choose(w.graph, new, new_c)
    reach = p._bfs(w.graph, home)
    assert new in reach and old not in reach


def test_a_submit_pressed_before_is_worth_pressing_again_when_the_form_holds_something_else() -> None:
    w, p = World(), GreedyPolicy()

    def settings(lang: str) -> tuple[str, list[Candidate]]:
        return w.see(
            "http://h/settings",
            _w("form/en", "English", role="radio", checkable=True, checked=lang == "en", form_action="/s"),
            _w("form/zh", "中文", role="radio", checkable=True, checked=lang == "zh", form_action="/s"),
            _w("form/save", "Save", role="button", tag="button", input_type="submit", form_action="/s"),
            _w("nav/a[1]", "Home", href="http://h/"),
        )

    en, en_c = settings("en")
    saved, saved_c = w.see("http://h/", _w("main/p", "saved", role="text"))
    save = next(c for c in en_c if _label(c) == "Save")
    home = next(c for c in en_c if _label(c) == "Home")
    p.choose(w.graph, en, en_c)  # the policy looks at the form once (remembers its candidates)
    for c in (save, home):  # pressed Save and followed Home here: both led to the known home page
        p._last_target = p._identity(en, c)
        w.graph.record(en, c.key, saved, True)
        p.choose(w.graph, saved, saved_c)
    zh, zh_c = settings("zh")
    p.choose(w.graph, zh, zh_c)
    zh_save = next(c for c in zh_c if _label(c) == "Save")
    zh_home = next(c for c in zh_c if _label(c) == "Home")
    # The link predicts what it did before; the submit does not, because the form now says 中文.
    assert p._class(w.graph, zh, zh_home.key) == "repeat-known"
    assert p._class(w.graph, zh, zh_save.key) == "submit-again"


def test_a_label_that_never_changed_the_screen_is_not_worth_another_try() -> None:
    w, p = World(), GreedyPolicy()
    boxes = [_w(f"panel/section-{name}/button", "Enable", role="button") for name in "abcde"]  # not one list
    panel, panel_c = w.see("http://h/panel", *boxes)
    for _ in range(3):  # three different "Enable" toggles, each leaving the panel as it was
        d = p.choose(w.graph, panel, panel_c)
        assert _label(d.candidate) == "Enable"
        w.graph.record(panel, d.candidate.key, panel, False)
    fourth = next(c for c in panel_c if _label(c) == "Enable" and w.graph.is_fresh(panel, c.key))
    p.choose(w.graph, panel, panel_c)
    assert p._class(w.graph, panel, fourth.key) == "dead-label"
