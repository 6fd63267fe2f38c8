"""Every distinct screen reachable by the planner: pollution by typing history, routes over screens, one step limit.

Small hand-built graphs, each a case a real crawl showed (synthesis issue, "the planner reaches a handful of
screens"), each checked both ways:

- a word the crawl typed into a search box pollutes the screens its typing reached (the results, whose URL
  carries it), not every screen that shows the word; a value a submit sent to be kept (no URL records it)
  still pollutes what comes after;
- two states of one screen (a home page with random content, the crawl never back on the same state) are one
  screen: every control tried on either is a way out, and routes are the screen graph's shortest;
- two look-alike controls that both led to one place: either is picked, the plan is not refused;
- ``max_steps`` is the one limit: a 21-step plan is refused at 20 and kept at 21;
- two ``trajforge synth`` runs over one graph, in processes with different hash seeds, write the same tasks.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageDraw
from test_synth_routes import _graph as wiki_graph
from test_synth_routes import _refused, _screens

from graph.reader import AppGraph, build_graph
from pipelines.synthesis import navigation
from pipelines.synthesis.goals import Planner
from pipelines.synthesis.navigation import Navigator
from pipelines.synthesis.plan_parts import GoalPlan
from pipelines.synthesis.screen_keys import planner_reach, screen_groups
from schemas import Action, ActionType, BBox, BlobStore, DeviceProfile, Element, Observation, Platform, Transition
from schemas.base import stable_id
from schemas.recordio import write_parquet

ROOT = Path(__file__).resolve().parent.parent
W, H = 400, 300
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
Spec = tuple[str, str, str, str]  # (element id, role, text, resource id)


def _png(title: str) -> bytes:
    img = Image.new("RGB", (W, H), (250, 250, 250))
    ImageDraw.Draw(img).text((10, 15), title, fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


class Crawl:
    """A crawl written by hand: captures in the order taken, actions between them (timestamps follow)."""

    def __init__(self, app: str = "site", store: BlobStore | None = None):
        self.app, self.store = app, store
        self.obs: dict[str, Observation] = {}
        self.state_of: dict[str, str] = {}
        self.edges: list[Transition] = []

    def capture(self, name: str, state: str, path: str, heading: str, els: list[Spec]) -> str:
        elements = [Element(id=f"{name}-h1", role="heading", text=heading, bbox=BBox(x1=10, y1=10, x2=390, y2=30))]
        for i, (eid, role, text, rid) in enumerate(els):
            y = 40 + 22 * i
            elements.append(Element(id=eid, role=role, text=text, resource_id=rid, bbox=BBox(x1=10, y1=y, x2=390,
                                                                                                y2=y + 20),
                                    clickable=role in ("link", "button", "textbox"), editable=role == "textbox"))
        png = _png(f"{heading}|{name}")
        sha = self.store.put(png) if self.store is not None else hashlib.sha256(png).hexdigest()
        self.obs[name] = Observation(
            id=stable_id("obs", self.app, name), screenshot_sha256=sha, width=W, height=H,
            device=DeviceProfile(name="phone", width=W, height=H), platform=Platform.WEB, app_id=self.app,
            app_version="1",
            location=f"http://127.0.0.1:8000{path}", elements=elements, exact_hash=stable_id("exact", name),
            structural_hash=stable_id("struct", state), timestamp=T0 + timedelta(seconds=len(self.obs)))
        self.state_of[name] = state
        return name

    def act(self, src: str, eid: str, dst: str, kind: str = "click", text: str | None = None,
            key: str | None = None) -> None:
        el = self.obs[src].element(eid) if eid else None
        i = len(self.edges)
        if el is not None:
            x, y = el.bbox.center
            action = Action(type=ActionType(kind), x=x, y=y, image_width=W, image_height=H, target_element_id=eid,
                            target_bbox=el.bbox, text=text)
        else:
            action = Action(type=ActionType(kind), key=key)
        self.edges.append(Transition(
            id=f"t{i:02d}", run_id="run-1", app_id=self.app, from_state=self.state_of[src],
            to_state=self.state_of[dst], from_observation_id=self.obs[src].id, to_observation_id=self.obs[dst].id,
            action=action, effective=src != dst, timestamp=T0 + timedelta(minutes=1, seconds=i)))

    def graph(self) -> AppGraph:
        return build_graph(self.app, list(self.obs.values()), self.edges)


def _plans(graph: AppGraph, max_steps: int = 14) -> dict[str, GoalPlan]:
    return {p.facts.target: p for p in Planner(graph, max_steps).plans()}


def _one_screen_per_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner as it was: every state a screen of its own."""
    monkeypatch.setattr(navigation, "screen_groups", lambda g: {s: s for s in g.state_observations})


# --- pollution is what the crawl's typing reached ------------------------------------------------------------

SEARCH: list[Spec] = [("q", "textbox", "Search", "search"), ("garden", "link", "Garden", "body-link"),
                      ("foot", "paragraph", "Powered by Wikiland engine", "footer")]


def _searched(results_path: str) -> tuple[AppGraph, str, str]:
    """The crawl types "Wikiland" (a word it read on the page) into search and presses Enter; later it opens the
    Garden page, whose sidebar links to the "Wikiland" portal — the app's own link, which the entry never showed."""
    c = Crawl()
    main = c.capture("main", "main", "/wiki/Main", "Main Page", SEARCH)
    c.act(main, "q", main, "type", text="Wikiland")
    results = c.capture("results", "results", results_path, "Search results",
                        [("hit", "link", "Wikiland", "result"), ("back", "link", "Main Page", "nav-main")])
    c.act(main, "", results, "key", key="Enter")
    main2 = c.capture("main2", "main", "/wiki/Main", "Main Page", SEARCH)
    c.act(results, "back", main2)
    garden = c.capture("garden", "garden", "/wiki/Garden", "Garden",
                       [("portal", "link", "Wikiland", "portal"), ("back", "link", "Main Page", "nav-main")])
    c.act(main2, "garden", garden)
    return c.graph(), c.obs[results].id, c.obs[garden].id


def test_a_search_term_pollutes_the_results_it_reached_not_every_screen_that_shows_the_word() -> None:
    g, results, garden = _searched("/search?q=Wikiland")
    nav = Navigator(g)
    assert "Wikiland" in nav.pollution.typed
    assert not nav.pollution.clean(g.observation(results))  # its URL says the typing made it
    assert nav.pollution.clean(g.observation(garden))  # the sidebar's portal link is the app's
    assert "Garden" in _plans(g)


def test_a_value_a_submit_kept_pollutes_what_came_after() -> None:
    # The same typing, sent by a submit no URL records (a saved title, not a query): later screens that show
    # it may show what the crawl made, and a fresh app would not.
    g, _results, garden = _searched("/search")
    nav = Navigator(g)
    assert not nav.pollution.clean(g.observation(garden))
    assert "Garden" not in _plans(g)


# --- routes over screens ---------------------------------------------------------------------------------

HOME: list[Spec] = [("books", "link", "Books", "nav-books"), ("authors", "link", "Authors", "nav-authors"),
                    ("loans", "link", "Loans", "nav-loans")]


def _random_home(second_heading: str = "Home") -> tuple[AppGraph, Crawl]:
    """A home page that shows a random book each visit: the crawl's two visits are two states. It left the first
    by "Books", the second (after a restart) by "Authors"."""
    c = Crawl()
    a = c.capture("home-a", "home-a", "/", "Home", [*HOME, ("pick", "paragraph", "Today: Earthsea", "featured")])
    books = c.capture("books", "books", "/books", "Books", [("home", "link", "Home", "nav-home")])
    c.act(a, "books", books)
    b = c.capture("home-b", "home-b", "/", second_heading,
                  [*HOME, ("pick", "paragraph", "Today: Dune", "featured")])
    authors = c.capture("authors", "authors", "/authors", "Authors", [("home", "link", "Home", "nav-home")])
    c.act(b, "authors", authors)
    return c.graph(), c


def test_two_entry_states_of_one_screen_are_one_screen_with_both_ways_out() -> None:
    g, c = _random_home()
    assert screen_groups(g)["home-a"] == screen_groups(g)["home-b"]
    plan = _plans(g)["Authors"]
    assert plan.steps[0].observation_id == c.obs["home-a"].id  # from the pristine entry, on its own capture
    assert plan.steps[0].action.target_element_id == "authors"
    assert planner_reach(g, [p.goal.state for p in _plans(g).values()]) == (3, 3)


def test_states_that_are_two_screens_to_a_reader_stay_apart() -> None:
    g, _c = _random_home(second_heading="Welcome back")
    assert screen_groups(g)["home-a"] != screen_groups(g)["home-b"]
    assert "Authors" not in _plans(g)  # the entry never led there, and no route does
    assert planner_reach(g, [p.goal.state for p in _plans(g).values()]) == (2, 4)


def _dashboard() -> tuple[AppGraph, Crawl]:
    """The crawl reached Users the long way: Reports, back to the dashboard (another state: its counter ticked),
    then Users. The dashboard's Users link is one tap from the start (the CMS plans refused as 15–23 steps long
    for screens 1–2 clicks from its dashboard)."""
    c = Crawl()
    nav = [("reports", "link", "Reports", "nav-reports"), ("users", "link", "Users", "nav-users")]
    d1 = c.capture("dash-1", "dash-1", "/admin", "Dashboard", [*nav, ("count", "paragraph", "3 new orders", "n")])
    reports = c.capture("reports", "reports", "/admin/reports", "Reports", [("dash", "link", "Dashboard", "nav-d")])
    c.act(d1, "reports", reports)
    d2 = c.capture("dash-2", "dash-2", "/admin", "Dashboard", [*nav, ("count", "paragraph", "4 new orders", "n")])
    c.act(reports, "dash", d2)
    users = c.capture("users", "users", "/admin/users", "Users", [("dash", "link", "Dashboard", "nav-d")])
    c.act(d2, "users", users)
    return c.graph(), c


def test_a_route_is_the_screen_graphs_shortest_not_the_crawls_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    g, c = _dashboard()
    users = _plans(g)["Users"]
    assert [s.target_label for s in users.steps if s.edge_id] == ["Users"]
    assert users.steps[0].observation_id == c.obs["dash-1"].id
    _one_screen_per_state(monkeypatch)
    g, _c = _dashboard()
    planner = Planner(g)
    assert "Users" not in {p.facts.target for p in planner.plans()}
    # The crawl's walk, Reports → Dashboard → Users, was all a state graph knew, and it is a detour.
    assert any("“Users”" in detail for _p, why, detail in planner.refused if why == "detour_plan")


def _wiki_chain(edit_tab: bool = False) -> Crawl:
    """A crawl that walked one chain and never came back: Start → Guide → Timeline → Roadmap, each page showing
    the navigation bar (Timeline, Roadmap) and an "Edit" tab; the bar's "Roadmap" was tapped once, on Timeline."""
    c = Crawl("wiki")
    bar: list[Spec] = [("tl", "link", "Timeline", "nav-timeline"), ("rm", "link", "Roadmap", "nav-roadmap"),
                       ("edit", "link", "Edit", "tab-edit")]
    start = c.capture("start", "start", "/wiki/Start", "Welcome", [("guide", "link", "Guide", "body"), *bar])
    guide = c.capture("guide", "guide", "/wiki/Guide", "The Guide", bar)
    c.act(start, "guide", guide)
    timeline_ = c.capture("timeline", "timeline", "/timeline", "Timeline", bar)
    c.act(guide, "tl", timeline_)
    roadmap = c.capture("roadmap", "roadmap", "/roadmap", "Roadmap", bar)
    c.act(timeline_, "rm", roadmap)
    if edit_tab:  # the Edit tab, tapped once, on the roadmap: it edits the page it is on
        edit = c.capture("edit-roadmap", "edit-roadmap", "/roadmap/edit", "Editing Roadmap", [])
        c.act(roadmap, "edit", edit)
    return c


def test_a_navigation_bars_link_is_a_way_out_of_every_screen_that_shows_it() -> None:
    c = _wiki_chain()
    g = c.graph()
    roadmap = _plans(g)["Roadmap"]
    assert [s.target_label for s in roadmap.steps if s.edge_id] == ["Roadmap"]  # from the start, one tap
    assert roadmap.steps[0].observation_id == c.obs["start"].id
    assert Navigator(g).dist["roadmap"] == 1


def test_a_tab_that_acts_on_its_own_page_is_never_taken_from_another() -> None:
    g = _wiki_chain(edit_tab=True).graph()
    nav = Navigator(g)
    assert nav.dist.get("edit-roadmap") == 2  # through Roadmap, never "Edit" on the start page
    assert [e.id for e, _a in nav.path_to("edit-roadmap") or []] == ["t02", "t03"]  # the crawl's own Edit tap


# --- look-alikes that lead to one place --------------------------------------------------------------------

def test_two_look_alikes_that_both_led_to_one_place_are_no_ambiguity_either_is_picked() -> None:
    # Both "Recent changes" links of the main page were tapped there and both opened Recent changes.
    planner = Planner(wiki_graph([("main", "page", "garden"), ("main", "rc", "rc"), ("main", "rc2", "rc")]))
    assert "Recent changes" in _screens(planner)
    assert not _refused(planner, "ambiguous_target")


def test_look_alikes_that_led_to_two_places_stay_ambiguous() -> None:
    planner = Planner(wiki_graph([("main", "page", "garden"), ("main", "rc", "rc"), ("main", "rc2", "garden")]))
    assert "Recent changes" not in _screens(planner)
    assert _refused(planner, "ambiguous_target")


# --- one step limit ----------------------------------------------------------------------------------------

# Chapter titles in words: pages told apart only by a number ("Chapter 3", "Read chapter 4") are one state to the
# explorers' identity (numbers are placeholders), and one crawl would never record them as a chain of states.
CHAPTERS = ("Arrival", "Beacon", "Cascade", "Drift", "Ember", "Fjord", "Glacier", "Harbor", "Inlet", "Juniper",
            "Kestrel", "Lagoon", "Meadow", "Nettle", "Orchard", "Prairie", "Quarry", "Ridge", "Summit", "Tundra",
            "Upland", "Valley")


def _chapters(n: int, store: BlobStore | None = None) -> Crawl:
    """Chapters 0..n-1, each linking to the next: the last is n-1 taps from the first (an n-step task)."""
    c = Crawl("book", store)
    names = [c.capture(f"c{i}", f"s{i}", f"/chapter/{CHAPTERS[i].lower()}", f"Chapter {CHAPTERS[i]}",
                       [("next", "link", f"Read chapter {CHAPTERS[i + 1]}", "next")] if i + 1 < n else [])
             for i in range(n)]
    for a, b in pairwise(names):
        c.act(a, "next", b)
    return c


def test_max_steps_is_the_limit_a_21_step_plan_is_refused_at_20_and_kept_at_21() -> None:
    g = _chapters(21).graph()
    at20 = Planner(g, 20)
    kept = at20.plans()
    assert max(len(p.steps) for p in kept) == 20  # the 20th chapter's 20-step plan is within the limit
    assert any(why == "plan_too_long" and "21 steps > 20" in detail for _p, why, detail in at20.refused)
    assert max(len(p.steps) for p in Planner(g, 21).plans()) == 21


# --- deterministic ----------------------------------------------------------------------------------------

def _synth(graph_dir: Path, out: Path, hash_seed: str) -> list[tuple[object, ...]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": hash_seed}
    exe = Path(sys.executable).parent / "trajforge"
    done = subprocess.run([str(exe), "synth", "--graph", str(graph_dir), "--out", str(out)], capture_output=True,
                          text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = pq.read_table(out / "trajectories.parquet").to_pylist()
    return sorted((r["id"], r["task"]["instruction"], tuple(s["instruction"] for s in r["steps"])) for r in rows)


def test_two_synth_runs_over_one_graph_write_the_same_tasks(tmp_path: Path) -> None:
    graph_dir = tmp_path / "graph"
    g, c = _dashboard()
    store = BlobStore(graph_dir / "blobs")
    for o in c.obs.values():  # the screenshots synthesis reads
        store.put(_png(f"{o.elements[0].text}|{next(n for n, x in c.obs.items() if x.id == o.id)}"))
    write_parquet(list(c.obs.values()), graph_dir / "site" / "observations.parquet", "observation")
    write_parquet(c.edges, graph_dir / "site" / "transitions.parquet", "transition")
    first = _synth(graph_dir, tmp_path / "one", "1")
    assert first and first == _synth(graph_dir, tmp_path / "two", "2")
    assert g.app_id == "site"
