"""Screens as a user counts them: one definition for the explorer, the benchmark, synthesis and the viewer.

The crawler's states (``graph.abstraction``) are deliberately fine: every change a user *might* care about is
another state, so nothing is missed. A person counts screens more coarsely. Asked "which screen is this?", they
say where they are (the route), what the page is about (the main content's heading), and whether something is
open over it (a dialog, a menu). They never say "the start page with a longer breadcrumb trail", "the list
scrolled down", "the form with some letters typed in", "the page with the 'Saved' flash", "the table sorted the
other way" or "the home page showing other random books". So a **screen key** is

* the **route**: the URL path (an SPA's ``#/route`` fragment read as path), with id-like segments as
  placeholders (numbers, UUIDs, hashes, session tokens, ``slug-42`` record names; a word stays a word, since a
  wiki page's name *is* the screen) and, only where the screen has no heading, the query's keys without their
  values (values filter, sort, paginate; with a heading, keys filter what it names too);
* the **heading** of the main content (``screen_name``), normalized (numbers and dates as placeholders);
* the **skeleton**: the landmark-level structure — which landmarks the capture shows, whether the main content
  shows anything beyond its heading (a half-drawn landing does not), whether it holds editable fields (a page and
  its edit form are two screens), and any open dialog (its heading is then the name) or open menu. Element
  texts, counts, order, values and positions are not in it.

Everything is read from general signals only — element tags in the DOM path (``header``, ``nav``, ``main``,
``footer``, ``aside``, ``dialog``), ARIA roles of captured elements (the web capture keeps a ``role="alert"``,
``role="dialog"``, landmark or menu container even without text of its own: ``explorers.web_script``), a modal
layer covering the page (``overlay_root``: the rest of the page is present but not hit-testable) and position in
the DOM — never an app's words. A flash/toast/clock lives in a live region (``alert``, ``status``, ``timer``,
``log``, ``marquee``) and is skipped; a trail lives in a navigation landmark or in the banner, which only count as
present or absent; a site title is a heading on nearly every state (``site_titles``) or a link glued in front of
the heading's words.

**Scroll position.** A capture holds only what is in the viewport, so a page scrolled past its heading shows
another first heading, or none. One capture cannot know it was scrolled, but the graph can: ``screens_of`` puts
the states that a scroll (or a jump to an anchor of the page) joins on one route into one screen, named by the
one the scrolling started from.

Limits: graphs crawled before region containers were captured hold only the tag path, so a banner marked only by
``role="banner"`` on a ``div`` is content there; its screens still split only by heading, dialogs and forms,
never by the banner's texts. An app without landmark tags or roles has its header's search box counted as a
form on every screen, so its edit forms are told apart by route (``?action=edit``) and heading only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from graph.abstraction import _HEXISH, _SESSION_PARAM, _TOKENISH, normalize_text

if TYPE_CHECKING:
    from graph.abstraction import Features
    from graph.reader import AppGraph
    from schemas import Transition

# Landmark tags (HTML-AAM): a header/footer is the page's banner/contentinfo only outside sectioning content.
TAG_REGIONS = {"header": "banner", "nav": "navigation", "main": "main", "footer": "contentinfo",
               "aside": "complementary", "dialog": "dialog", "search": "search"}
SECTIONING = {"article", "aside", "main", "nav", "section"}
# ARIA roles of captured elements that make their subtree a region.
ROLE_REGIONS = {"banner": "banner", "navigation": "navigation", "main": "main", "contentinfo": "contentinfo",
                "complementary": "complementary", "search": "search", "dialog": "dialog",
                "alertdialog": "dialog", "alert": "live", "status": "live", "timer": "live", "log": "live",
                "marquee": "live", "tooltip": "live", "menu": "menu", "listbox": "menu", "menubar": "menubar"}
CHROME = {"banner", "navigation", "contentinfo", "complementary", "search", "menubar"}
MENU_ITEM_ROLES = {"menuitem", "menuitemcheckbox", "menuitemradio", "option"}
FIELD_ROLES = {"textbox", "searchbox", "combobox", "spinbutton", "slider"}
FIELD_CLASS = re.compile(r"^(input(:(text|search|email|number|password|tel|url|date|time|datetime-local|month|"
                         r"week))?|textarea|select)$")
HEADING_TAG = re.compile(r"^h([1-6])$")
_INDEX = re.compile(r"\[\d+\]")
SCROLL_ACTIONS = {"scroll", "swipe"}


@dataclass(frozen=True)
class Part:
    """What the definition reads of one element: role, tag (``class_name``), DOM path, visibility, editability,
    text. Built from live widgets, stored elements, or a crawl's ``Features`` (which lose text and editability)."""

    role: str
    cls: str
    path: str
    visible: bool = True
    editable: bool = False
    text: str = ""
    in_dialog: bool = False
    top: float = 0.0  # the box's top and left edges, where the capture has boxes (a dialog's title is the
    left: float = 0.0  # topmost text in it; captures do not list elements in document order)


def _box(get: Any) -> tuple[float, float]:
    box = get("bbox", None)
    if box is None:
        return 0.0, 0.0
    if isinstance(box, dict):
        return float(box.get("y1", 0) or 0), float(box.get("x1", 0) or 0)
    return float(getattr(box, "y1", 0) or 0), float(getattr(box, "x1", 0) or 0)


def parts_of(elements: Iterable[Any]) -> list[Part]:
    """``Part``s of ``schemas.Element``s, ``graph.screen.Widget``s, or dicts with the same keys (Parquet rows);
    ``Part``s pass through."""
    out = []
    for e in elements:
        if isinstance(e, Part):
            out.append(e)
            continue
        in_dialog = bool(getattr(e, "in_dialog", False))
        e = getattr(e, "element", e)
        get = e.get if isinstance(e, dict) else lambda k, d=None, e=e: getattr(e, k, d)
        out.append(Part(str(get("role", "") or ""), str(get("class_name", "") or ""), str(get("path", "") or ""),
                        bool(get("visible", True)), bool(get("editable", False)), str(get("text", "") or ""),
                        in_dialog, *_box(get)))
    return out


def _tags(path: str) -> list[str]:
    return [seg for seg in _INDEX.sub("", path).split("/") if seg]


OVERLAY_HIDDEN_SHARE = 0.5  # of a capture's elements covered by a modal layer
OVERLAY_MIN_HIDDEN = 3


def overlay_root(parts: Sequence[Part]) -> str:
    """The DOM path of a modal layer covering the page, "" when none: most of the capture's elements are present
    but covered (not hit-testable), and every element still reachable sits in one subtree that holds none of the
    covered ones. That is what an open modal does whatever its markup (a ``div`` with ``role="dialog"`` and no text
    of its own is not in the capture; its contents and the page it covers are)."""
    shown = [p.path for p in parts if p.visible and p.path]
    hidden = [p.path for p in parts if not p.visible and p.path]
    if not shown or len(hidden) < max(OVERLAY_MIN_HIDDEN, OVERLAY_HIDDEN_SHARE * len(parts)):
        return ""
    segs = shown[0].split("/")
    for path in shown[1:]:
        other = path.split("/")
        n = 0
        while n < min(len(segs), len(other)) and segs[n] == other[n]:
            n += 1
        segs = segs[:n]
    if len(shown) > 1 or segs:
        segs = segs[:-1] if len(shown) == 1 else segs  # one control alone: its container is the layer
    root = "/".join(segs)
    if len(segs) < 2 or any(h == root or h.startswith(root + "/") for h in hidden):
        return ""
    return root


def regions(parts: Sequence[Part]) -> list[frozenset[str]]:
    """Per part, the kinds of region it sits in (``main``, ``banner``, ``navigation``, ``dialog``, ``live``,
    ``menu``, …; empty for plain content), from the tags of its DOM path, the roles of captured ancestors and a
    modal layer covering the page (``overlay_root``)."""
    roots = [(p.path, ROLE_REGIONS[p.role]) for p in parts if p.role in ROLE_REGIONS and p.path]
    modal = overlay_root(parts)
    if modal:
        roots.append((modal, "dialog"))
    out = []
    for p in parts:
        kinds: set[str] = set()
        sectioned = False
        for tag in _tags(p.path):
            kind = TAG_REGIONS.get(tag)
            if kind in ("banner", "contentinfo") and sectioned:
                kind = None
            if kind:
                kinds.add(kind)
            sectioned = sectioned or tag in SECTIONING
        for root, kind in roots:
            if p.path == root or p.path.startswith(root + "/"):
                kinds.add(kind)
        if p.role in ROLE_REGIONS:
            kinds.add(ROLE_REGIONS[p.role])
        if p.in_dialog:
            kinds.add("dialog")
        out.append(frozenset(kinds))
    return out


def _in_main(r: frozenset[str], has_main: bool) -> bool:
    """Whether a part of regions ``r`` is main content: inside ``main`` where the page marks one, else outside
    the chrome (banner, navigation, footer, sidebars)."""
    return "main" in r if has_main else not (r & CHROME)


def _level(p: Part) -> int:
    m = HEADING_TAG.match(p.cls.lower())
    return int(m.group(1)) if m else 7


def _clean(text: str) -> str:
    return " ".join(text.split())


TITLE_MARKS = " -|–—·:»›>/"  # what parts a title from the words after it ("Site › Page", "Site: Page")
TITLE_SEPARATORS = re.compile(r"\s+[-|–—·:»/]\s+|\s*::\s*")


def _title_parts(title: str) -> list[str]:
    return [t for t in (_clean(x) for x in TITLE_SEPARATORS.split(title or "")) if t]


def _glued_rest(text: str, prefix: str, glued: bool) -> str:
    """``text`` without ``prefix`` when it starts with it and more follows ("My LedgerBalance Sheet" → "Balance
    Sheet"); with ``glued``, only when no space parts them (a link "Ticket #1" in front of "(new defect)" is part
    of the heading's words); "" otherwise."""
    if not prefix or len(text) <= len(prefix) or not text.startswith(prefix):
        return ""
    rest = text[len(prefix):]
    if glued and rest[:1].isspace():
        return ""
    return rest.lstrip(TITLE_MARKS).strip()


def _own_name(h: Part, parts: Sequence[Part], site: frozenset[str], title: str) -> str:
    """A heading's words without a site title glued in front: the text of a link inside the heading at its start
    (the brand link of ``<h1><a>Ledger</a>Balance Sheet</h1>``), a known site title (``site_titles``) or a
    document-title part."""
    text = _clean(h.text)
    inner = [_clean(p.text) for p in parts if h.path and p.path.startswith(h.path + "/") and p.text]
    candidates = [(p, True) for p in inner] + [(s, False) for s in sorted(site, key=len, reverse=True)]
    for prefix, glued in candidates + [(t, True) for t in _title_parts(title)]:
        rest = _glued_rest(text, prefix, glued)
        if rest:
            return rest
    return text


def _headings(parts: Sequence[Part], regs: Sequence[frozenset[str]], site: frozenset[str],
              title: str) -> tuple[list[str], list[str], list[str], set[str]]:
    """(dialog headings, main-content headings, banner headings), visible ones, in DOM order within each rank, and
    the names read from headings whose whole text is a site title (a brand link glued to a bar's label)."""
    has_main = any("main" in r for r, p in zip(regs, parts, strict=True) if p.visible)
    dialog: list[tuple[int, int, str]] = []
    main: list[tuple[int, int, str]] = []
    banner: list[tuple[int, int, str]] = []
    framed: set[str] = set()
    for i, (p, r) in enumerate(zip(parts, regs, strict=True)):
        if p.role != "heading" or not p.visible or not _clean(p.text):
            continue
        name = _own_name(p, parts, site, title)
        if not name:
            continue
        if _clean(p.text) in site:
            framed.add(name)
        entry = (_level(p), i, name)
        if "dialog" in r:
            dialog.append(entry)
        elif "live" in r or "menu" in r:
            continue
        elif _in_main(r, has_main) and not (r & {"navigation", "complementary"}):
            main.append(entry)
        elif "banner" in r:
            banner.append(entry)
    pick = [[n for _lvl, _i, n in sorted(group)] for group in (dialog, main, banner)]
    return pick[0], pick[1], pick[2], framed


def screen_name(elements: Iterable[Any], title: str = "", site_titles: Iterable[str] = ()) -> str:
    """What a person calls the screen: an open dialog's heading, else the main content's heading (the highest
    level, first in the DOM; never the navigation's, the user menu's or a site title), else a banner heading that
    says more than the site title ("<ledger>Balance Sheet" → "Balance Sheet"), else the document ``title`` without
    the site title; "" when none. ``site_titles``: the app's own title as headings and title parts show it on
    (nearly) every screen (``site_titles_of``); without it, a heading equal to a site title may name a screen."""
    site = frozenset(_clean(s) for s in site_titles if s)
    parts = parts_of(elements)
    regs = regions(parts)
    dialog, main, banner, framed = _headings(parts, regs, site, title)
    if dialog:
        return dialog[0]
    label = _dialog_title(parts, regs)
    if label:
        return label
    for name in [*main, *banner]:  # the main content's own heading, else a banner's that says more than the site
        if name not in site and name not in framed:
            return name
    rest = [t for t in _title_parts(title) if t not in site]
    if rest:  # the document title names the screen better than a heading the whole app repeats
        return rest[0]
    return (main or banner or [""])[0]


# Controls, not a title (fields are ``_is_field``'s).
CONTROL_ROLES = frozenset({"button", "link", "checkbox", "radio", "switch", "tab", "listbox", "label"}
                          | MENU_ITEM_ROLES)
DIALOG_TITLE_CHARS = 80  # longer is the dialog's message, not its title


def dialog_title(elements: Iterable[Any]) -> str:
    """The title of the open dialog of a capture's ``elements`` where it has no heading element (``_dialog_title``);
    "" when none is open or it shows no such text. Synthesis names such a dialog by it too."""
    parts = parts_of(elements)
    return _dialog_title(parts, regions(parts))


def _dialog_title(parts: Sequence[Part], regs: Sequence[frozenset[str]]) -> str:
    """An open dialog's title where it has no heading element: its topmost short text that is no control (many
    dialogs title themselves with a styled ``div``; ``aria-labelledby`` points at it, which a capture does not
    keep). Two different dialogs over one page are two screens, and a person names each by its title.

    A title stands above the dialog's form: a field's label (text inside a ``<label>``) is none, nor is a text
    below the first label or field (a filter popover's "Field", "Operator", "Value" row, and under it the chosen
    operator "IS", named MLflow's filter panels "Field" and "IS"). Without a title, callers name the dialog by
    the control that opened it."""
    inside = [(p, r) for p, r in zip(parts, regs, strict=True) if "dialog" in r and "live" not in r and p.visible]
    form_top = min((p.top for p, _r in inside if p.role == "label" or _is_field(p) or "label" in _tags(p.path)),
                   default=float("inf"))
    texts = [(p.top, p.left, _clean(p.text)) for p, _r in inside
             if p.role not in CONTROL_ROLES and not _is_field(p) and "label" not in _tags(p.path)
             and p.top <= form_top + TITLE_ROW_SLACK and 0 < len(_clean(p.text)) <= DIALOG_TITLE_CHARS]
    return min(texts)[2] if texts else ""


TITLE_ROW_SLACK = 4.0  # px: a title on the row of the first field's label is still above the form


# --- route -------------------------------------------------------------------------------------------------

_SLUG_ID = re.compile(r"^(?P<word>[^\W\d_][\w.]*?)(?P<sep>[-_])\d+$")


def _route_segment(seg: str) -> str:
    """A path segment as the route reads it: numbers, UUIDs/hashes, session and record tokens, and a record's
    ``name-42`` become placeholders; words (a wiki page's name) stay."""
    seg = _SESSION_PARAM.sub("", seg)
    if not seg:
        return seg
    if seg.isdigit():
        return "<n>"
    if _HEXISH.match(seg) and any(ch.isdigit() for ch in seg):
        return "<id>"
    if re.fullmatch(r"[0-9a-f]{7,}", seg) and any(ch.isdigit() for ch in seg) and any(ch.isalpha() for ch in seg):
        return "<id>"
    if _TOKENISH.match(seg) and any(ch.isdigit() for ch in seg) and any(ch.isupper() for ch in seg) \
            and any(ch.islower() for ch in seg):
        return "<id>"
    slug = _SLUG_ID.match(seg)
    if slug:
        return f"{slug.group('word')}{slug.group('sep')}<n>"
    return seg


def _path(path: str) -> str:
    return "/".join(_route_segment(s) for s in path.split("/")) or "/"


def _query_keys(query: str) -> set[str]:
    """The keys a route keeps: every key but those sent with an explicitly empty value (``?q=``: a search form
    submitted blank, a link that carries an empty filter along), which select nothing and show the unfiltered view,
    and those whose value is itself a location (``?returnTo=%2Fgateway``, ``?next=/admin/``): where to go back
    afterwards, which a link carries from whatever page it was drawn on — the same settings screen opened from two
    pages. A bare key (``?h``, ``?edit``) is a mode flag and stays."""
    out = set()
    for item in query.split("&"):
        key, eq, value = item.partition("=")
        said = unquote(value.replace("+", " "))
        if key and not (eq and not value) and not said.startswith("/") and "://" not in said:
            out.add(unquote(key.replace("+", " ")))
    return out


def hash_route(fragment: str) -> str | None:
    """The path a single-page app's router keeps in a URL fragment (``#/notes/7``, ``#!/x``, ``#flow/tab1`` →
    ``/notes/7``, ``/x``, ``/flow/tab1``), or None for an anchor (``#section``), a scroll position of its page. A
    fragment with a slash is a route however it starts: no element id a page scrolls to has one."""
    path = fragment.partition("?")[0]
    if not (path.startswith(("/", "!/")) or "/" in path):
        return None
    return "/" + path.lstrip("!").lstrip("/")


def route(location: str) -> str:
    """The route of a URL: no scheme, host or port; the path's id-like segments as placeholders; an SPA's hash
    route (``#/notes/7``, ``#!/x``, and ``#flow/tab1``: a fragment with a slash in it, which no element id a page
    scrolls to has) read as more path; the query's keys, sorted, without values (a value filters, sorts or pages
    through the same screen; a key such as ``action`` that opens another mode stays). An anchor (``#section``) is
    a scroll position, not a route. Android activities are returned as they are."""
    if "://" not in location:
        return location
    parts = urlsplit(location)
    out = _path(parts.path)
    keys = _query_keys(parts.query)
    frag = parts.fragment
    hashed = hash_route(frag)
    if hashed is not None:
        out = out.rstrip("/") + "#" + _path(hashed)
        keys |= _query_keys(frag.partition("?")[2])
    return out + ("?" + "&".join(sorted(keys)) if keys else "")


# --- skeleton and key --------------------------------------------------------------------------------------


def _is_field(p: Part) -> bool:
    return p.editable or p.role in FIELD_ROLES or bool(FIELD_CLASS.match(p.cls.lower()))


def skeleton(parts: Sequence[Part], regs: Sequence[frozenset[str]] | None = None) -> tuple[str, ...]:
    """The landmark-level structure: landmarks present, ``content`` when the main content shows more than its
    heading, ``form`` when it holds editable fields, ``dialog`` when one is open, ``menu:<path>`` per open menu
    (where its items sit). Live regions (flashes, toasts, clocks) and texts never count."""
    regs = regions(parts) if regs is None else regs
    has_main = any("main" in r for r, p in zip(regs, parts, strict=True) if p.visible)
    out: set[str] = set()
    for p, r in zip(parts, regs, strict=True):
        if not p.visible or "live" in r:
            continue
        out.update(k for k in r if k in CHROME or k == "main")
        if "dialog" in r:
            out.add("dialog")
            continue
        if p.role in MENU_ITEM_ROLES or "menu" in r:
            if "menubar" not in r:
                out.add("menu:" + "/".join(_tags(p.path)[:-1]))
            continue
        if not _in_main(r, has_main):
            continue
        if _is_field(p):
            out.add("form")
        elif p.role != "heading":
            out.add("content")
    return tuple(sorted(out))


@dataclass(frozen=True)
class ScreenKey:
    route: str
    heading: str
    skeleton: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.route} | {self.heading} | {','.join(self.skeleton)}"


def heading_key(name: str) -> str:
    """A screen name as the key compares it: numbers and dates as placeholders, case folded."""
    return normalize_text(name).casefold()


def screen_key(location: str, elements: Iterable[Any], title: str = "",
               site_titles: Iterable[str] = ()) -> ScreenKey:
    """The capture's screen: route + main heading + skeleton (module docstring)."""
    parts = parts_of(elements)
    head = heading_key(screen_name(parts, title, site_titles))
    return ScreenKey(_keyed_route(location, head), head, skeleton(parts))


def _keyed_route(location: str, heading: str) -> str:
    """The route as a screen key holds it: with a heading, the path alone — the query's keys then only filter,
    search or page through what the heading names (a ledger's "Query" with ``?time`` and with
    ``?filter&query_string`` is one screen), and a key that opens another mode (``?action=edit``) brings its own
    heading or form; without one, the keys are all that tell two views of a path apart."""
    full = route(location)
    if not heading or "?" not in full:
        return full
    path, _, _keys = full.partition("?")
    return path


def features_key(f: Features, heading: str) -> ScreenKey:
    """The screen of a crawl's ``Features`` (which keep roles, tags, index-free paths and visibility, not texts)
    with its heading read from the capture (``heading_key`` of ``screen_name``)."""
    parts = []
    for item in f.structure[1:]:
        repeated = item.startswith("*")
        body, _, vis = item.removeprefix("*").rpartition("|")
        role, cls, _rest = [*body.split("|", 2), "", ""][:3]
        last = body.rpartition("|")[2]
        parts.append(Part(role, cls, last if repeated else last.rpartition("#")[0], vis == "v"))
    return ScreenKey(_keyed_route(f.raw_location or f.location, heading), heading, skeleton(parts))


# --- graphs ------------------------------------------------------------------------------------------------

SITE_TITLE_SHARE = 0.8  # of an app's states
SITE_TITLE_MIN_STATES = 5


def site_titles(screens: Iterable[tuple[Any, ...]]) -> frozenset[str]:
    """The app's own title: the headings and document-title parts (``Page - Site``) shown on (nearly) every one
    of ``screens`` (each its elements, its document title, "" where unknown, and optionally its location), and
    the words that start the headings of (nearly) every route (``site_prefixes``, where locations are given).
    They name the app, never a screen (a sidebar's "My Wiki" on every page; "Household accounts 2024" in front
    of every page's name)."""
    counts: Counter[str] = Counter()
    by_route: dict[str, set[str]] = {}
    n = 0
    for elements, title, *where in screens:
        n += 1
        said = {_clean(p.text) for p in parts_of(elements) if p.role == "heading" and p.visible and _clean(p.text)}
        if where and where[0]:
            by_route.setdefault(route(where[0]), set()).update(said)
        parts = _title_parts(title)
        said.update(parts if len(parts) > 1 else [])
        counts.update(said)
    if n < SITE_TITLE_MIN_STATES:
        return frozenset()
    return frozenset(h for h, c in counts.items() if c >= SITE_TITLE_SHARE * n) | site_prefixes(by_route.values())


SITE_PREFIX_MIN_CHARS = 6  # "The", "My" start many headings by chance; an app's title is longer
SITE_PREFIX_MIN_NAMES = 3  # different words must follow it: a title in front of names, not one page's words


def site_prefixes(routes: Iterable[Iterable[str]], share: float = SITE_TITLE_SHARE) -> frozenset[str]:
    """The words that start a heading — with more words after them — on (nearly) every route (``share`` of
    ``routes``, each the heading texts of one route's screens), the longest such run: an app's title drawn in
    front of every page's name, apart from it only by CSS ("Household accounts 2024 › Income Statement", "… ›
    Balance Sheet"). Left in, every screen's name starts with the app's and the page's own words come last.

    Counted per route, not per screen, so one page with many states (a tracker's tickets, "Ticket #1 …",
    "Ticket #2 …") cannot make its own words a title; at least ``SITE_PREFIX_MIN_NAMES`` different words must
    follow it; fewer than ``SITE_TITLE_MIN_STATES`` routes give none."""
    heads = [set(r) for r in routes]
    if len(heads) < SITE_TITLE_MIN_STATES:
        return frozenset()
    counts: Counter[str] = Counter()
    follow: dict[str, set[str]] = {}
    for texts in heads:
        starts: set[str] = set()
        for text in texts:
            words = text.split()
            for k in range(1, len(words)):  # proper prefixes: the page's own words follow
                prefix = " ".join(words[:k])
                if len(prefix) >= SITE_PREFIX_MIN_CHARS:
                    starts.add(prefix)
                    follow.setdefault(prefix, set()).add(words[k])
        counts.update(starts)
    common = {p for p, c in counts.items()
              if c >= share * len(heads) and len(follow.get(p, ())) >= SITE_PREFIX_MIN_NAMES}
    # the longest run: a shorter prefix goes when a longer one starts the headings of as many routes
    return frozenset(p for p in common if not any(q.startswith(p + " ") and counts[q] == counts[p] for q in common))


def site_titles_of(graph: AppGraph) -> frozenset[str]:
    """``site_titles`` of a graph's states (their first captures), computed once per graph (``AppGraph.derived``)."""
    cached = graph.derived.get("user_screens.site_titles")
    if isinstance(cached, frozenset):
        return cached
    reps = [o for o in (graph.representative(s) for s in graph.states) if o is not None]
    out = site_titles((o.elements, "", o.location) for o in reps) | chrome_headings_of(graph)
    graph.derived["user_screens.site_titles"] = out
    return out


def chrome_headings_of(graph: AppGraph) -> frozenset[str]:
    """``chrome_headings`` of a graph's states (their first captures), computed once per graph."""
    cached = graph.derived.get("user_screens.chrome_headings")
    if isinstance(cached, frozenset):
        return cached
    reps = [o for o in (graph.representative(s) for s in graph.states) if o is not None]
    out = chrome_headings((o.location, o.elements) for o in reps)
    graph.derived["user_screens.chrome_headings"] = out
    return out


CHROME_HEADING_ROUTES = 3  # distinct routes a heading must be seen on
CHROME_HEADING_SHARE = 0.3  # of the captures


def chrome_headings(captures: Iterable[tuple[str, Iterable[Any]]]) -> frozenset[str]:
    """Headings that belong to the app's frame, not to a screen: the same words heading captures of several
    different routes (``route``) and a good share of all captures — a file manager's "prev/up/next" bar over every
    folder, a panel title every page repeats. A heading that is a screen's own name is on one route (a record's
    page, whose ids the route abstracts) or on few captures. Read, like ``site_titles``, over one app's graph."""
    routes: dict[str, set[str]] = {}
    shown: Counter[str] = Counter()
    n = 0
    for location, elements in captures:
        n += 1
        r = route(location)
        texts = {_clean(p.text) for p in parts_of(elements) if p.role == "heading" and p.visible} - {""}
        shown.update(texts)
        for text in texts:
            routes.setdefault(text, set()).add(r)
    if n < SITE_TITLE_MIN_STATES:
        return frozenset()
    return frozenset(h for h, rs in routes.items()
                     if len(rs) >= CHROME_HEADING_ROUTES and shown[h] >= CHROME_HEADING_SHARE * n)


def screens_of(graph: AppGraph) -> dict[str, str]:
    """Each state of ``graph`` → its screen key (``str(ScreenKey)``): states a user would call one screen share
    a key. Reads each state's first capture; states joined by a scroll on one route are one screen, keyed by the
    state the scrolling started from (a capture holds only the viewport: scrolled past its heading, it shows
    another one or none). Synthesis and route planning group states with it; the key is readable
    (``route | heading | skeleton``) but opaque to them. Computed once per graph (``AppGraph.derived``)."""
    keys, top = _screens(graph)
    return {s: str(keys[t]) for s, t in top.items()}


def screen_names_of(graph: AppGraph, titles: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each state → its screen's name (``screen_name`` of the state its screen is keyed by, the graph's site
    titles left out): what the viewer captions and the benchmark's ``distinct_name_ratio`` counts. ``titles``:
    the states' document titles where known (the crawl's ``nodes.parquet``; observations do not hold them), the
    fallback for a screen with no heading."""
    _keys, top = _screens(graph)
    titles = titles or {}
    site = site_titles_of(graph)
    if titles:
        reps = [(s, graph.representative(s)) for s in graph.states]
        site |= site_titles((o.elements, titles.get(s, ""), o.location) for s, o in reps if o is not None)
    names: dict[str, str] = {}
    for t in set(top.values()):
        obs = graph.representative(t)
        names[t] = screen_name(obs.elements, titles.get(t, ""), site_titles=site) if obs is not None else ""
    return {s: names[t] for s, t in top.items()}


def _screens(graph: AppGraph) -> tuple[dict[str, ScreenKey], dict[str, str]]:
    """(state → its own capture's key, state → the state that keys its screen)."""
    cached = graph.derived.get("user_screens.screens")
    if isinstance(cached, tuple):
        return cached
    site = site_titles_of(graph)
    keys: dict[str, ScreenKey] = {}
    routes: dict[str, str] = {}  # the full route (query keys kept): a scroll stays on its URL, heading or not
    for state in graph.states:
        obs = graph.representative(state)
        if obs is not None:
            keys[state] = screen_key(obs.location, obs.elements, site_titles=site)
            routes[state] = route(obs.location)
    parent = {s: s for s in keys}

    def find(s: str) -> str:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    scrolled_into: set[str] = set()
    for t in graph.transitions:
        if t.error or t.from_state == t.to_state or not _scrolls(graph, t):
            continue
        a, b = t.from_state, t.to_state
        if a in keys and b in keys and routes[a] == routes[b]:
            scrolled_into.add(b)
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra
    order = {s: i for i, s in enumerate(_discovery_order(graph))}
    members: dict[str, list[str]] = {}
    for s in keys:
        members.setdefault(find(s), []).append(s)
    top: dict[str, str] = {}
    for group in members.values():
        heads = [s for s in group if s not in scrolled_into] or group
        head = min(heads, key=lambda s: (order.get(s, len(order)), s))
        top.update((s, head) for s in group)
    graph.derived["user_screens.screens"] = (keys, top)
    return keys, top


def _scrolls(graph: AppGraph, t: Transition) -> bool:
    """Whether a transition only moved the viewport: a scroll or swipe, or a jump to an anchor of the page it was
    on (a table of contents' ``#section`` link; ``route`` reads an anchor as no part of the route)."""
    if str(t.action.type) in SCROLL_ACTIONS:
        return True
    after = graph.observations.get(t.to_observation_id)
    before = graph.observations.get(t.from_observation_id)
    if after is None or before is None or "#" not in after.location:
        return False
    anchor = unquote(urlsplit(after.location).fragment)
    if not anchor or after.location == before.location:
        return False
    # The page holds an element of that id: a jump within it. A fragment that names no element is an app's own
    # route (a single-page wiki's ``#SomeTiddler`` permalink), whatever it looks like.
    return any(e.resource_id == anchor for o in (after, before) for e in o.elements)


def _discovery_order(graph: AppGraph) -> list[str]:
    seen: dict[str, None] = {}
    if graph.entry:
        seen[graph.entry] = None
    for t in graph.transitions:
        seen.setdefault(t.from_state, None)
        seen.setdefault(t.to_state, None)
    return list(seen)
