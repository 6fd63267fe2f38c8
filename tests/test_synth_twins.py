"""Look-alike controls that the step text can tell apart: a row's "contribs", a section heading's "edit".

A wiki's log lists one "contribs" link per row and a page has one "edit" link per section heading. Where the
crawl tapped one of them and the others lead elsewhere (or nowhere known), "Tap the “contribs” link" could be any
row's, so the planner refused every plan through it (14 of 23 refusals on a 200-action wiki crawl). A person
says which: "the “contribs” link in the row of “Pruning guide”", "the “edit” link in the “Start here” heading".
The step now says it, the VLM is told to, and an answer that leaves it out is refused; where nothing on screen
names the row (only a time of day, or a text shown twice), the plan stays refused.
"""

from __future__ import annotations

import copy
import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from graph.reader import AppGraph, build_graph
from pipelines.synthesis.answers import step_answer
from pipelines.synthesis.backends.offline import OfflineBackend
from pipelines.synthesis.calls import step_call
from pipelines.synthesis.goals import Planner
from pipelines.synthesis.parse import SynthParseError
from pipelines.synthesis.prompts import load_prompts
from pipelines.synthesis.screens import place_of, twin_place
from schemas import Action, ActionType, BBox, DeviceProfile, Element, Observation, Platform, Transition
from schemas.base import stable_id

W, H = 400, 300
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
LOG = "body[1]/main[1]/ul[1]"


def _el(eid: str, role: str, text: str, path: str, y: int, clickable: bool = False) -> Element:
    return Element(id=eid, role=role, text=text, path=path, clickable=clickable,
                   bbox=BBox(x1=10, y1=y, x2=390, y2=y + 18))


def _obs(state: str, path: str, elements: list[Element]) -> Observation:
    return Observation(
        id=stable_id("obs", state), screenshot_sha256=hashlib.sha256(state.encode()).hexdigest(), width=W, height=H,
        device=DeviceProfile(name="desktop", width=W, height=H), platform=Platform.WEB, app_id="wiki", app_version="1",
        location=f"http://127.0.0.1:8000{path}", elements=elements, exact_hash=stable_id("exact", state),
        structural_hash=stable_id("struct", state), timestamp=T0)


def _log(rows: list[str]) -> list[Element]:
    """A log page: one row per entry, each with a "contribs" link and the entry's text."""
    out = [_el("h1", "heading", "All public logs", "body[1]/main[1]/h1[1]", 10)]
    for i, text in enumerate(rows, start=1):
        row = f"{LOG}/li[{i}]"
        out += [_el(f"time{i}", "text", "06:42", f"{row}/span[1]", 40 * i),
                _el(f"contribs{i}", "link", "contribs", f"{row}/span[2]/a[1]", 40 * i, clickable=True),
                _el(f"what{i}", "text", text, f"{row}/span[3]", 40 * i)]
    return out


def _graph(rows: list[str]) -> AppGraph:
    """Start page → (Logs) → the log; the crawl tapped the first row's "contribs", which opened Admin's."""
    logs = _el("logs", "link", "Logs", "body[1]/nav[1]/a[1]", 280, clickable=True)
    start = _obs("start", "/", [_el("h0", "heading", "Main page", "body[1]/main[1]/h1[1]", 10), logs])
    log = _obs("log", "/log", [*_log(rows), logs])
    contribs = _obs("contribs", "/contributions/Admin", [
        _el("h2", "heading", "Contributions of Admin", "body[1]/main[1]/h1[1]", 10), logs])
    pages = {"start": start, "log": log, "contribs": contribs}
    transitions = []
    for i, (src, cid, dst) in enumerate([("start", "logs", "log"), ("log", "contribs1", "contribs")]):
        box = pages[src].element(cid).bbox  # type: ignore[union-attr]
        x, y = box.center
        transitions.append(Transition(
            id=f"t{i}", run_id="run-1", app_id="wiki", from_state=src, to_state=dst,
            from_observation_id=pages[src].id, to_observation_id=pages[dst].id,
            action=Action(type=ActionType.CLICK, x=x, y=y, image_width=W, image_height=H, target_element_id=cid,
                          target_bbox=box), effective=True, timestamp=T0 + timedelta(seconds=i)))
    return build_graph("wiki", list(pages.values()), transitions)


def test_a_control_is_placed_by_the_row_or_heading_that_names_it_alone() -> None:
    log = _obs("log", "/log", _log(["Pruning guide", "Tool shed inventory"]))
    first = log.element("contribs1")
    assert first is not None
    assert place_of(log, first) == ("row", "Pruning guide")  # the time of day is skipped: another instance differs
    assert twin_place(log, first) == ("row", "Pruning guide")
    # A text two rows show names neither.
    same = _obs("same", "/log", _log(["Pruning guide", "Pruning guide"]))
    assert twin_place(same, same.element("contribs1")) == ("", "")  # type: ignore[arg-type]
    # A section's "edit" link inside its heading is placed by the heading's words.
    page = _obs("page", "/wiki/Main", [
        _el("s1", "text", "Start here", "body[1]/main[1]/h2[1]/span[1]", 40),
        _el("e1", "link", "edit", "body[1]/main[1]/h2[1]/span[2]/a[1]", 40, clickable=True),
        _el("s2", "text", "Our trees", "body[1]/main[1]/h2[2]/span[1]", 120),
        _el("e2", "link", "edit", "body[1]/main[1]/h2[2]/span[2]/a[1]", 120, clickable=True)])
    assert twin_place(page, page.element("e2")) == ("heading", "Our trees")  # type: ignore[arg-type]
    # A button's words say what it does, not which row it is; a header row's links sort columns.
    buttons = _obs("buttons", "/pages", [
        _el(f"b{i}", "button", f"More options for page {i}", f"body[1]/ul[1]/li[{i}]/button[1]", 30 * i,
            clickable=True) for i in (1, 2)] + [
        _el(f"s{i}", "link", "LIVE", f"body[1]/ul[1]/li[{i}]/a[1]", 30 * i, clickable=True) for i in (1, 2)])
    assert twin_place(buttons, buttons.element("s1")) == ("", "")  # type: ignore[arg-type]
    head = _obs("head", "/t", [
        _el("h1", "link", "id ▼", "body[1]/table[1]/thead[1]/tr[1]/th[1]/a[1]", 10, clickable=True),
        _el("h2", "link", "sort", "body[1]/table[1]/thead[1]/tr[1]/th[2]/a[1]", 10, clickable=True),
        _el("h3", "link", "sort", "body[1]/table[1]/thead[1]/tr[1]/th[3]/a[1]", 10, clickable=True)])
    assert place_of(head, head.element("h2")) == ("", "")  # type: ignore[arg-type]
    # A control without a look-alike needs no place.
    alone = _obs("alone", "/log", _log(["Pruning guide"]))
    assert twin_place(alone, alone.element("contribs1")) == ("", "")  # type: ignore[arg-type]


def _contribs_plan(planner: Planner) -> object:
    return next((p for p in planner.plans() if p.kind == "screen" and p.facts.target == "Contributions of Admin"),
                None)


def test_a_plan_through_a_placed_look_alike_is_kept_and_its_step_says_where() -> None:
    graph = _graph(["Pruning guide", "Tool shed inventory"])
    planner = Planner(graph)
    plan = _contribs_plan(planner)
    assert plan is not None, planner.refused
    assert not [r for r in planner.refused if r[1] == "ambiguous_target"]
    call = step_call(graph, plan, 1, "Open the contributions of Admin.", "en", "v")  # type: ignore[arg-type]
    assert call.payload["target"]["place"] == {"kind": "row", "text": "Pruning guide"}
    backend = OfflineBackend(load_prompts())
    text = backend.step_text(call.payload)
    parsed = step_answer(call.payload, text)
    assert parsed.instruction == "Tap the “contribs” link in the row of “Pruning guide”"
    # A VLM answer that names the link but not its row is refused: an agent could press any row's.
    vague = text.replace(" in the row of “Pruning guide”", "")
    with pytest.raises(SynthParseError) as err:
        step_answer(call.payload, vague)
    assert err.value.reason == "unplaced_target"
    # The other steps carry no place: the start page's "Logs" has no look-alike.
    assert "place" not in step_call(graph, plan, 0, "t", "en", "v").payload["target"]  # type: ignore[arg-type]
    zh = copy.deepcopy(call.payload)
    zh["language"] = "zh"
    assert "Pruning guide" in step_answer(zh, backend.step_text(zh)).instruction


def test_look_alikes_nothing_on_screen_tells_apart_stay_refused() -> None:
    planner = Planner(_graph(["Pruning guide", "Pruning guide"]))  # both rows read the same
    assert _contribs_plan(planner) is None
    assert [r for r in planner.refused if r[1] == "ambiguous_target"]
