"""Planning judges controls by where they lead, not by what they say (a wiki's "Edit" tab on every page).

A detour is a later step's control already on an earlier screen *and leading where that step goes*: the "Edit" tab
of the page a route passes through edits that page, not the goal's. Two controls with one identity that lead to one
place (a header's and a sidebar's "Recent changes") are no ambiguity: either will do.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from graph.reader import AppGraph, build_graph
from pipelines.synthesis.goals import Planner
from schemas import Action, BBox, DeviceProfile, Element, Observation, Transition
from schemas.base import stable_id

W, H = 400, 300
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
BOXES = {"edit": (300, 10, 380, 40), "page": (20, 100, 300, 130), "rc": (20, 50, 200, 80), "rc2": (20, 250, 200, 280)}

# state -> (path, heading, [(element id, role, text, resource id, box)])
PAGES = {
    "main": ("/wiki/Main", "Main Page", [("edit", "link", "Edit", "tab-edit"), ("page", "link", "Garden", "body-link"),
                                        ("rc", "link", "Recent changes", "nav-rc"), ("rc2", "link", "Recent changes",
                                                                                      "nav-rc")]),
    "garden": ("/wiki/Garden", "Garden", [("edit", "link", "Edit", "tab-edit"), ("rc", "link", "Recent changes",
                                                                                  "nav-rc")]),
    "edit-main": ("/wiki/Main/edit", "Editing Main Page", []),
    "edit-garden": ("/wiki/Garden/edit", "Editing Garden", []),
    "rc": ("/wiki/Special:RecentChanges", "Recent changes", []),
}


def _obs(state: str) -> Observation:
    path, heading, els = PAGES[state]
    elements = [Element(id=f"{state}-h1", role="heading", text=heading, bbox=BBox(x1=10, y1=10, x2=200, y2=40))]
    for eid, role, text, rid in els:
        x1, y1, x2, y2 = BOXES[eid]
        elements.append(Element(id=eid, role=role, text=text, resource_id=rid, clickable=True,
                                bbox=BBox(x1=x1, y1=y1, x2=x2, y2=y2)))
    return Observation(
        id=stable_id("obs", state), screenshot_sha256=hashlib.sha256(state.encode()).hexdigest(), width=W, height=H,
        device=DeviceProfile(name="phone", width=W, height=H), platform="web", app_id="wiki", app_version="1",
        location=f"http://127.0.0.1:8000{path}", elements=elements, exact_hash=stable_id("exact", state),
        structural_hash=stable_id("struct", state), timestamp=T0)


def _graph(edges: list[tuple[str, str, str]]) -> AppGraph:
    obs = {s: _obs(s) for s in PAGES}
    transitions = []
    for i, (src, eid, dst) in enumerate(edges):
        x1, y1, x2, y2 = BOXES[eid]
        box = BBox(x1=x1, y1=y1, x2=x2, y2=y2)
        x, y = box.center
        transitions.append(Transition(
            id=f"t{i:02d}", run_id="run-1", app_id="wiki", from_state=src, to_state=dst,
            from_observation_id=obs[src].id, to_observation_id=obs[dst].id,
            action=Action(type="click", x=x, y=y, image_width=W, image_height=H, target_element_id=eid,
                          target_bbox=box), effective=True, timestamp=T0 + timedelta(seconds=i)))
    return build_graph("wiki", list(obs.values()), transitions)


def _screens(planner: Planner) -> set[str]:
    return {p.facts.target for p in planner.plans() if p.kind == "screen"}


def _refused(planner: Planner, reason: str) -> list[str]:
    return [detail for _p, why, detail in planner.refused if why == reason]


def test_an_edit_tab_that_edits_its_own_page_is_no_shortcut_to_editing_another() -> None:
    # The crawl tapped "Edit" on the main page too: it edits the main page, so the route main → Garden → Edit is
    # no detour past a control that was already on screen.
    planner = Planner(_graph([("main", "page", "garden"), ("garden", "edit", "edit-garden"),
                              ("main", "edit", "edit-main")]))
    assert "Editing Garden" in _screens(planner)
    assert not any("Edit" in d for d in _refused(planner, "detour_plan"))


def test_a_tab_seen_acting_on_its_own_page_is_no_shortcut_from_another() -> None:
    # "Edit", tapped only on Garden, opened a page under Garden's own (``/wiki/Garden/edit``): it acts on the page
    # it is on, so the main page's "Edit" would edit the main page — the route main → Garden → Edit is the way.
    planner = Planner(_graph([("main", "page", "garden"), ("garden", "edit", "edit-garden")]))
    assert "Editing Garden" in _screens(planner)
    assert not any("Edit" in d for d in _refused(planner, "detour_plan"))


def test_a_link_known_only_from_the_goal_page_still_counts_as_a_possible_detour() -> None:
    # "Recent changes", tapped only on Garden, opened a page of its own (not Garden's): the main page's copy
    # may well go there too, so main → Garden → Recent changes may be a detour: the planner stays cautious, and
    # the shortcut is probed.
    planner = Planner(_graph([("main", "page", "garden"), ("garden", "rc", "rc")]))
    assert "Recent changes" not in _screens(planner)
    assert any("Recent changes" in d for d in _refused(planner, "detour_plan"))


def test_look_alike_links_that_lead_to_one_place_are_no_ambiguity() -> None:
    # "Recent changes" shows twice on the main page; tapped there and on Garden, it always opened Recent changes.
    planner = Planner(_graph([("main", "page", "garden"), ("main", "rc", "rc"), ("garden", "rc", "rc")]))
    assert "Recent changes" in _screens(planner)
    assert not _refused(planner, "ambiguous_target")


def test_look_alikes_tapped_on_one_screen_only_stay_ambiguous() -> None:
    planner = Planner(_graph([("main", "page", "garden"), ("main", "rc", "rc")]))
    assert "Recent changes" not in _screens(planner)
