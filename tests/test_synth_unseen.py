"""Where an app keeps its pages must not decide what the planner reaches (synthesis on apps nobody tuned it for).

Small hand-built graphs, each the shape of a real crawl of a third-party app, each failing without its fix:

- a single-page app whose pages are hash routes (``/#/prompts``): every page has the URL path ``/``, so a
  sidebar link shown on every page counted as shown at one place, every tap as "staying on its page", and the
  sidebar was no way out of any screen — the crawl's one walk through it was every route, refused as a detour;
- a front controller (``/index.php?title=Start``, ``/index.php/Roadmap``): every page looked "below" the script
  and every URL carries the script's name, so no link of the navigation bar counted as one; a tab whose page
  names the page it was on (a talk page) still does;
- a link back with the page it came from in its query (``?returnTo=/budgets``) still goes to one place;
- a control whose one tap depended on its page ("Edit" on the roadmap) says nothing about where it leads from
  another page, so it proves no detour.
"""

from __future__ import annotations

from test_synth_reach import Crawl, Spec, _plans, _wiki_chain

from pipelines.synthesis.calls import step_call
from pipelines.synthesis.goals import Planner
from pipelines.synthesis.navigation import Navigator


def _chain(paths: dict[str, str], bar_extra: list[Spec] | None = None) -> Crawl:
    """Start → Guide → Timeline → Roadmap, walked once and never back, each page showing the bar (Timeline,
    Roadmap); the bar's "Roadmap" was tapped once, on Timeline. ``paths`` gives each page's URL."""
    c = Crawl("spa")
    bar: list[Spec] = [("tl", "link", "Timeline", "nav-timeline"), ("rm", "link", "Roadmap", "nav-roadmap"),
                       *(bar_extra or [])]
    start = c.capture("start", "start", paths["start"], "Welcome", [("guide", "link", "Guide", "body"), *bar])
    guide = c.capture("guide", "guide", paths["guide"], "The Guide", bar)
    c.act(start, "guide", guide)
    tl = c.capture("timeline", "timeline", paths["timeline"], "Timeline", bar)
    c.act(guide, "tl", tl)
    rm = c.capture("roadmap", "roadmap", paths["roadmap"], "Roadmap", bar)
    c.act(tl, "rm", rm)
    return c


def _taps(c: Crawl, target: str) -> list[str]:
    plan = _plans(c.graph())[target]
    return [s.target_label for s in plan.steps if s.edge_id]


def test_a_hash_routed_apps_sidebar_is_a_way_out_of_every_page() -> None:
    c = _chain({"start": "/#/start", "guide": "/#/guide", "timeline": "/#/timeline", "roadmap": "/#/roadmap"})
    assert _taps(c, "Roadmap") == ["Roadmap"]  # from the start page, one tap — not Guide, Timeline, Roadmap
    assert Navigator(c.graph()).dist["roadmap"] == 1
    planner = Planner(c.graph())
    planner.plans()
    assert not [d for _p, why, d in planner.refused if why == "detour_plan"]


def test_an_anchor_is_still_a_place_on_its_page_not_a_route() -> None:
    # ``#section`` scrolls the page: the pages are all "/", as before, and the bar counts as shown at one place
    c = _chain({"start": "/#start", "guide": "/#guide", "timeline": "/#timeline", "roadmap": "/#roadmap"})
    assert Navigator(c.graph()).dist["roadmap"] == 3


def test_a_front_controllers_navigation_bar_is_a_way_out_of_every_page() -> None:
    c = _chain({"start": "/index.php?title=Start", "guide": "/index.php/Guide",
                "timeline": "/index.php?title=Timeline", "roadmap": "/index.php/Roadmap"})
    assert _taps(c, "Roadmap") == ["Roadmap"]
    assert Navigator(c.graph()).dist["roadmap"] == 1


def test_a_tab_whose_page_names_the_page_it_was_on_stays_page_bound_behind_a_front_controller() -> None:
    c = _chain({"start": "/index.php/Start", "guide": "/index.php/Guide",
                "timeline": "/index.php?title=Timeline", "roadmap": "/index.php?title=Roadmap"},
               bar_extra=[("talk", "link", "Talk", "tab-talk")])
    talk = c.capture("talk", "talk", "/index.php/Talk:Roadmap", "Talk:Roadmap", [])
    c.act("roadmap", "talk", talk)
    nav = Navigator(c.graph())
    assert nav.dist["talk"] == 2  # Roadmap (one tap of the bar), then its own Talk tab — never Talk from Start
    assert [e.id for e, _a in nav.path_to("talk") or []][-1] == "t03"


def test_a_link_that_remembers_where_it_came_from_still_goes_to_one_place() -> None:
    c = _chain({"start": "/#/start", "guide": "/#/guide", "timeline": "/#/timeline", "roadmap": "/#/roadmap"},
               bar_extra=[("set", "link", "Settings", "nav-settings")])
    settings = c.capture("settings", "settings", "/#/settings?returnTo=%2Froadmap", "Settings", [])
    c.act("roadmap", "set", settings)
    assert _taps(c, "Settings") == ["Settings"]  # one tap from the start page


def test_a_tab_that_acted_on_its_own_page_proves_no_detour_from_another() -> None:
    # "Edit", on every page, was tapped once, on the roadmap, and opened the roadmap's editor: tapping it on the
    # start page would edit the start page, so Roadmap → Edit is the way, not a detour around it.
    planner = Planner(_wiki_chain(edit_tab=True).graph())
    plans = {p.facts.target: p for p in planner.plans()}
    assert [s.target_label for s in plans["Editing Roadmap"].steps if s.edge_id] == ["Roadmap", "Edit"]
    assert not [d for _p, why, d in planner.refused if why == "detour_plan"]


def _admin() -> Crawl:
    """An admin app served under ``/admin/``: the dashboard's sidebar (Images, Documents, a "Pages" button that
    unfolds a menu in place) on every page. The crawl tapped Images on the dashboard, Documents on Images, then
    unfolded the Pages menu on Documents."""
    c = Crawl("cms")
    bar: list[Spec] = [("img", "link", "Images", "nav-img"), ("doc", "link", "Documents", "nav-doc"),
                       ("pages", "button", "Pages", "nav-pages")]
    dash = c.capture("dash", "dash", "/admin/", "Dashboard", bar)
    images = c.capture("images", "images", "/admin/images/", "Images", bar)
    c.act(dash, "img", images)
    docs = c.capture("docs", "docs", "/admin/documents/", "Documents", bar)
    c.act(images, "doc", docs)
    menu = c.capture("docs-menu", "docs-menu", "/admin/documents/", "Pages",
                     [*bar, ("explorer", "link", "Explorer", "menu-explorer")])
    c.act(docs, "pages", menu)
    return c


def test_the_start_pages_links_to_sections_under_it_are_links_to_one_place() -> None:
    # /admin/images/ is below /admin/ by its path, but the dashboard is the app's home: every page is under it,
    # so its sidebar's Images is a link to one place, a way out of every screen showing it.
    c = _admin()
    nav = Navigator(c.graph())
    assert ("link", "nav-img", "Images") in nav._links()
    assert "images" in {to for _e, to in nav.hops_from("docs")}


def test_a_menu_button_that_unfolded_in_place_is_still_a_possible_detour() -> None:
    # "Pages" stayed on its page (it unfolds a menu): nothing says the dashboard's "Pages" does anything else, so
    # dashboard → Documents → Pages passes a control that was on screen from the start.
    planner = Planner(_admin().graph())
    planner.plans()
    assert any("“Pages”" in d for _p, why, d in planner.refused if why == "detour_plan")


def test_pages_under_one_frame_heading_are_named_by_the_links_that_opened_them() -> None:
    # A database browser heads every table's page "SQL": the tables are four goals named by the sidebar's links,
    # not one "SQL" goal (equal goals collapse into one plan) that says nothing of which table.
    c = Crawl("db")
    tables = ["invoices", "customers", "projects", "orders"]
    bar: list[Spec] = [(f"t-{t}", "link", t, f"table-{t}") for t in tables]
    prev = c.capture("home", "home", "/", "Tables", bar)
    for t in tables:
        page = c.capture(t, t, f"/{t}/", "SQL", bar)
        c.act(prev, f"t-{t}", page)
        prev = page
    g = c.graph()
    plans = Planner(g).plans()
    names = {p.facts.target for p in plans if p.kind == "screen"}
    assert "SQL" not in names
    assert len(names & set(tables)) >= 3  # a list's entries are spread over (``MAX_PER_LIST``)
    # and the steps call the page what the task does: "The invoices page is open", not "The SQL page is open"
    plan = next(p for p in plans if p.facts.target == "invoices")
    done = step_call(g, plan, len(plan.steps) - 1, "Open invoices.", "en", "v")
    assert done.payload["screen"]["screen"] == "invoices"
