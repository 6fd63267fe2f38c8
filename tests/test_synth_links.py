"""Which controls the planner may tap on a screen where the crawl never tapped them: a frame's links.

The planner's routes and its detour check must read "where does this control lead" alike. Where the detour check
believes the sidebar's "Search" on the start page opens search (it did from two other pages) but the planner will
not use it, every plan through the crawl's longer walk is refused as a detour and the screens behind it get no
task. Three cases a CMS admin showed, built here as a small graph:

- a tap that stayed on its screen (a page's own search form's "Search" button) says nothing of where the control
  leads from elsewhere;
- a menu link that opened a page below the one it was on (``/users`` → ``/users?template=item``) is still the
  frame's link when the frame shows it on three pages or more;
- a control that acted in place (opened a dialog over the page, or closed one) leads to whatever page lay under it,
  and is never a link from another page.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from graph.reader import AppGraph, build_graph
from pipelines.synthesis.goals import Planner
from pipelines.synthesis.screens import location_path
from schemas import Action, BBox, DeviceProfile, Element, Observation, Transition
from schemas.base import stable_id

W, H = 400, 300
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
# element id -> (role, text, box)
CONTROLS = {"search": ("button", "Search", (300, 10, 380, 30)), "docs": ("link", "Documents", (10, 60, 100, 80)),
            "users": ("link", "Users", (10, 90, 100, 110)), "add": ("link", "Add user", (10, 120, 100, 140)),
            "go": ("button", "Search", (200, 150, 260, 170)), "julien": ("link", "Julien Dubois", (120, 200, 300, 220)),
            "keys": ("button", "Shortcuts", (300, 40, 380, 60)), "close": ("button", "Close", (300, 250, 380, 270)),
            "privacy": ("link", "Privacy policy", (10, 280, 100, 295)), "up": ("link", "up", (120, 280, 160, 295)),
            "pages": ("link", "Pages", (10, 150, 100, 170)), "title": ("link", "Title", (120, 180, 180, 195)),
            "income": ("link", "Income", (120, 60, 200, 80)), "expenses": ("link", "Expenses", (120, 90, 200, 110)),
            "assets": ("link", "Assets", (120, 120, 200, 140)),
            "changes": ("link", "Changes (monthly)", (120, 150, 260, 170)),
            "june": ("link", "2024-06", (120, 180, 200, 200)), "filters": ("button", "Filters", (300, 70, 380, 90))}
FRAME = ("search", "docs", "users", "add", "keys", "privacy")


def _obs(state: str, path: str, heading: str, controls: tuple[str, ...], dialog: str = "") -> Observation:
    elements = [Element(id=f"{state}-h1", role="heading", text=heading, bbox=BBox(x1=120, y1=10, x2=280, y2=40))]
    if dialog:
        elements.append(Element(id=f"{state}-dlg", role="dialog", text="", bbox=BBox(x1=100, y1=50, x2=390, y2=290)))
        elements.append(Element(id=f"{state}-dh", role="heading", text=dialog,
                                bbox=BBox(x1=110, y1=60, x2=300, y2=80)))
    for cid in controls:
        role, text, (x1, y1, x2, y2) = CONTROLS[cid]
        elements.append(Element(id=cid, role=role, text=text, clickable=True, bbox=BBox(x1=x1, y1=y1, x2=x2, y2=y2)))
    return Observation(
        id=stable_id("obs", state), screenshot_sha256=hashlib.sha256(state.encode()).hexdigest(), width=W, height=H,
        device=DeviceProfile(name="desktop", width=W, height=H), platform="web", app_id="cms", app_version="1",
        location=f"http://127.0.0.1:8000{path}", elements=elements, exact_hash=stable_id("exact", state),
        structural_hash=stable_id("struct", state), timestamp=T0)


def _graph(pages: dict[str, Observation], edges: list[tuple[str, str, str]]) -> AppGraph:
    transitions = []
    for i, (src, cid, dst) in enumerate(edges):
        x1, y1, x2, y2 = CONTROLS[cid][2]
        box = BBox(x1=x1, y1=y1, x2=x2, y2=y2)
        x, y = box.center
        transitions.append(Transition(
            id=f"t{i:02d}", run_id="run-1", app_id="cms", from_state=src, to_state=dst,
            from_observation_id=pages[src].id, to_observation_id=pages[dst].id,
            action=Action(type="click", x=x, y=y, image_width=W, image_height=H, target_element_id=cid,
                          target_bbox=box), effective=True, timestamp=T0 + timedelta(seconds=i)))
    return build_graph("cms", list(pages.values()), transitions)


def _routes(planner: Planner) -> dict[str, list[str]]:
    """Screen goal → the labels its plan taps."""
    return {p.facts.target: [s.target_label for s in p.steps if s.edge_id] for p in planner.plans()
            if p.kind == "screen"}


def test_a_tap_that_stayed_on_its_screen_does_not_unmake_a_frame_link() -> None:
    pages = {"home": _obs("home", "/admin/", "Dashboard", FRAME),
             "docs": _obs("docs", "/admin/documents/", "Documents", (*FRAME, "go")),
             "docs2": _obs("docs2", "/admin/documents/", "Documents", (*FRAME, "go")),
             "users": _obs("users", "/admin/users/", "Users list", FRAME),
             "found": _obs("found", "/admin/search/", "Search results", FRAME)}
    # The documents page's own "Search" button kept it on its screen; the sidebar's "Search" (one identity: a
    # button reading "Search") opened search from two pages.
    planner = Planner(_graph(pages, [("home", "docs", "docs"), ("docs", "go", "docs2"), ("docs", "users", "users"),
                                     ("docs2", "search", "found"), ("users", "search", "found")]))
    assert _routes(planner)["Search results"] == ["Search"]
    assert not [d for _p, why, d in planner.refused if why == "detour_plan"]


def test_a_menu_link_below_its_page_is_a_frame_link_where_the_frame_shows_it() -> None:
    pages = {"home": _obs("home", "/admin/", "Dashboard", FRAME),
             "docs": _obs("docs", "/admin/documents/", "Documents", FRAME),
             "users": _obs("users", "/admin/users/", "Users list", FRAME),
             "new": _obs("new", "/admin/users/?template=item", "New user", FRAME)}
    planner = Planner(_graph(pages, [("home", "docs", "docs"), ("docs", "users", "users"), ("users", "add", "new")]))
    assert _routes(planner)["New user"] == ["Add user"]  # from the start page, not through the users list
    assert not [d for _p, why, d in planner.refused if why == "detour_plan"]


def test_a_control_that_acted_in_place_is_no_link_from_another_page() -> None:
    pages = {"home": _obs("home", "/admin/", "Dashboard", FRAME),
             "users": _obs("users", "/admin/users/", "Users list", (*FRAME, "julien")),
             "julien": _obs("julien", "/admin/users/6/", "Julien Dubois", FRAME),
             "help": _obs("help", "/admin/users/6/", "Julien Dubois", (*FRAME, "close"), dialog="Keyboard shortcuts"),
             "docs": _obs("docs", "/admin/documents/", "Documents", FRAME)}
    # "Shortcuts" opened its dialog over Julien's page and "Close" went back to that page: both acted in place.
    planner = Planner(_graph(pages, [("home", "users", "users"), ("users", "julien", "julien"),
                                     ("julien", "keys", "help"), ("help", "close", "julien"),
                                     ("julien", "docs", "docs")]))
    routes = _routes(planner)
    assert routes["Julien Dubois"] == ["Users", "Julien Dubois"]
    assert all("Close" not in r and r[:1] != ["Shortcuts"] for r in routes.values())


def test_a_frame_control_recorded_reloading_its_page_under_other_words_is_no_link() -> None:
    # The footer's "Privacy policy", tapped once on the users list, was recorded as reloading that list with other
    # options (the tap hit something else): its words do not name where it went, so it is no way to the list.
    pages = {"home": _obs("home", "/admin/", "Dashboard", FRAME),
             "docs": _obs("docs", "/admin/documents/", "Documents", FRAME),
             "users": _obs("users", "/admin/users/", "Users list", FRAME),
             "more": _obs("more", "/admin/users/?limit=250", "Users list (250)", FRAME)}
    planner = Planner(_graph(pages, [("home", "docs", "docs"), ("docs", "users", "users"),
                                     ("users", "privacy", "more")]))
    assert all("Privacy policy" not in r for r in _routes(planner).values())


def test_a_page_without_a_heading_is_not_named_by_a_word_for_moving_or_a_symbol() -> None:
    """A folder page with no heading of its own is called by the link that opened it ("Documents"), but a link
    saying "up", "next" or "⏭" names no place: "Take me to up." is no task (a file manager gave four such)."""
    from pipelines.synthesis.goals import _naming_words

    assert _naming_words("Documents") == "Documents"
    assert [_naming_words(w) for w in ("up", "Next", "⏭", "Cancel", "» ")] == ["", "", "", "", ""]

    def bare(obs: Observation) -> Observation:
        return obs.model_copy(update={"elements": [e for e in obs.elements if e.role != "heading"]})

    for cid, named in (("docs", True), ("up", False)):
        pages = {"home": _obs("home", "/admin/", "Dashboard", (*FRAME, "up")),
                 "folder": bare(_obs("folder", "/files/a/", "", FRAME))}
        targets = {p.facts.target for p in Planner(_graph(pages, [("home", cid, "folder")])).plans()
                   if p.kind == "screen"}
        assert (targets == {"Documents"}) if named else not targets, targets


def test_a_column_header_that_sorted_one_list_is_no_way_to_that_list_from_another() -> None:
    """A CMS shows a "Title" column header on its pages, documents and images lists. The crawl tapped it on the
    documents list, which reloaded as ``?ordering=-title``: the query's words are the view's options, not the
    page's name, so the header is no frame link — the planner routed "28 Pages → Title → a document" and all
    five such replays diverged."""
    pages = {"home": _obs("home", "/admin/", "Dashboard", (*FRAME, "pages")),
             "docs": _obs("docs", "/admin/documents/", "Documents", (*FRAME, "title")),
             "sorted": _obs("sorted", "/admin/documents/?ordering=-title", "Documents", (*FRAME, "title")),
             "tree": _obs("tree", "/admin/pages/3/", "Northwind Trails", (*FRAME, "title")),
             "images": _obs("images", "/admin/images/", "Images", (*FRAME, "title"))}
    planner = Planner(_graph(pages, [("home", "docs", "docs"), ("docs", "title", "sorted"), ("home", "pages", "tree"),
                                     ("tree", "docs", "docs"), ("tree", "search", "images")]))
    sort_edge = next(t.id for t in planner.graph.transitions if t.action.target_element_id == "title")
    for state in ("tree", "images"):
        assert sort_edge not in [e.id for e, _to in planner.nav.hops_from(state)]


def test_a_query_that_opens_another_page_names_it() -> None:
    """A tracker serves its pages by query: the frame's "Search" opened ``/issue?@template=search``, "Issue
    searching", from the issue list. Another page with the same path, under another heading: the query names it,
    so "Search" is the frame's way there from every page that shows it."""
    pages = {"home": _obs("home", "/admin/", "Dashboard", FRAME),
             "list": _obs("list", "/issue", "List of issues", FRAME),
             "find": _obs("find", "/issue?@template=search", "Issue searching", FRAME),
             "users": _obs("users", "/user", "Users list", FRAME)}
    planner = Planner(_graph(pages, [("home", "docs", "list"), ("list", "search", "find"),
                                     ("list", "users", "users")]))
    search_edge = next(t.id for t in planner.graph.transitions if t.action.target_element_id == "search")
    for state in ("home", "users"):
        assert search_edge in [e.id for e, _to in planner.nav.hops_from(state)]


def test_a_plan_that_shows_its_goal_screen_before_its_last_tap_is_refused() -> None:
    # A ledger's account pages all read "Account Journal", so each is named by the link that opened it ("Income").
    # The crawl reached the Income journal again filtered to a month (Income → "Changes (monthly)" → "2024-06"):
    # as a user counts screens that is the journal the first tap showed, so replay would find the goal met after
    # one tap and fail the three-tap plan as an overshoot. The planner refuses it with the replay's own check.
    accounts = ("income", "expenses", "assets")
    pages = {"home": _obs("home", "/ledger/income_statement/", "Income Statement", (*FRAME, *accounts)),
             "income": _obs("income", "/ledger/account/Income/", "Account Journal", (*FRAME, "changes")),
             "expenses": _obs("expenses", "/ledger/account/Expenses/", "Account Journal", (*FRAME, "changes")),
             "assets": _obs("assets", "/ledger/account/Assets/", "Account Journal", (*FRAME, "changes")),
             "changes": _obs("changes", "/ledger/account/Income/?r=changes", "Changes (monthly)", (*FRAME, "june")),
             "june": _obs("june", "/ledger/account/Income/?time=2024-06", "Account Journal",
                          (*FRAME, "changes", "june"))}
    planner = Planner(_graph(pages, [("home", "income", "income"), ("home", "expenses", "expenses"),
                                     ("home", "assets", "assets"), ("income", "changes", "changes"),
                                     ("changes", "june", "june")]))
    routes = _routes(planner)
    assert routes["Income"] == ["Income"]
    assert routes["Changes (monthly)"] == ["Income", "Changes (monthly)"]
    assert all(r[-1:] != ["2024-06"] for r in routes.values())
    early = [(p.facts.target, d) for p, why, d in planner.refused if why == "goal_reached_early"]
    assert early == [("Account Journal", "the goal already holds on the screen of step 1, before its last action")]


def test_an_overlay_with_no_name_of_its_own_is_named_by_the_control_that_opened_it() -> None:
    # A filter popover holds only a form (its labels and fields name no dialog): the page's own heading shows
    # through under it, and naming the overlay after it ("Show the “Users list” panel") asks for the page.
    pages = {"home": _obs("home", "/admin/", "Dashboard", FRAME),
             "users": _obs("users", "/admin/users/", "Users list", (*FRAME, "filters"))}
    popover = pages["users"].model_copy(update={"id": stable_id("obs", "pop"), "elements": [
        *pages["users"].elements,
        Element(id="pop-dlg", role="dialog", text="", bbox=BBox(x1=200, y1=60, x2=390, y2=200)),
        Element(id="pop-field", role="textbox", text="Value", editable=True, clickable=True,
                bbox=BBox(x1=210, y1=100, x2=380, y2=120))],
        "structural_hash": stable_id("struct", "pop"), "exact_hash": stable_id("exact", "pop")})
    pages["pop"] = popover
    planner = Planner(_graph(pages, [("home", "users", "users"), ("users", "filters", "pop")]))
    assert _routes(planner)["Filters"] == ["Users", "Filters"]
    assert "Users list" not in [p.facts.target for p in planner.plans() if p.facts.dialog]


def test_a_hash_route_without_its_leading_slash_is_where_a_screen_is() -> None:
    # Node-RED's flows are #flow/tab1, #flow/tab2: one path "/" for the whole app made every tap "stay on its page"
    tab1 = _obs("tab1", "/#flow/tab1", "Flows", FRAME)
    tab2 = _obs("tab2", "/#flow/tab2", "Flows", FRAME)
    section = _obs("sec", "/docs#usage", "Docs", FRAME)
    assert location_path(tab1) == "#/flow/tab1" != location_path(tab2)
    assert location_path(section) == "/docs"
