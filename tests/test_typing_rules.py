"""Typing that leads somewhere, error pages, and the greedy policy's content rules: each rule both ways.

From crawls of apps nobody tuned the explorer for: an accounting UI's time, account and filter boxes got note-like
filler ("Garden plans") and half its states were junk URLs or its error page; a wiki's search box got the same word
~50 times, mostly never submitted; another wiki's long page was scrolled 19 times in a row. Fast tier: the filler,
the error-page verdict and ``GreedyPolicy.choose`` on hand-built screens and a real ``Graph``; the browser test is
tests/test_typing_crawl.py, the effect on real apps ``benchmarks/bench_explore.py`` (``error_state_rate``).
"""

from __future__ import annotations

from explorers.candidates import Candidate, candidates
from explorers.error_pages import error_page
from explorers.forms import MAX_QUERIES, FormFiller, is_search_box, queries
from explorers.graph import Graph
from explorers.policy import SCROLL_DRY_LIMIT, GreedyPolicy, is_variant_family
from explorers.steps import LoggedObservation
from graph.abstraction import StateTable, features
from graph.screen import Screen, Widget
from schemas import Action, ActionType, BBox, Element, Platform


def _w(path: str, text: str = "", role: str = "link", editable: bool = False, **kw: object) -> Widget:
    el = Element(id=path, role=role, text=text, path=path, bbox=BBox(x1=0, y1=0, x2=100, y2=40),
                 clickable=not editable and role not in ("text", "heading"), editable=editable)
    return Widget(element=el, **kw)  # type: ignore[arg-type]


def _field(path: str, name: str, label: str = "", **kw: object) -> Widget:
    kw.setdefault("tag", "input")
    return _w(path, label, role="textbox", editable=True, input_name=name, **kw)


def _screen(url: str, *widgets: Widget, title: str = "", status: int = 0) -> Screen:
    return Screen(Platform.WEB, url, 400, 800, 1.0, list(widgets), b"", title=title, http_status=status)


# --- search boxes ---------------------------------------------------------------------------------------------
def test_search_boxes_are_told_from_filters_by_type_role_name_and_form() -> None:
    lone = _field("main/form/input[1]", "x", form_action="http://a/find", form_method="get")
    page = _screen("http://a/", lone)
    assert is_search_box(_field("h/input", "x", input_type="search"))
    assert is_search_box(_w("h/input", "", role="searchbox", editable=True, tag="input"))
    assert is_search_box(_field("h/input", "q"))
    assert is_search_box(lone, page)  # the only text field of a GET form
    # ... but not one of two fields of a GET filter form, a field with a datalist, nor a POST form's field
    other = _field("main/form/input[2]", "y", form_action="http://a/find", form_method="get")
    assert not is_search_box(lone, _screen("http://a/", lone, other))
    assert not is_search_box(_field("h/input", "account", suggestions=["Assets:Cash", "Assets:Bank"]))
    post = _field("main/form/input[1]", "x", form_action="http://a/new", form_method="post")
    assert not is_search_box(post, _screen("http://a/", post))


def test_queries_come_from_listed_items_not_the_chrome() -> None:
    box = _field("header[1]/input[1]", "q", input_type="search")
    filler = FormFiller()
    # three screens of the same app: the navigation's and the title's words are on every one of them
    for i, item in enumerate(("Volcanoes", "Glaciers", "Deserts", "Canyons")):
        filler.see(_screen(f"http://a/p{i}", _w("nav[1]/a[1]", "Atlas"), _w("div[1]/a[1]", "Gazetteer", href="http://a/g"),
                           _w(f"main[1]/ul[1]/li[{i + 1}]/a[1]", f"{item} overview"), title="Atlas Gazetteer"))
    results = _screen("http://a/list", box, _w("nav[1]/a[1]", "Atlas"), _w("div[1]/a[1]", "Gazetteer", href="http://a/g"),
                      _w("main[1]/p[1]", "Tundra is mentioned once", role="text"),
                      _w("main[1]/ul[1]/li[1]/a[1]", "Rivers of Europe"), title="Atlas Gazetteer")
    got = queries(results, box, filler.vocab)
    assert got[0] == "rivers"  # a listed item first
    assert "atlas" not in [q.lower() for q in got] and "gazetteer" not in [q.lower() for q in got]
    # without the chrome's record, the site's words would be offered
    assert "Gazetteer".lower() in [q.lower() for q in queries(results, box)]


def test_a_query_is_typed_once_submitted_with_enter_and_the_box_left_after_a_few() -> None:
    box = _field("header[1]/input[1]", "q", input_type="search")
    filler = FormFiller()
    items = ("Volcanoes", "Glaciers", "Deserts", "Forests", "Oceans")
    seen = []
    for i in range(MAX_QUERIES + 1):
        page = _screen(f"http://a/p{i}", box, *[_w(f"main[1]/ul[1]/li[{j}]/a[1]", t) for j, t in enumerate(items, 1)])
        cands = candidates(page, filler)
        typing = [c for c in cands if c.type is ActionType.TYPE]
        assert not any(c.type is ActionType.KEY for c in cands)  # nothing typed yet: no Enter to press
        if i == MAX_QUERIES:
            assert typing == []  # searched enough: the box is left alone
            break
        q = typing[0].action.text or ""
        assert q.lower() not in seen  # each query once
        seen.append(q.lower())
        filler.typed(box, q)
        typed = Widget(element=box.element, tag="input", input_type="search", input_name="q", value=q)
        after = candidates(_screen(f"http://a/p{i}", typed), filler)
        enter = [c for c in after if c.type is ActionType.KEY]
        assert len(enter) == 1 and enter[0].action.key == "enter" and enter[0].target_key == typing[0].target_key
        filler.submitted(box)
        assert not any(c.type is ActionType.KEY for c in candidates(_screen(f"http://a/p{i}", typed), filler))
    assert seen == ["volcanoes", "glaciers", "deserts"]


# --- other fields -----------------------------------------------------------------------------------------------
def test_note_like_text_only_goes_into_free_text_fields() -> None:
    filler = FormFiller()
    account = _field("header/input[2]", "account", "Account")
    time = _field("header/input[3]", "time", "Time")
    assert filler.value_for(account, _screen("http://a/", account)) == ""  # a filter bar's box: left alone
    assert filler.value_for(time, _screen("http://a/", time)) in ("", "09:30", "10:30", "11:30", "12:30",
                                                                     "13:30", "14:30", "15:30", "16:30")
    title = _field("main/form/input[1]", "title", "Title", form_action="http://a/new", form_method="post")
    assert len(filler.value_for(title, _screen("http://a/", title)).split()) >= 2  # a title, where titles go
    memo = _field("main/form/textarea[1]", "x", tag="textarea", form_action="http://a/new", form_method="post")
    assert filler.value_for(memo, _screen("http://a/", memo)).endswith(".")
    unnamed = _field("main/form/input[2]", "field_7", form_action="http://a/new", form_method="post")
    assert filler.value_for(unnamed, _screen("http://a/", unnamed))  # a writing form's plain field is filled
    assert filler.value_for(_field("h/input", "field_7"), _screen("http://a/")) == ""  # a formless one is not


def test_fields_get_their_own_options_and_placeholder_formats() -> None:
    filler = FormFiller()
    account = _field("header/input[2]", "account", suggestions=["Assets:Cash", "Expenses:Food"])
    assert filler.value_for(account, _screen("http://a/", account)) in ("Assets:Cash", "Expenses:Food")
    when = _field("main/form/input[1]", "from", placeholder="dd.mm.yyyy", form_action="http://a/f", form_method="get")
    v = filler.value_for(when, _screen("http://a/", when))
    assert len(v) == 10 and v[2] == v[5] == "." and v[6:].isdigit()
    iso = _field("main/form/input[2]", "start", placeholder="YYYY-MM-DD", form_action="http://a/f", form_method="get")
    assert filler.value_for(iso, _screen("http://a/", iso))[4] == "-"
    price = _field("main/form/input[3]", "limit", placeholder="0.00", form_action="http://a/f", form_method="get")
    assert "." in filler.value_for(price, _screen("http://a/", price))


def test_a_value_that_reached_an_error_page_is_not_typed_there_again() -> None:
    filler = FormFiller()
    day = _field("main/form/input[1]", "day", placeholder="YYYY-MM-DD", form_action="http://a/f", form_method="get")
    page = _screen("http://a/", day)
    v = filler.value_for(day, page)
    filler.typed(day, v)
    filler.page_shown(error=False)  # a good page after it: the value is fine
    assert filler.value_for(day, page) == v
    filler.typed(day, v)
    filler.page_shown(error=True)  # the submit showed the error page
    assert filler.value_for(day, page) == ""
    assert not [c for c in candidates(page, filler) if c.type is ActionType.TYPE]
    # a search query that reached an error page gives way to the next query
    box = _field("h/input", "q", input_type="search")
    results = _screen("http://a/s", box, _w("main/ul/li[1]/a", "Volcanoes"), _w("main/ul/li[2]/a", "Glaciers"))
    first = filler.value_for(box, results)
    filler.typed(box, first)
    filler.page_shown(error=True)
    assert filler.value_for(box, results) not in ("", first)


# --- error pages --------------------------------------------------------------------------------------------
def test_error_pages_by_status_reason_phrase_or_stack_trace_and_ordinary_pages_not() -> None:
    assert error_page(_screen("http://a/x", status=400)) == "http 400"
    assert error_page(_screen("http://a/x", status=503)) == "http 503"
    assert error_page(_screen("http://a/x", title="404 Not Found - My Ledger", status=200)).startswith("title")
    assert error_page(_screen("http://a/x", _w("main/h1", "Internal Server Error", role="heading")))
    trace = _w("main/pre", "Traceback (most recent call last):\n  File \"app.py\", line 3", role="text")
    assert error_page(_screen("http://a/x", trace)) == "stack trace"
    for ok in (_screen("http://a/x", status=200, title="Lost and found - Shop"),
               _screen("http://a/x", _w("main/h1", "Books not found in your basket? Browse", role="heading")),
               _screen("http://a/x", _w("main/h1", "Gone with the Wind, a review", role="heading"), title="Books")):
        assert error_page(ok) == "", ok.title


def test_the_verdict_is_kept_in_the_log_and_absent_when_there_is_none() -> None:
    f = features(_screen("http://a/x"), False)
    bad = LoggedObservation("s1", {"id": "o1"}, f, (), "t", False, "http 400")
    assert LoggedObservation.from_json(bad.to_json()).error_page == "http 400"
    good = LoggedObservation("s2", {"id": "o2"}, f)
    assert "error_page" not in good.to_json() and LoggedObservation.from_json(good.to_json()).error_page == ""


# --- the policy ---------------------------------------------------------------------------------------------
class World:
    def __init__(self) -> None:
        self.table = StateTable("app")
        self.graph = Graph(canonical=self.table.canonical)
        self.filler = FormFiller()

    def see(self, screen: Screen, error: str = "") -> tuple[str, list[Candidate]]:
        sid = self.table.assign(features(screen, False))[0]
        self.graph.state(sid).location = screen.location
        self.graph.state(sid).error_page = error
        cands = candidates(screen, self.filler, with_back=False)
        for c in cands:
            self.graph.offer(sid, c.key, c.group, c.target_key, c.action)
        return sid, cands


def _scroll_page(w: World, rows: range, extra: str = "") -> tuple[str, list[Candidate]]:
    links = [_w(f"main/div[{i}]/p/a[{i}]" if extra else f"main/p[{i}]/a", f"Row {i}", href=f"http://a/r{i}")
             for i in rows]
    return w.see(Screen(Platform.WEB, "http://a/long", 400, 800, 1.0, links, b"", scroll_y=float(rows.start * 40),
                        scroll_height=100000.0))


def test_scrolling_stops_once_a_scroll_shows_nothing_new_after_one_more_try() -> None:
    w, p = World(), GreedyPolicy()
    sid, cands = _scroll_page(w, range(1, 5))
    for c in cands:  # the page's own links are tried first
        if c.type is not ActionType.SCROLL:
            w.graph.record(sid, c.key, sid, False)
    scrolls = 0
    for n in range(1, 10):
        d = p.choose(w.graph, sid, cands)
        if d.candidate is None or d.candidate.type is not ActionType.SCROLL:
            break
        scrolls += 1
        # every scroll shows four more rows of the same list: no element kind the page had not shown
        nxt, nxt_c = _scroll_page(w, range(1 + 4 * n, 5 + 4 * n))
        w.graph.record(sid, d.candidate.key, nxt, True)
        for c in nxt_c:
            if c.type is not ActionType.SCROLL:
                w.graph.record(nxt, c.key, nxt, False)
        sid, cands = nxt, nxt_c
    assert scrolls == SCROLL_DRY_LIMIT, scrolls
    assert p.learned.scroll_dry[p._family(w.graph, sid)] >= SCROLL_DRY_LIMIT
    scroll = next(c for c in cands if c.type is ActionType.SCROLL)
    assert p._score(w.graph, sid, scroll.key)[1] == "scroll-dry"


def test_a_scroll_that_shows_new_kinds_of_elements_keeps_the_page_worth_scrolling() -> None:
    w, p = World(), GreedyPolicy()
    sid, cands = _scroll_page(w, range(1, 3))
    p.choose(w.graph, sid, cands)
    p._last_class, p._last_context = "scroll", p._family(w.graph, sid)
    nxt, _ = _scroll_page(w, range(3, 5), extra="new section")  # other elements, not rows of the same list
    assert p._found_content(w.graph, nxt)
    assert p.learned.scroll_dry.get(p._family(w.graph, sid), 0) == 0


def test_typing_that_only_changed_a_value_finds_nothing_and_its_query_is_submitted_next() -> None:
    w, p = World(), GreedyPolicy()
    box = _field("header/input[1]", "q", input_type="search")
    items = [_w(f"main/ul/li[{i}]/a", t, href=f"http://a/item/{i}") for i, t in enumerate(("Volcanoes", "Rivers"), 1)]
    sid, cands = w.see(_screen("http://a/", box, *items))
    for c in cands:
        if c.type is not ActionType.TYPE:
            w.graph.record(sid, c.key, sid, True)  # the links are explored: typing is what is left
    d = p.choose(w.graph, sid, cands)
    assert d.candidate is not None and d.candidate.type is ActionType.TYPE, d
    query = d.candidate.action.text or ""
    w.filler.typed(box, query)
    typed = Widget(element=box.element, tag="input", input_type="search", input_name="q", value=query)
    nxt, nxt_c = w.see(_screen("http://a/", typed, *items, _w("main/p", "3 suggestions", role="text")))
    w.graph.record(sid, d.candidate.key, nxt, True)
    d = p.choose(w.graph, nxt, nxt_c)
    assert d.candidate is not None and d.candidate.type is ActionType.KEY and "submit the query" in d.reason, d
    assert p.learned.tries.get("type", 0) == 0  # the typing itself is judged by its submit
    # the submit showed a result list with an item the app had not shown: "type" is credited with it
    res, _ = w.see(_screen("http://a/search?q=" + query, typed, _w("main/ul/li[1]/a", "Volcanoes of Iceland",
                                                                    href="http://a/item/9")))
    w.graph.record(nxt, d.candidate.key, res, True)
    p.choose(w.graph, res, [])
    assert p.learned.tries["type"] == 1 and p.learned.hits["type"] == 1.0


def test_a_type_into_a_plain_field_that_changed_only_its_value_earns_nothing() -> None:
    w, p = World(), GreedyPolicy()
    title = _field("main/form/input[1]", "title", "Title", form_action="http://a/new", form_method="post")
    sid, cands = w.see(_screen("http://a/new", title, _w("main/form/button", "Save", role="button", tag="button",
                                                         form_action="http://a/new", form_method="post")))
    save = next(c for c in cands if c.type is ActionType.CLICK)
    w.graph.record(sid, save.key, sid, False)
    d = p.choose(w.graph, sid, cands)
    assert d.candidate is not None and d.candidate.type is ActionType.TYPE
    # the abstraction split the screen (a character counter appeared), but no new element: nothing found
    nxt, _ = w.see(_screen("http://a/new", title, _w("main/form/button", "Save", role="button", tag="button",
                                                     form_action="http://a/new", form_method="post"),
                           _w("main/form/small", "11/80", role="text")))
    w.graph.record(sid, d.candidate.key, nxt, True)
    p.choose(w.graph, nxt, [])
    assert p.learned.tries["type"] == 1 and p.learned.hits["type"] == 0


def test_an_error_page_is_no_discovery() -> None:
    w, p = World(), GreedyPolicy()
    sid, cands = w.see(_screen("http://a/", _w("main/a[1]", "Report", href="http://a/report")))
    d = p.choose(w.graph, sid, cands)
    err, _ = w.see(_screen("http://a/report", _w("main/h1", "Bad Request", role="heading")), error="http 400")
    w.graph.record(sid, d.candidate.key if d.candidate else "", err, True)
    p.choose(w.graph, err, [])
    assert p.learned.hits["link-new-url"] == 0


def test_a_sort_or_language_menu_is_one_small_family_and_rows_are_not() -> None:
    assert is_variant_family({"http://a/list?sort=name", "http://a/list?sort=date", "http://a/list?sort=size"})
    assert is_variant_family({"http://a/en/about", "http://a/de/about", "http://a/pt-BR/about"})
    assert not is_variant_family({"http://a/item?id=1", "http://a/item?id=2"})  # records
    assert not is_variant_family({"http://a/list?page=2", "http://a/list?page=3"})  # pages
    assert not is_variant_family({"http://a/#Alpha", "http://a/#Beta"})  # anchors that may open things
    assert not is_variant_family({"http://a/notes", "http://a/tags"})
    w, p = World(), GreedyPolicy()

    def listing(order: str) -> tuple[str, list[Candidate]]:
        menu = [_w(f"main/ul/li[{i}]/a", k.title(), href=f"http://a/list?sort={k}")
                for i, k in enumerate(("name", "date", "size", "owner", "kind", "tag"), 1)]
        return w.see(_screen(f"http://a/list?sort={order}", *menu, _w("main/h1", f"By {order}", role="heading")))

    sid, cands = listing("name")
    orders = set()
    for _ in range(8):
        d = p.choose(w.graph, sid, cands)
        if d.kind != "act" or d.candidate is None or d.candidate.widget is None:
            break
        order = d.candidate.widget.href.rsplit("=", 1)[1]
        orders.add(order)
        sid2, cands2 = listing(order)
        w.graph.record(sid, d.candidate.key, sid2, True)
        sid, cands = sid2, cands2
    assert 2 <= len(orders) <= 3, orders  # the menu tried once or twice, not each of its six orders
    entry = next(c for c in cands if c.widget is not None and c.widget.href.endswith("sort=tag"))
    assert p._score(w.graph, sid, entry.key)[1] == "menu-seen"


def test_enter_is_pressed_at_the_box_it_belongs_to() -> None:
    a = Action(type=ActionType.KEY, key="enter", x=5, y=5, image_width=10, image_height=10)
    assert a.key == "enter" and a.x == 5
