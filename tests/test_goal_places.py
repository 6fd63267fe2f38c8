"""A goal that is a place is met on the same screen as a user counts it; a goal that changes something is not.

A crawl without an environment leaves its own traces in the app it explores (a saved edit is another revision on
the history page), so a fresh instance's page may list a row fewer than the captured goal screen. A user still
calls it "the history of Weekend ideas": screen, item, answer and search goals accept it (the route, heading and
structure, and every ``must_show`` text). A setting or a toggle keeps the strict state check — its page looks
alike before and after the change, so "the same screen" would pass a replay that changed nothing.
"""

from __future__ import annotations

from test_user_screens import _graph, el, link

from graph.identity import StateIndex, observation_features
from pipelines.synthesis.verify.goal import check_goal
from schemas import Element, Goal, GoalKind, Observation

URL = "http://h/notes/6/history"


def _history(rows: int) -> list[Element]:
    return [el("body[1]/main[1]/h1[1]", "History of Weekend ideas", role="heading"),
            link("body[1]/main[1]/p[1]/a[1]", "Back to the note"),
            *[el(f"body[1]/main[1]/ul[1]/li[{i}]", f"Revision {i}", role="listitem", cls="li")
              for i in range(1, rows + 1)]]


def _setup() -> tuple[StateIndex, Observation, Observation]:
    pages = {"home": ("http://h/notes", [el("body[1]/main[1]/h1[1]", "Notes", role="heading")]),
             "hist": (URL, _history(2)), "other": ("http://h/notes/6", [el("body[1]/main[1]/h1[1]", "Weekend ideas",
                                                                              role="heading")])}
    g = _graph(pages, [("home", "click", "hist"), ("home", "click", "other")])
    recorded = g.representative("hist")
    assert recorded is not None
    fresh = recorded.model_copy(update={"id": "fresh", "elements": _history(1)})  # one revision fewer
    return StateIndex([g]), recorded, fresh


def test_a_screen_goal_holds_on_the_same_screen_with_a_row_fewer() -> None:
    index, recorded, fresh = _setup()
    goal = Goal(kind=GoalKind.SCREEN, state="hist", observation_id=recorded.id, summary="screen: History")
    assert check_goal(goal, recorded, index).ok
    assert check_goal(goal, fresh, index).ok
    note = fresh.model_copy(update={"location": "http://h/notes/6",
                                    "elements": [el("body[1]/main[1]/h1[1]", "Weekend ideas", role="heading")]})
    assert check_goal(goal, note, index).reason == "goal_state_mismatch"  # another screen is never the place


def test_an_item_goal_still_needs_its_texts_and_a_setting_goal_its_exact_state() -> None:
    index, recorded, fresh = _setup()
    item = Goal(kind=GoalKind.ITEM, state="hist", observation_id=recorded.id, must_show=["Revision 2"],
                summary="item: Revision 2")
    assert check_goal(item, fresh, index).reason == "goal_text_missing"
    setting = Goal(kind=GoalKind.SETTING, state="hist", observation_id=recorded.id, summary="setting: History")
    assert check_goal(setting, fresh, index).reason == "goal_state_mismatch"


def _headed(heading: str, entry: str, rows: int) -> list[Element]:
    """A page's main content: its heading and a list of ``rows`` entries."""
    return [el("body[1]/main[1]/h1[1]", heading, role="heading"),
            *[el(f"body[1]/main[1]/ul[1]/li[{i}]", f"{entry} {i}", role="listitem", cls="li")
              for i in range(1, rows + 1)]]


def _one_tap(url: str, elements: list[Element]) -> tuple[StateIndex, Observation, Goal]:
    """A graph of a start page and the page at ``url`` one tap away, and a screen goal on that page."""
    g = _graph({"home": ("http://h/", [el("body[1]/main[1]/h1[1]", "Home", role="heading")]),
                "page": (url, elements)}, [("home", "click", "page")])
    recorded = g.representative("page")
    assert recorded is not None
    goal = Goal(kind=GoalKind.SCREEN, state="page", observation_id=recorded.id, summary="screen: page")
    return StateIndex([g]), recorded, goal


def test_a_place_goal_named_with_a_number_is_not_met_on_another_numbered_page() -> None:
    # A screen key reads numbers as placeholders (a start screen's counters and dates may differ), so the history
    # of issue 7 is the same screen as the history of issue 12 to it; the goal named "issue 12" is not met there.
    def history(n: int, rows: int) -> list[Element]:
        return _headed(f"History of issue {n}", "Revision", rows)

    index, recorded, goal = _one_tap("http://h/issues/12/history", history(12, 2))
    same = recorded.model_copy(update={"id": "fresh", "elements": history(12, 1)})
    other = recorded.model_copy(update={"id": "seven", "location": "http://h/issues/7/history",
                                        "elements": history(7, 1)})
    assert check_goal(goal, same, index).ok
    assert check_goal(goal, other, index).reason == "goal_state_mismatch"
    # as alike as the recorded page (its state, to the explorers' identity), issue 7 is still not issue 12
    twin = recorded.model_copy(update={"id": "twin", "location": "http://h/issues/7/history",
                                       "elements": history(7, 2)})
    assert index.matches(recorded.id, observation_features(twin))
    assert check_goal(goal, twin, index).reason == "goal_state_mismatch"


def test_a_date_in_a_goals_heading_is_not_a_number_it_must_show() -> None:
    # a report page headed with the crawl day's date is the same place on another day
    index, recorded, goal = _one_tap("http://h/reports/daily", _headed("Sales report 2026-06-01 10:30", "Sale", 3))
    later = recorded.model_copy(update={"id": "later", "elements": _headed("Sales report 2026-06-02 10:30", "Sale",
                                                                           2)})
    assert check_goal(goal, later, index).ok
