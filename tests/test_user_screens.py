"""Screens as a user counts them (``graph.user_screens``): every rule both ways, on elements built in Python.

A trail, a flash, a clock, random content, typed text and scroll position never make another screen; another
route, another main heading, an open dialog or menu, an edit form do. Names come from the main content, never
from the navigation, a user menu or a site title glued in front.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from graph.abstraction import features
from graph.identity import heading_of, same_screen
from graph.reader import AppGraph, build_graph
from graph.screen import Screen, Widget
from graph.user_screens import (
    chrome_headings,
    dialog_title,
    route,
    screen_key,
    screen_name,
    screen_names_of,
    screens_of,
    site_titles_of,
)
from schemas import Action, ActionType, BBox, DeviceProfile, Element, Observation, Platform, Transition
from schemas.base import stable_id

BOX = BBox(x1=0, y1=0, x2=50, y2=20)


def el(path: str, text: str = "", role: str = "paragraph", cls: str = "", rid: str = "", **kw: object) -> Element:
    tag = cls or path.rsplit("/", 1)[-1].split("[")[0]
    return Element(id=stable_id("e", path, rid, text), role=role, class_name=tag, text=text, path=path,
                   resource_id=rid, bbox=BOX, **kw)  # type: ignore[arg-type]


def link(path: str, text: str) -> Element:
    return el(path, text, role="link", clickable=True)


def page(heading: str = "Invoices", *, trail: tuple[str, ...] = (), flash: str = "", clock: str = "10:00",
         rows: tuple[str, ...] = ("Rent", "Power", "Water"), user: str = "Admin", extra: tuple[Element, ...] = ()
         ) -> list[Element]:
    """A page with a banner (site title, user menu), a navigation bar, a breadcrumb trail, a flash, a clock and
    a list in its main content."""
    out = [el("body[1]/header[1]/a[1]", "Ledger", role="link", clickable=True),
           link("body[1]/header[1]/div[1]/a[1]", user),
           link("body[1]/nav[1]/a[1]", "Home"), link("body[1]/nav[1]/a[2]", "Reports")]
    out += [link(f"body[1]/nav[2]/ol[1]/li[{i}]/a[1]", t) for i, t in enumerate(trail, 1)]
    if flash:
        out.append(el("body[1]/main[1]/div[1]", flash, role="alert", cls="div"))
    out.append(el("body[1]/main[1]/h1[1]", heading, role="heading"))
    out.append(el("body[1]/main[1]/p[1]", f"Updated at {clock}"))
    out += [link(f"body[1]/main[1]/ul[1]/li[{i}]/a[1]", t) for i, t in enumerate(rows, 1)]
    out += list(extra)
    out.append(el("body[1]/footer[1]/p[1]", "© Ledger"))
    return out


URL = "http://127.0.0.1:5000/invoices"


def key(elements: list[Element], url: str = URL) -> str:
    return str(screen_key(url, elements))


# --- route ---------------------------------------------------------------------------------------------------


def test_route_abstracts_ids_and_query_values_but_keeps_words_and_keys() -> None:
    assert route("http://h:1/notes/17/edit?sort=asc&page=2") == route("https://x:9/notes/3/edit?page=9&sort=desc")
    assert route("http://h/notes/17/edit?sort=asc") == "/notes/<n>/edit?sort"
    assert route("http://h/doc/123e4567-e89b-12d3-a456-426614174000") == "/doc/<id>"
    assert route("http://h/commit/3f2a9c0d") == "/commit/<id>"
    assert route("http://h/note-17") == route("http://h/note-4") == "/note-<n>"
    assert route("http://h/row_42") == "/row_<n>"
    # A wiki page's name is the screen: words, CamelCase and version-like names stay.
    assert route("http://h/wiki/WikiStart") != route("http://h/wiki/TracGuide")
    assert route("http://h/wiki/Page2") == "/wiki/Page2"
    # A query key is a mode (another screen); an anchor is a scroll position; a hash route is a path.
    assert route("http://h/wiki/A?action=edit") != route("http://h/wiki/A")
    assert route("http://h/wiki/A#section-2") == route("http://h/wiki/A")
    assert route("http://h/app#/notes/7") == route("http://h/app#/notes/8") == "/app#/notes/<n>"
    assert route("http://h/app#/notes") != route("http://h/app#/settings")
    assert route("http://h/app#!/notes?q=x") == "/app#/notes?q"
    # a router that writes its routes without the leading slash (``#flow/tab1``): no element id has a slash
    assert route("http://h/#flow/tab1") == "#/flow/tab1" != route("http://h/#flow/tab2")
    assert route("http://h/#flow/4f2a9c0d11b3e5a7") == route("http://h/#flow/0123456789abcdef") == "#/flow/<id>"
    assert route("http://h/wiki/A#Notes_and_references") == route("http://h/wiki/A")
    # A key sent with an empty value selects nothing (a search submitted blank, a link carrying an empty filter);
    # a bare key is a mode flag.
    assert route("http://h/admin/users/?q=") == route("http://h/admin/users/") == "/admin/users/"
    assert route("http://h/admin/users/?q=&ordering=name") == "/admin/users/?ordering"
    assert route("http://h/?h") == "/?h" != route("http://h/")
    assert route("http://h/list?%40columns=id") == "/list?@columns"
    # A key whose value is a location is where to go back afterwards, carried from the page the link was drawn on:
    # the settings screen opened from the gateway page and from the start page is one screen.
    assert route("http://h/#/settings/general?returnTo=%2Fgateway%2Fbudgets") == route("http://h/#/settings/general")
    assert route("http://h/admin/pages/3/edit/?next=/admin/pages/") == "/admin/pages/<n>/edit/"
    assert route("http://h/login?next=https%3A%2F%2Fh%2Fx&lang=en") == "/login?lang"


# --- what never splits ---------------------------------------------------------------------------------------


def test_trail_flash_clock_random_content_and_user_menu_never_split_a_screen() -> None:
    base = key(page())
    assert key(page(trail=("Home", "Reports", "Invoices", "Reports"))) == base  # breadcrumb trail of visits
    assert key(page(flash="You are logged in")) == base  # a login flash
    assert key(page(clock="11:42")) == base  # a clock
    assert key(page(rows=("Books", "Games", "Films", "Tea", "Rent"))) == base  # random content, another count
    assert key(page(user="admin@example.org")) == base  # the user menu's text
    # sorted and paged, the page its heading names: one screen; another instance's port is no part of it
    assert key(page(), "http://127.0.0.1:7000/invoices?sort=amount&page=3") == base
    assert key(page(), "http://127.0.0.1:7000/invoices") == base
    # without a heading, the query's keys are all that tell two views of one path apart
    bare = [link("body[1]/main[1]/a[1]", "x")]
    assert key(bare, "http://h/share/?doc") != key(bare, "http://h/share/")


def test_typed_but_unsubmitted_text_is_the_same_screen() -> None:
    box = el("body[1]/main[1]/form[1]/input[1]", "Search", role="searchbox", cls="input:search", editable=True)
    typed = el("body[1]/main[1]/form[1]/input[1]", "Search", role="searchbox", cls="input:search", editable=True)
    assert key(page(extra=(box,))) == key(page(extra=(typed,)))


def test_scroll_position_never_splits_but_a_click_to_another_heading_does() -> None:
    top = page("Annual report")
    scrolled = [e for e in page("Annual report") if "h1" not in e.path] + [
        el("body[1]/main[1]/h2[3]", "Appendix", role="heading")]  # the h1 scrolled away: another first heading
    other = page("Appendix")
    g = _graph({"top": (URL, top), "down": (URL, scrolled), "other": (URL, other)},
               [("top", "scroll", "down"), ("down", "click", "other")])
    screens = screens_of(g)
    assert screens["top"] == screens["down"]  # scrolled: same screen, keyed by where scrolling started
    assert screens["other"] != screens["top"]
    assert "annual report" in screens["down"]
    assert screen_names_of(g)["down"] == "Annual report"
    # Without the scroll edge, the scrolled capture alone reads as another heading.
    assert key(scrolled) != key(top)


# --- what splits ---------------------------------------------------------------------------------------------


def test_another_route_heading_dialog_menu_or_edit_form_is_another_screen() -> None:
    base = key(page())
    assert key(page(), "http://127.0.0.1:5000/bills") != base
    assert key(page("Bills")) != base
    dialog = (el("body[1]/div[4]/div[1]", "", role="dialog", cls="div"),
              el("body[1]/div[4]/div[1]/h2[1]", "Delete invoice?", role="heading"),
              el("body[1]/div[4]/div[1]/button[1]", "Delete", role="button", clickable=True))
    assert key(page(extra=dialog)) != base
    menu = (el("body[1]/header[1]/div[1]/ul[1]/li[1]", "Profile", role="menuitem", clickable=True),
            el("body[1]/header[1]/div[1]/ul[1]/li[2]", "Log out", role="menuitem", clickable=True))
    assert key(page(extra=menu)) != base
    form = (el("body[1]/main[1]/form[1]/textarea[1]", "Notes", role="textbox", editable=True),)
    assert key(page(extra=form)) != base
    bare = [e for e in page() if not (e.path.startswith("body[1]/main[1]/") and e.role != "heading")]
    assert key(bare) != base  # a half-drawn landing: heading, no content yet


def test_same_screen_on_crawl_features_follows_the_same_rules() -> None:
    def sig(elements: list[Element], url: str = URL) -> tuple[object, str]:
        s = Screen(Platform.WEB, url, 400, 800, 1.0, [Widget(element=e) for e in elements], b"")
        return features(s, with_phash=False), heading_of(s.elements)

    want = sig(page())
    for same in (page(trail=("Home", "Reports")), page(flash="Saved"), page(rows=("A", "B", "C", "D")),
                 page(clock="23:59")):
        got = sig(same, "http://10.0.0.2:8123/invoices")
        assert same_screen(got[0], got[1], want[0], want[1]), same  # type: ignore[arg-type]
    for other in (page("Bills"), page(extra=(el("body[1]/dialog[1]/h2[1]", "Confirm", role="heading"),))):
        got = sig(other)
        assert not same_screen(got[0], got[1], want[0], want[1])  # type: ignore[arg-type]


def test_a_modal_layer_covering_the_page_is_a_dialog_whatever_its_markup() -> None:
    """A ``div role=dialog`` with no text of its own is not captured; its contents are, and the page under it is
    present but covered (not hit-testable). That is a dialog: another screen, named by its heading."""
    covered = [e.model_copy(update={"visible": False}) for e in page()]
    layer = [el("body[1]/main[1]/div[9]/div[1]/h2[1]", "Share note", role="heading"),
             el("body[1]/main[1]/div[9]/div[1]/input[1]", "Link", role="textbox", cls="input:text", editable=True),
             el("body[1]/main[1]/div[9]/div[1]/button[1]", "Copy link", role="button", clickable=True)]
    assert screen_name(covered + layer) == "Share note"
    assert "dialog" in screen_key(URL, covered + layer).skeleton
    # The same controls in the page, nothing covered: no dialog, and the page keeps its name.
    assert "dialog" not in screen_key(URL, page(extra=tuple(layer))).skeleton
    assert screen_name(page(extra=tuple(layer))) == "Invoices"


def test_a_jump_to_an_anchor_of_the_page_is_a_scroll() -> None:
    top = page("Configuration")
    there = [e for e in page("Configuration") if "h1" not in e.path] + [
        el("body[1]/main[1]/h2[4]", "[logging]", role="heading", rid="logging")]
    g = _graph({"top": (URL, top), "there": (URL + "#logging", there), "bills": ("http://h/bills", page("Bills"))},
               [("top", "click", "there"), ("there", "click", "bills")])
    screens = screens_of(g)
    assert screens["there"] == screens["top"] != screens["bills"]
    # A fragment that names no element of the page is a single-page app's route (a wiki's ``#Tiddler``).
    tiddler = [e for e in page("Configuration") if "h1" not in e.path] + [
        el("body[1]/main[1]/h2[1]", "GettingStarted", role="heading")]
    g = _graph({"top": (URL, top), "tiddler": (URL + "#GettingStarted", tiddler)}, [("top", "click", "tiddler")])
    assert screens_of(g)["tiddler"] != screens_of(g)["top"]


# --- names ---------------------------------------------------------------------------------------------------


def test_the_name_is_the_main_contents_heading_not_the_chrome() -> None:
    user_menu = [el("body[1]/header[1]/h3[1]", "Admin", role="heading"), *page("Balance Sheet")]
    assert screen_name(user_menu) == "Balance Sheet"
    # Without landmark tags, the navigation's headings still lose to the content's; a dialog's heading wins.
    plain = [el("body[1]/div[1]/nav[1]/h2[1]", "Admin", role="heading"),
             el("body[1]/div[2]/h1[1]", "Recent changes", role="heading")]
    assert screen_name(plain) == "Recent changes"
    dialog = [*plain, el("body[1]/dialog[1]/h2[1]", "Rename page", role="heading")]
    assert screen_name(dialog) == "Rename page"


def test_a_site_title_glued_to_the_heading_is_split_off() -> None:
    glued = [el("body[1]/header[1]/h1[1]", "My LedgerBalance Sheet", role="heading"),
             el("body[1]/header[1]/h1[1]/a[1]", "My Ledger", role="link", clickable=True)]
    assert screen_name(glued) == "Balance Sheet"
    # A link that is the heading's first words, with a space, is part of the name.
    ticket = [el("body[1]/div[1]/h1[1]", "Ticket #1 (new defect)", role="heading"),
              el("body[1]/div[1]/h1[1]/a[1]", "Ticket #1", role="link", clickable=True)]
    assert screen_name(ticket) == "Ticket #1 (new defect)"
    assert screen_name([el("body[1]/h1[1]", "Acme WikiIncome", role="heading")], site_titles=["Acme Wiki"]) == "Income"
    assert screen_name([el("body[1]/h1[1]", "Acme Wiki: Start", role="heading")], site_titles=["Acme Wiki"]) == "Start"


def test_without_a_heading_the_document_title_minus_the_site_title_names_it() -> None:
    assert screen_name([link("body[1]/main[1]/a[1]", "x")], title="Balance Sheet - My Ledger",
                       site_titles=["My Ledger"]) == "Balance Sheet"
    assert screen_name([], title="My Ledger | Income", site_titles=["My Ledger"]) == "Income"
    assert screen_name([]) == ""


def test_a_heading_on_every_state_is_the_site_title_and_names_no_screen() -> None:
    side = "body[1]/div[2]/h1[1]"
    pages = {f"s{i}": (f"http://h/wiki/{n}", [el("body[1]/div[1]/h2[1]", n, role="heading"),
                                              el(side, "My Wiki", role="heading")])
             for i, n in enumerate(["Start", "Help", "Tools", "Recent", "Search", "About"])}
    pages["home"] = ("http://h/", [el(side, "My Wiki", role="heading"), el("body[1]/div[1]/p[1]", "Welcome")])
    g = _graph(pages, [("home", "click", s) for s in pages if s != "home"])
    assert site_titles_of(g) == frozenset({"My Wiki"})
    names = screen_names_of(g)
    assert names["s1"] == "Help"
    assert names["home"] == "My Wiki"  # only a screen with nothing else is called by the site title
    assert len(set(screens_of(g).values())) == len(pages)


# --- state ids -----------------------------------------------------------------------------------------------


def test_numbers_in_resource_ids_never_reach_crawl_state_ids() -> None:
    """Issue 49 item 5: a crawl's features (the crawler's default) read ``note-17`` as ``note-<n>``: the same
    screen on another instance, which numbers its records anew, has the same structural hash."""
    def shot(*ids: int) -> Screen:
        els = [el("body[1]/main[1]/h1[1]", "Notes", role="heading")]
        els += [el(f"body[1]/main[1]/div[{i}]/a[1]", f"Note {i}", role="link", rid=f"note-{n}", clickable=True)
                for i, n in enumerate(ids, 1)]
        els.append(el("body[1]/main[1]/button[1]", "Add", role="button", rid=f"row_{ids[0] + 40}", clickable=True))
        return Screen(Platform.WEB, "http://h/notes", 400, 800, 1.0, [Widget(element=e) for e in els], b"")

    a, b = features(shot(17, 18)), features(shot(3, 4))
    assert a.structural_hash == b.structural_hash
    assert not any(ch.isdigit() for item in a.structure[1:] for ch in item.split("|")[2])
    assert features(shot(17, 18), stable_ids=False).structural_hash != \
        features(shot(3, 4), stable_ids=False).structural_hash  # the older exact reading, kept for comparisons


# --- helpers -------------------------------------------------------------------------------------------------

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _graph(pages: dict[str, tuple[str, list[Element]]], edges: list[tuple[str, str, str]]) -> AppGraph:
    obs = {s: Observation(
        id=stable_id("obs", s), screenshot_sha256=hashlib.sha256(s.encode()).hexdigest(), width=400, height=800,
        device=DeviceProfile(name="desktop", width=400, height=800), platform=Platform.WEB, app_id="app",
        location=url, elements=els, timestamp=T0) for s, (url, els) in pages.items()}
    transitions = []
    for i, (src, kind, dst) in enumerate(edges):
        action = Action(type=ActionType.SCROLL, direction="down") if kind == "scroll" else \
            Action(type=ActionType.CLICK, x=10, y=10, image_width=400, image_height=800)
        transitions.append(Transition(
            id=f"t{i:02d}", run_id="r", app_id="app", from_state=src, to_state=dst,
            from_observation_id=obs[src].id, to_observation_id=obs[dst].id, action=action, effective=True,
            timestamp=T0 + timedelta(seconds=i)))
    return build_graph("app", list(obs.values()), transitions)


def test_a_role_region_covers_its_own_subtree_only() -> None:
    """A ``role="dialog"`` element with text of its own at ``body[1]/div[5]`` makes its subtree a dialog, not every
    ``div`` of the body."""
    els = [el("body[1]/div[1]/h1[1]", "Invoices", role="heading"), el("body[1]/div[1]/p[1]", "Rent"),
           el("body[1]/div[5]", "Saving…", role="dialog", cls="div"),
           el("body[1]/div[5]/h2[1]", "Saving", role="heading")]
    assert screen_name(els) == "Saving"
    assert screen_name(els[:2]) == "Invoices"
    assert "dialog" in screen_key(URL, els).skeleton and "content" in screen_key(URL, els).skeleton


def test_a_heading_repeated_over_several_routes_is_chrome_and_the_title_names_the_screen() -> None:
    """A file manager's bar heading ("<a>panel</a>prev/up/next") over every folder: on a third of the captures or
    more, on three routes or more, it names none of them; each folder is named by its document title."""
    bar = [el("body[1]/div[1]/h2[1]", "panelprev/up/next", role="heading"),
           link("body[1]/div[1]/h2[1]/a[1]", "panel")]
    folders = ["photos", "notes", "projects", "invoices", "contracts", "hr"]
    pages = {f"f{i}": (f"http://h/{n}/", [*bar, link("body[1]/main[1]/a[1]", f"{n}.md")])
             for i, n in enumerate(folders)}
    pages["home"] = ("http://h/", [link("body[1]/main[1]/a[1]", "photos")])
    g = _graph(pages, [("home", "click", s) for s in pages if s != "home"])
    assert "panelprev/up/next" in site_titles_of(g)
    names = screen_names_of(g, {s: f"share {n}" for s, n in zip(pages, [*folders, ""], strict=True)})
    assert names["f0"] == "share photos" and names["f5"] == "share hr"
    # a heading on one route (a record's page, ids abstracted) stays that screen's name
    one = {f"r{i}": (f"http://h/ticket/{i}", [el("body[1]/main[1]/h1[1]", "Ticket", role="heading")])
           for i in range(6)}
    g2 = _graph(one, [("r0", "click", s) for s in one if s != "r0"])
    assert "Ticket" not in chrome_headings((url, els) for url, els in one.values())
    assert screen_names_of(g2)["r1"] == "Ticket"


def test_a_dialog_without_a_heading_is_named_by_its_title_and_two_such_dialogs_are_two_screens() -> None:
    # Many dialogs title themselves with a styled ``div`` (``aria-labelledby`` points at it): the topmost short
    # text that is no control names the dialog, wherever the capture lists it.
    def dialog(title: str, message: str) -> tuple[Element, ...]:
        def at(path: str, text: str, y: int, **kw: object) -> Element:
            e = el(path, text, **kw)
            return e.model_copy(update={"bbox": BBox(x1=100, y1=y, x2=300, y2=y + 20)})

        return (at("body[1]/dialog[1]/div[1]/div[3]/button[1]", "Close", 200, role="button", clickable=True),
                at("body[1]/dialog[1]/div[1]/div[1]", title, 100, role="", cls="div"),
                at("body[1]/dialog[1]/div[1]/span[1]", message, 140, role="", cls="span"))

    kernel = page(extra=dialog("Error Starting Kernel", "Failed to fetch"))
    launcher = page(extra=dialog("Launcher Error", "Failed to fetch"))
    assert screen_name(kernel) == "Error Starting Kernel"
    assert screen_name(launcher) == "Launcher Error"
    assert key(kernel) != key(launcher)
    assert screen_name(page()) == "Invoices"  # no dialog: the page's heading, as before


def test_a_dialogs_field_labels_and_the_values_under_them_are_no_title() -> None:
    # A filter popover: a row of field labels ("Field" as a span in a <label>, "Operator" as a label element), the
    # fields under them, and the chosen operator "IS" drawn as a span among them: none of these names the dialog.
    def at(path: str, text: str, y: int, **kw: object) -> Element:
        e = el(path, text, **kw)
        return e.model_copy(update={"bbox": BBox(x1=100, y1=y, x2=300, y2=y + 20)})

    form = "body[1]/div[4]/div[1]/form[1]/fieldset[1]"
    popover = (at(f"{form}/label[1]/span[1]", "Field", 135, role="", cls="span"),
               at(f"{form}/label[2]", "Operator", 135, role="label"),
               at(f"{form}/input[1]", "Key", 163, role="textbox", cls="input:text", editable=True),
               at(f"{form}/div[1]/div[1]/span[2]", "IS", 164, role="", cls="span"),
               at(f"{form}/button[1]", "Apply filters", 211, role="button", clickable=True))
    dialog = tuple(e.model_copy(update={"path": e.path.replace("body[1]/div[4]", "body[1]/dialog[1]")})
                   for e in popover)
    assert dialog_title(dialog) == ""
    titled = (at("body[1]/dialog[1]/div[1]/div[1]", "Filter experiments", 100, role="", cls="div"), *dialog)
    assert dialog_title(titled) == "Filter experiments"


def test_the_apps_title_in_front_of_every_heading_is_a_site_title_and_is_left_out_of_names() -> None:
    """An accounting app draws its ledger's name before every page's name in one ``h1`` ("Household accounts 2024
    › Income Statement", the "›" drawn by CSS). The words every screen's heading starts with are the app's title:
    screens are named by what follows, and stay apart."""
    pages = {f"s{i}": (f"http://h/ledger/{n.lower().replace(' ', '_')}/",
                       [el("body[1]/header[1]/h1[1]", f"Household accounts 2024 {n}", role="heading")])
             for i, n in enumerate(["Income Statement", "Balance Sheet", "Journal", "Holdings", "Statistics",
                                    "Help"])}
    g = _graph(pages, [("s0", "click", s) for s in pages if s != "s0"])
    assert "Household accounts 2024" in site_titles_of(g)
    names = screen_names_of(g)
    assert names["s0"] == "Income Statement" and names["s2"] == "Journal"
    assert len(set(screens_of(g).values())) == len(pages)
    # words a few headings share are no title: the longest run on nearly every screen only
    from graph.user_screens import site_prefixes

    heads = [{"Household accounts 2024 Income"}, {"Household accounts 2024 Income Statement"},
             {"Household accounts 2024 Balance Sheet"}, {"Household accounts 2024"}, {"Household accounts 2024 Help"}]
    assert site_prefixes(heads) == frozenset({"Household accounts 2024"})
    assert site_prefixes([{"The Income"}, {"The Balance"}, {"The Help"}, {"The Journal"}, {"The Statistics"}]) \
        == frozenset()  # "The" is too short to be an app's title
    assert site_prefixes(heads[:4]) == frozenset()  # too few screens to tell
    # one page's own words are no title however many of its states a crawl saw: routes count, not states
    tickets = [{f"Ticket #{i} (new defect)" for i in range(1, 30)}, {"Roadmap"}, {"Timeline"}, {"Wiki Start"},
               {"Browse source"}, {"View tickets"}]
    assert site_prefixes(tickets) == frozenset()
    # a heading that is all the same words everywhere is no prefix of names: words must follow it
    assert site_prefixes([{"Account"}, {"Account"}, {"Account settings"}, {"Account"}, {"Account"}]) == frozenset()
