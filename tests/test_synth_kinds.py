"""The task kinds users actually give agents, planned from small hand-built crawl graphs, each both ways.

- a press that changed the app's data (``Transition.mutates``) is a delete / toggle goal whose check carries the
  effect; a press that changed nothing is no mutation goal;
- a query typed into a search field, submitted and a result opened is a search goal, never a "create";
- composite goals chain accepted goals through steps the screen explains, and a route through an unrelated label
  is not taken;
- an answer never quotes a template sentence (the same words around each page's own name);
- the goal check reads the effect: the right screen without the data change fails;
- the offline synthesizer names the sub-goal each step serves and what is left.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graph.reader import AppGraph, build_graph
from pipelines.synthesis.backends.offline import OfflineBackend
from pipelines.synthesis.calls import step_call, task_call
from pipelines.synthesis.goals import Planner
from pipelines.synthesis.kinds import composite
from pipelines.synthesis.kinds.templates import template_texts
from pipelines.synthesis.parse import parse_step
from pipelines.synthesis.prompts import load_prompts
from pipelines.synthesis.verify.goal import check_goal
from schemas import Action, ActionType, BBox, DeviceProfile, Element, Goal, GoalKind, Observation, Transition
from schemas.base import stable_id

W, H = 400, 300
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

# state -> (path, heading, [(element id, role, text, resource id, DOM path, extra text)])
PAGES: dict[str, tuple[str, str, list[tuple[str, str, str, str, str]]]] = {
    "home": ("/", "Home", [("books", "link", "Books", "", "html/body/nav[1]/a[1]"),
                           ("talk", "link", "Discussion", "", "html/body/nav[1]/a[2]"),
                           ("q", "searchbox", "Search books", "q", "html/body/form[1]/input[1]")]),
    "books": ("/books", "Books", [("dune", "link", "Dune", "", "html/body/ul[1]/li[1]/a[1]"),
                                  ("emma", "link", "Emma", "", "html/body/ul[1]/li[2]/a[1]"),
                                  ("home", "link", "Home", "", "html/body/nav[1]/a[1]")]),
    "books-after": ("/books", "Books", [("emma", "link", "Emma", "", "html/body/ul[1]/li[1]/a[1]")]),
    "dune": ("/books/1", "Dune", [("del", "button", "Delete book", "", "html/body/form[1]/button[1]"),
                                  ("star", "button", "Refresh", "", "html/body/div[1]/button[1]"),
                                  ("books", "link", "Books", "", "html/body/nav[1]/a[1]"),
                                  ("about", "text", "The following pages link to Dune and its sequels.", "",
                                   "html/body/p[2]"),
                                  ("body", "text", "A desert planet where spice is harvested by houses.", "",
                                   "html/body/p[1]")]),
    "emma": ("/books/2", "Emma", [("books", "link", "Books", "", "html/body/nav[1]/a[1]"),
                                  ("about", "text", "The following pages link to Emma and its sequels.", "",
                                   "html/body/p[2]"),
                                  ("body", "text", "A comedy of manners about a matchmaker in a village.", "",
                                   "html/body/p[1]")]),
    "results": ("/search", "Search results", [("r1", "link", "Dune Messiah", "", "html/body/ul[1]/li[1]/a[1]"),
                                              ("r2", "link", "Children of Dune", "", "html/body/ul[1]/li[2]/a[1]")]),
    "messiah": ("/books/3", "Dune Messiah", [("books", "link", "Books", "", "html/body/nav[1]/a[1]"),
                                             ("talk", "link", "Discussion", "", "html/body/nav[1]/a[2]")]),
    "shelf": ("/shelf", "Shelf", [("r1", "listitem", "Dune", "", "html/body/ul[1]/li[1]"),
                                  ("m1", "button", "Mark read", "", "html/body/ul[1]/li[1]/button[1]"),
                                  ("r2", "listitem", "Emma", "", "html/body/ul[1]/li[2]"),
                                  ("m2", "button", "Mark read", "", "html/body/ul[1]/li[2]/button[1]")]),
    "talk": ("/talk", "Talk", [("dune", "link", "Dune", "", "html/body/ul[1]/li[1]/a[1]"),
                               ("emma", "link", "Emma", "", "html/body/ul[1]/li[2]/a[1]")]),
}


def _box(i: int) -> BBox:
    return BBox(x1=10, y1=40 + 30 * i, x2=300, y2=60 + 30 * i)


def _obs(state: str) -> Observation:
    path, heading, els = PAGES[state]
    elements = [Element(id=f"{state}-h1", role="heading", text=heading, bbox=BBox(x1=10, y1=5, x2=200, y2=30),
                        path="html/body/h1[1]")]
    for i, (eid, role, text, rid, dom) in enumerate(els):
        editable = role == "searchbox"
        elements.append(Element(id=eid, role=role, text=text, resource_id=rid, path=dom, bbox=_box(i),
                                clickable=role not in ("text", "listitem"), editable=editable))
    return Observation(
        id=stable_id("obs", state), screenshot_sha256=hashlib.sha256(state.encode()).hexdigest(), width=W, height=H,
        device=DeviceProfile(name="phone", width=W, height=H), platform="web", app_id="lib", app_version="1",
        location=f"http://127.0.0.1:8000{path}", elements=elements, exact_hash=stable_id("exact", state),
        structural_hash=stable_id("struct", state), timestamp=T0)


Edge = tuple[str, str, str, dict[str, object]]


def _graph(edges: list[Edge]) -> AppGraph:
    obs = {s: _obs(s) for s in PAGES}
    transitions = []
    for i, (src, eid, dst, extra) in enumerate(edges):
        el = obs[src].element(eid)
        assert el is not None, (src, eid)
        x, y = el.bbox.center
        kind = str(extra.get("type", "click"))
        if kind == "key":  # Enter in the field: a submit with no control of its own
            action = Action(type=ActionType.KEY, key="enter")
        else:
            action = Action(type=ActionType(kind), x=x, y=y, image_width=W, image_height=H, target_element_id=eid,
                            target_bbox=el.bbox, text=str(extra["text"]) if "text" in extra else None)
        transitions.append(Transition(
            id=f"t{i:02d}", run_id="run-1", app_id="lib", from_state=src, to_state=dst,
            from_observation_id=obs[src].id, to_observation_id=obs[dst].id, action=action,
            effective=src != dst, timestamp=T0 + timedelta(seconds=i),
            mutates=list(extra.get("mutates", []))))  # type: ignore[call-overload]
    return build_graph("lib", list(obs.values()), transitions)


NO: dict[str, object] = {}
BROWSE: list[Edge] = [("home", "books", "books", NO), ("books", "dune", "dune", NO), ("books", "emma", "emma", NO)]
DELETE: Edge = ("dune", "del", "books-after", {"mutates": ["table:app.db/books"]})
MESSIAH_BOOKS: Edge = ("messiah", "books", "books", NO)
SEARCH: list[Edge] = [("home", "q", "home", {"type": "type", "text": "messiah"}),
                      ("home", "q", "results", {"type": "key"}), ("results", "r1", "messiah", NO)]


def _plans(edges: list[Edge], kind: str, max_steps: int = 14) -> list[Any]:
    return [p for p in Planner(_graph(edges), max_steps).plans() if p.kind == kind]


def test_a_press_that_changed_the_data_is_a_delete_goal_whose_check_carries_the_effect() -> None:
    (plan,) = _plans([*BROWSE, DELETE], "delete")
    assert plan.goal.effects == ["table:app.db/books"]
    assert plan.facts.item == "Dune" and plan.facts.commit == "Delete book"
    assert [s.target_label for s in plan.steps] == ["Books", "Dune", "Delete book", ""]
    assert plan.goal.state == "books-after"


def test_a_press_that_changed_nothing_is_no_mutation_goal() -> None:
    # the same "Delete book" press without a recorded effect (a confirmation page, a refused request)
    edges = [*BROWSE, ("dune", "del", "books-after", NO)]
    assert _plans(edges, "delete") == []
    # a press whose label says nothing a user would ask for is no goal either, even when it changed data
    assert _plans([*BROWSE, ("dune", "star", "books-after", {"mutates": ["table:app.db/log"]})], "toggle") == []


def test_one_of_several_look_alike_toggles_is_named_by_its_row() -> None:
    # "Mark read" in every row of the shelf: the press the crawl made (the second row's) is a toggle of “Emma”,
    # not refused as ambiguous, because the task names the row the control is in
    edges = [("home", "books", "books", NO), ("books", "home", "home", NO),
             ("home", "talk", "talk", NO), ("talk", "emma", "emma", NO)]
    g = _graph(edges)
    obs = {s: _obs(s) for s in PAGES}
    shelf = Transition(id="t90", run_id="run-1", app_id="lib", from_state="books", to_state="shelf",
                       from_observation_id=obs["books"].id, to_observation_id=obs["shelf"].id,
                       action=Action(type=ActionType.CLICK, x=1, y=1, image_width=W, image_height=H), timestamp=T0)
    el = obs["shelf"].element("m2")
    assert el is not None
    x, y = el.bbox.center
    press = Transition(id="t91", run_id="run-1", app_id="lib", from_state="shelf", to_state="books-after",
                       from_observation_id=obs["shelf"].id, to_observation_id=obs["books-after"].id,
                       action=Action(type=ActionType.CLICK, x=x, y=y, image_width=W, image_height=H,
                                     target_element_id="m2", target_bbox=el.bbox),
                       timestamp=T0 + timedelta(minutes=1), mutates=["table:app.db/books"])
    g = build_graph("lib", list(obs.values()), [*g.transitions, shelf, press])
    planner = Planner(g)
    toggles = [p for p in planner.plans() if p.kind == "toggle"]
    assert [(p.facts.item, p.facts.commit, p.goal.effects) for p in toggles] == [
        ("Emma", "Mark read", ["table:app.db/books"])]
    assert not [r for r in planner.refused if r[1] == "ambiguous_target"]


def test_a_search_then_a_result_is_a_search_goal_and_never_a_create() -> None:
    planner = Planner(_graph([*BROWSE, *SEARCH]))
    plans = planner.plans()
    (search,) = [p for p in plans if p.kind == "search"]
    assert search.facts.fields == [("Search books", "messiah")] and search.facts.target == "Dune Messiah"
    assert [s.role for s in search.steps] == ["fill", "commit", "navigate", "finish"]
    assert search.goal.must_show == ["Dune Messiah"] and search.goal.state == "messiah"
    assert not [p for p in plans if p.kind == "create"]
    offline = OfflineBackend(load_prompts())
    task = json.loads(offline.task_text(task_call(planner.graph, search, "en", "phone:en").payload))["task"]
    assert "“messiah”" in task and "“Dune Messiah”" in task


def test_a_query_without_an_opened_result_is_no_search_goal() -> None:
    assert _plans([*BROWSE, *SEARCH[:2]], "search") == []


def test_composite_chains_goals_through_steps_the_screen_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(composite, "MIN_STEPS", 6)
    plans = _plans([*BROWSE, DELETE, *SEARCH, MESSIAH_BOOKS], "composite", max_steps=20)
    chained = {tuple(p.kind for p in c.parts): c for c in plans}
    plan = chained[("search", "delete")]
    # search "messiah", open "Dune Messiah", then "Books" (named by the next part's noun) → "Dune" → "Delete book"
    assert [s.target_label for s in plan.steps] == ["Search books", "", "Dune Messiah", "Books", "Dune",
                                                    "Delete book", ""]
    assert plan.part_of == [0, 0, 0, 1, 1, 1, 1]
    assert plan.goal.kind == GoalKind.COMPOSITE and plan.goal.state == "books-after"
    assert plan.goal.effects == ["table:app.db/books"]


def test_a_route_through_an_unrelated_label_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # From "Dune Messiah" the crawl only went on through "Discussion": nothing on screen says the talk page leads to
    # the book to delete, so no chain goes that way, although the graph has the route. (The navigation bar's
    # "Books", on every page, is a way on that says what it is for: a chain may take that one.)
    monkeypatch.setattr(composite, "MIN_STEPS", 6)
    edges = [*BROWSE, DELETE, *SEARCH, ("messiah", "talk", "talk", NO), ("talk", "dune", "dune", NO)]
    planner = Planner(_graph(edges), 20)
    plans = planner.plans()
    chains = [c for c in plans if isinstance(c, composite.CompositePlan)]
    assert not [c for c in chains if "Discussion" in [s.target_label for s in c.steps]]
    search, delete = (next(p for p in plans if p.kind == k) for k in ("search", "delete"))
    joiner = composite._Joiner(planner)
    joiner.current = (list(search.steps), [0] * len(search.steps))
    joined = joiner.join([search], delete)  # the graph does have the route …
    assert joined is not None and [s.target_label for s in joined[0]][3:5] == ["Discussion", "Dune"]
    # … but the agent could not know it
    assert composite._unexplained(planner, *joined, [search, delete], joiner.state_of).startswith("step 4")


def test_answers_skip_template_sentences_and_quote_the_item() -> None:
    g = _graph(BROWSE)
    assert "The following pages link to Dune and its sequels." in template_texts(g)
    answers = {p.facts.target: p.facts.answer for p in Planner(g).plans() if p.kind == "answer"}
    assert answers == {"Dune": "A desert planet where spice is harvested by houses.",
                       "Emma": "A comedy of manners about a matchmaker in a village."}


def test_the_goal_check_reads_the_effect() -> None:
    g = _graph([*BROWSE, DELETE])
    from graph.identity import StateIndex

    index = StateIndex([g])
    screen = g.observation(stable_id("obs", "books-after"))
    goal = Goal(kind=GoalKind.DELETE, state="books-after", observation_id=screen.id, effects=["table:app.db/books"])
    assert check_goal(goal, screen, index, ["table:app.db/books", "table:app.db/log"]).ok
    assert check_goal(goal, screen, index, []).reason == "goal_effect_missing"
    assert check_goal(goal, screen, index, None).ok  # no environment to ask: the screen alone decides


def test_composite_steps_say_which_part_they_serve_and_what_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(composite, "MIN_STEPS", 6)
    planner = Planner(_graph([*BROWSE, DELETE, *SEARCH, MESSIAH_BOOKS]), 20)
    plan = next(p for p in planner.plans()
                if isinstance(p, composite.CompositePlan) and p.parts[0].kind == "search")
    offline = OfflineBackend(load_prompts())
    task = json.loads(offline.task_text(task_call(planner.graph, plan, "en", "v").payload))["task"]
    assert task.startswith("Search for “messiah” and open “Dune Messiah”, then ") and "“Dune”" in task
    texts = []
    for i, step in enumerate(plan.steps):
        call = step_call(planner.graph, plan, i, task, "en", "v")
        texts.append(parse_step(offline.step_text(call.payload), step.action, W, H).reasoning)
    assert "part 1 of 2" in texts[0] and "Still to do: delete the" in texts[0]
    assert "part 2 of 2" in texts[3] and "Done so far: search for “messiah”" in texts[3]
    assert "This is the last part" in texts[4]
    assert "All 2 parts of the task are done" in texts[-1]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_new_kind_passes_the_answer_checks_offline(language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The offline rules' task and step texts for search (Enter as its submit), delete and composite plans are
    # judged like a model's: facts named, the verb matches the action, the target named, nothing looked ahead.
    from pipelines.synthesis.answers import step_answer, task_answer

    monkeypatch.setattr(composite, "MIN_STEPS", 6)
    planner = Planner(_graph([*BROWSE, DELETE, *SEARCH, MESSIAH_BOOKS]), 20)
    plans = planner.plans()
    assert {"search", "delete", "composite"} <= {p.kind for p in plans}
    offline = OfflineBackend(load_prompts())
    for plan in plans:
        call = task_call(planner.graph, plan, language, "v")
        task, _ = task_answer(call.payload, offline.task_text(call.payload))
        for i in range(len(plan.steps)):
            payload = step_call(planner.graph, plan, i, task, language, "v").payload
            step_answer(payload, offline.step_text(payload))  # raises SynthParseError with the reason


def test_a_form_whose_values_went_into_the_address_is_a_lookup_never_a_create() -> None:
    """A wiki's "list files by user" form: typed, submitted, and the list reloaded as ``?user=date``. It saved
    nothing, yet it read as "Create an admin with username: “date”". The same form posted to a page of its own
    stays a create; so does one whose commit recorded a data effect."""
    from test_synth_toygraph import notes_records

    from pipelines.synthesis.goals import sent_in_address

    obs, transitions = notes_records()
    creates = [p for p in Planner(build_graph("notes", obs, transitions)).plans() if p.kind == "create"]
    assert [p.facts.fields for p in creates] == [[("Title", "Weekend plans")]]
    as_query = [o.model_copy(update={"location": o.location.replace("/notes/3", "/notes?title=Weekend+plans")})
                for o in obs]
    assert sent_in_address(["Weekend plans"], next(o for o in as_query if "title=" in o.location))
    assert not [p for p in Planner(build_graph("notes", as_query, transitions)).plans() if p.kind == "create"]
    commit = next(t for t in transitions if t.id == creates[0].steps[-2].edge_id)
    saved = [t.model_copy(update={"mutates": ["table:notes.db/notes"]}) if t.id == commit.id else t
             for t in transitions]
    assert [p.kind for p in Planner(build_graph("notes", as_query, saved)).plans() if p.kind == "create"] == ["create"]
