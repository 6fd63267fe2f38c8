"""What a captured screen says to a person: its name, its visible texts, and stable names for its elements.

Synthesis writes text a user could have written, so it may only use what a user sees: a screen is named by its
heading (or the label of the control that opened it), never by a URL segment; a radio option is named with its
group's legend. Element ids from the explorers include the DOM path, so the same note link gets another id when
the list above it grows; ``element_key`` is the identity that survives that (role, resource id, label), and
``find_element`` resolves it on another capture of the same screen — how actions recorded on one capture are
re-anchored on another without landing on a different list item.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlparse

from graph.user_screens import TITLE_MARKS, dialog_title, hash_route, route, site_prefixes
from pipelines.synthesis.injection import looks_like_injection
from schemas import Element, Observation

MAX_TEXT_CHARS = 80
MAX_NAME_WORDS = 10  # "Changes between Version 1 and Version 2 of WikiStart" is a page title; a sentence is not
HEADING_ROLES = {"heading"}
DIALOG_ROLES = {"dialog", "alertdialog"}
CAPTION_ROLES = {"legend"}  # names a screen only where it has no heading
GROUP_LABEL_ROLES = {"legend", "group", "radiogroup"}
CHOICE_ROLES = {"radio", "checkbox", "switch", "option", "menuitemradio", "menuitemcheckbox"}
BOX_ROLES = {"checkbox", "switch", "menuitemcheckbox"}  # choices that are on or off: ticked or cleared, not picked
TEXT_ROLES = {"paragraph", "text", "statictext", "", "generic", "cell", "listitem", "article", "region"}
GLOSS_RE = re.compile(r"^(?P<native>.+?)\s*[(（](?P<gloss>[^()（）]+)[)）]\s*$")
CJK_RE = re.compile(r"[\u4e00-\u9fff]")
CLOCK_RE = re.compile(r"^\d{1,2}:\d{2}(:\d{2})?$")

ElementKey = tuple[str, str, str]


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# The caption of a page's table of contents box (Trac's ``[[PageOutline]]``, MediaWiki's "Contents"): it names
# the box, never the screen, though it often comes first in document order.
CONTENTS_HEADING = re.compile(r"^\W*(table of contents|contents|on this page|in this article|inhalt|"
                              r"inhaltsverzeichnis|sommaire|table des matières|contenido|índice|目录|目錄)\W*$",
                              re.IGNORECASE)


def usable_name(text: str) -> bool:
    text = " ".join(text.split())
    return (bool(text) and len(text.split()) <= MAX_NAME_WORDS and not CONTENTS_HEADING.match(text)
            and not looks_like_injection(text))


# A heading that reports a count of results ("30 rows sorted by id descending", "3 matches") describes the
# result of a query, it names no screen; a count appended to a name ("Custom SQL query returning 8 rows",
# "Custom Query (3 matches)") is cut off.
COUNTED = r"\d[\d,.]*\s+(rows?|results?|items?|entries|entry|records?|matches|match|hits?|tickets?)\b"
RESULT_COUNT = re.compile(rf"^\W*{COUNTED}", re.IGNORECASE)
COUNT_TAIL = re.compile(rf"\s*(\(\s*{COUNTED}[^()]*\)|\s(returning|showing|with)\s+{COUNTED}.*)$", re.IGNORECASE)


# An empty list's message in a heading ("No bills", "No results found", "暂无数据"): it says what a filter or a
# new project holds right now, it names no screen ("Take me to No bills.").
EMPTY_STATE = re.compile(r"^\W*(no\s+\S+(\s+(yet|found|here|available|to (show|display)))?|nothing (here|found|to "
                         r"show)( yet)?|暂无\S*|没有\S*)\W*$", re.IGNORECASE)


# A record page titled "table: key" (datasette's "loans: 2"): read as a person would say it, "loans row 2" — a
# name that also reads in the templates that wrap it ("the loans row 2 page", "I'm on the loans row 2 screen").
RECORD_TITLE = re.compile(r"^(?P<table>[^\W\d][\w ]*?):\s*(?P<key>\d+)$")


def heading_text(obs: Observation, el: Element) -> str:
    """A heading's words as its screen's name: without the text of controls inside it ("(hide)", "[edit]",
    "(diff)" — captured text includes inline children) and without a result count; "" for a heading that is
    only a result count."""
    text = " ".join(el.text.split())
    if el.path:
        controls = []
        for inner in obs.elements:
            said = " ".join(inner.text.split())
            if said and said != text and inner.clickable and inner.path.startswith(el.path + "/"):
                controls.append(said)
                cut = " ".join(re.sub(rf"[(\[]\s*{re.escape(said)}\s*[)\]]", " ", text).split())
                text = cut or text
        rest = text
        for said in controls:
            rest = rest.replace(said, " ")
        if len(controls) > 1 and not WORDY.search(rest):
            return ""  # a toolbar in a heading element ("control-panel prev/up/next", all links) names nothing
    text = COUNT_TAIL.sub("", text).strip()
    record = RECORD_TITLE.match(text)
    if record:
        return f"{record.group('table')} row {record.group('key')}"
    return "" if RESULT_COUNT.match(text) or EMPTY_STATE.match(text) else text


def _heading_names(obs: Observation, roles: set[str]) -> list[tuple[Element, str]]:
    """The screen's visible headings (or captions) of ``roles`` that can name it, with their names."""
    out = []
    for e in obs.elements:
        if e.role in roles and e.visible:
            name = heading_text(obs, e)
            if usable_name(name):
                out.append((e, name))
    return out


# A sentence, not a name: a home page's tagline ("Manage your shared expenses, easily") names no screen a person
# would ask for. Five words or more with a clause break or a closing stop.
TAGLINE = re.compile(r"^(?=(?:\S+\s+){4}\S).*(?:[,;]\s|[.!]$)")


def heading(obs: Observation, skip: frozenset[str] = frozenset()) -> str:
    """The screen's own title: an open dialog's heading first, else the first visible heading, else a form's
    caption ("" if none). Headings in ``skip`` (the app's own title, ``site_titles``) come last, after a caption:
    they name the app, and only a screen with nothing else is called by them. A tagline (``TAGLINE``) names
    nothing ("The Manage your shared expenses, easily page is open.")."""
    dialogs = [e for e in obs.elements if e.role in DIALOG_ROLES and e.visible]
    every = [(e, without_site(n, skip)) for e, n in _heading_names(obs, HEADING_ROLES)]
    named = [(e, n) for e, n in every if clip(n) not in skip and not TAGLINE.search(n)]
    for d in dialogs:
        inside = [name for h, name in [*named, *every] if d.bbox.contains(*h.bbox.center)]
        if inside:
            return clip(inside[0])
        said = spoken_label(d)  # its accessible name; never an id written for code ("radix-:r9:")
        if usable_name(said) and said != d.role:
            return clip(said)
        title = dialog_title(obs.elements)  # else its topmost text, as ``graph.user_screens`` names it
        if title:
            return clip(title)
    if named:
        return clip(named[0][1])
    # A form page without a heading is named by its fieldset's caption ("Add a bill", "Edit this bill"), as a
    # person reading the screen would call it; only then by the app's own title or a tagline.
    captions = _heading_names(obs, CAPTION_ROLES)
    if captions:
        return clip(captions[0][1])
    titles = [n for _e, n in every if not TAGLINE.search(n)]
    return clip(titles[0]) if titles else ""


def without_site(name: str, site: frozenset[str]) -> str:
    """``name`` without the app's title in front of it ("Household accounts 2024 Income Statement" → "Income
    Statement", ``site_titles``' prefixes); unchanged where none starts it or nothing would be left. Only titles
    of two words or more are cut off: a one-word heading on every screen ("Tools", "Search") often starts a
    screen's own name ("Tools for editors")."""
    for prefix in sorted(site, key=len, reverse=True):
        if len(prefix.split()) >= 2 and name.startswith(prefix + " "):
            rest = name[len(prefix):].lstrip(TITLE_MARKS).strip()
            if rest:
                return rest
    return name


SITE_TITLE_SHARE = 0.8  # of an app's states
SITE_TITLE_MIN_STATES = 5  # below this, a heading on every state may just be a small app's one list


def site_titles(states: Iterable[Iterable[Observation]]) -> frozenset[str]:
    """Headings shown on (nearly) every state of an app: a single-page app's own title ("My TiddlyWiki", the
    sidebar ``h1`` of every TiddlyWiki screen). They name the app, not a screen — reasoning that reads "This is My
    TiddlyWiki." at every step, and "I'm on the My TiddlyWiki screen" once the control panel is open, tells the
    agent nothing. ``states`` holds each state's captures."""
    counts: dict[str, int] = {}
    by_route: dict[str, set[str]] = {}
    n = 0
    for captures in states:
        n += 1
        said: set[str] = set()
        for obs in captures:
            shown = headings(obs)
            said.update(shown)
            by_route.setdefault(route(obs.location), set()).update(shown)
        for name in said:
            counts[name] = counts.get(name, 0) + 1
    if n < SITE_TITLE_MIN_STATES:
        return frozenset()
    # and the words in front of every route's heading: the app's title drawn before each page's name
    return frozenset(h for h, c in counts.items() if c >= SITE_TITLE_SHARE * n) | site_prefixes(by_route.values())


def headings(obs: Observation) -> list[str]:
    """Every visible heading of the screen that can name it, in document order."""
    return [clip(name) for _e, name in _heading_names(obs, HEADING_ROLES)]


def new_headings(before: Observation, after: Observation) -> list[str]:
    """Headings ``after`` shows that ``before`` did not: what an action opened (a page, a tiddler, a panel).

    On a single-page app the first heading is often the site's title on every screen; what a tap revealed
    is the heading that appeared.
    """
    old = set(headings(before))
    return [h for h in headings(after) if h not in old]


# A control named by a language, in its own words: it switches every text of the app, so a route through it
# reaches the same screens under other names ("Sprachen", "Dillər") and a task in English asks for words the
# person never saw. Choosing a language is a setting (a form plan), never a way to get somewhere.
LANGUAGE_NAME = re.compile(
    r"^\s*(english|deutsch|français|francais|español|espanol|italiano|português|portugues|nederlands|polski|"
    r"čeština|cestina|slovenčina|slovenščina|català|catala|euskara|galego|azərbaycan|русский|українська|"
    r"български|српски|srpski|hrvatski|türkçe|turkce|svenska|norsk|norsk bokmål|dansk|suomi|magyar|română|"
    r"romana|ελληνικά|eesti|latviešu|lietuvių|esperanto|bahasa indonesia|bahasa melayu|tiếng việt|עברית|"
    r"العربية|فارسی|हिन्दी|বাংলা|தமிழ்|ไทย|中文|简体中文|繁體中文|正體中文|日本語|한국어)(\s*\(.*\))?\s*$",
    re.IGNORECASE)


def names_a_page(label: str) -> bool:
    """Whether a link's words can name the page it opens: a usable name with words in it — a time of day or a bare
    number names a timeline entry or a table row, a result count ("3 rows") a query, a language's name the switch
    to it, never a page."""
    return (bool(label) and bool(WORDY.search(label)) and not TIME_OF_DAY.search(label) and usable_name(label)
            and not RESULT_COUNT.match(label) and not LANGUAGE_NAME.match(label))


def link_name(el: Element | None) -> str:
    """The words of a link that can name the page it opens ("" for any other control): ``names_a_page``, and not
    a heading's link, which is the heading's words (the app's logo, "#! money?", names the app)."""
    if el is None or el.role != "link" or IN_HEADING.match(el.path):
        return ""
    name = clip(spoken_label(el))
    return name if names_a_page(name) else ""


def link_named(obs: Observation, page_links: Mapping[str, tuple[str, ...]]) -> str:
    """A screen with no heading named by a link that opens its page (``graph_names.page_links_of``, most used first)
    and is on the screen itself: the navigation bar's item for the current page (I Hate Money's bill list is
    "Bills", though "Try out the demo" on the start page opened it as often). A link seen only elsewhere is not
    what this screen shows, and an agent on it could not read the name off it; "" when none is on screen."""
    shown = {clip(spoken_label(e)) for e in obs.elements if e.visible and e.clickable and e.role == "link"}
    return as_written(next((name for name in page_links.get(location_path(obs), ()) if name in shown), ""))


def has_dialog(obs: Observation) -> bool:
    return any(e.role in DIALOG_ROLES and e.visible for e in obs.elements)


def location_path(obs: Observation) -> str:
    """Where a screen is: the URL's path, with a single-page app's hash route (``#/prompts``, ``#!/x``, ``#flow/x``:
    ``graph.user_screens.hash_route``) read as more path (``graph.user_screens.route`` reads it the same way) — for
    such an app every page has the path ``/``, and "a link shown at three places", "a page below this one" or "the
    tap kept the page" would all be judged on one place. An anchor (``#section``) stays a scroll position of its
    page. Android: the activity."""
    loc = obs.location
    if "://" not in loc:
        return loc
    parts = urlparse(loc)
    route = hash_route(parts.fragment)
    return parts.path if route is None else parts.path.rstrip("/") + "#" + route


def visible_texts(obs: Observation, limit: int | None = None) -> list[str]:
    """Distinct visible labels in reading order (clipped), the screen's text as a person would scan it."""
    out: list[str] = []
    for el in obs.elements:
        label = clip(el.label)
        if el.visible and label and label not in out and not CLOCK_RE.match(label):
            out.append(label)
            if limit is not None and len(out) >= limit:
                break
    return out


def all_text(obs: Observation) -> str:
    """Every visible text of the screen, joined, for containment tests ("does the screen show X?")."""
    return "\n".join(" ".join(e.label.split()) for e in obs.elements if e.visible and e.label)


def element_key(el: Element) -> ElementKey:
    """Identity of an element across captures: role, resource id and label, never its DOM position."""
    return (el.role, el.resource_id, " ".join(el.label.split()))


def occurrence(obs: Observation, el: Element) -> int:
    """Which of the screen's elements with this key ``el`` is (0 = first in document order)."""
    key = element_key(el)
    n = 0
    for other in obs.elements:
        if other.id == el.id:
            return n
        if element_key(other) == key:
            n += 1
    return n


def find_element(obs: Observation, key: ElementKey, nth: int = 0) -> Element | None:
    """The ``nth`` element of ``obs`` with identity ``key`` (None when the screen has no such element)."""
    matches = [e for e in obs.elements if element_key(e) == key]
    if not matches:
        return None
    return matches[nth] if nth < len(matches) else None


INDEX_RE = re.compile(r"\[\d+\]")
CHROME_PATH = re.compile(r"(^|/)(nav|header|footer|aside|menu)\[", re.IGNORECASE)


# Links directly inside running text: the words of a paragraph, not the rows of a list.
PROSE_PARENT = re.compile(r"(^|/)(p|em|strong|b|i|code|small|blockquote)\[\d+\]/a\[\d+\]$",
                          re.IGNORECASE)
# A table's header row: its links sort the table ("id ▼", "member_id"), they are no rows of it.
TABLE_HEADER = re.compile(r"(^|/)(thead|th)\[\d+\]/", re.IGNORECASE)


# The heading element a link sits in: links inside one heading are its words ("#1 new defect"), not a list.
IN_HEADING = re.compile(r"^(.*?(^|/)h[1-6]\[\d+\])/", re.IGNORECASE)


def _same_heading(a: Element, b: Element) -> bool:
    m = IN_HEADING.match(a.path)
    return m is not None and b.path.startswith(m.group(1) + "/")


# A resource id written for code, not people: "red-ui-tab-info-link-button", "btn_save", "navBar", "item42".
MACHINE_ID = re.compile(r"[-_./:#\d]|[a-z][A-Z]")


# A time of day in a link's name ("00:43 MeetingNotes created by trac" on a timeline): the moment the seed was
# made, which a fresh instance of the app does not show, so the entry cannot be asked for by that name, and a
# route through it does not exist on another instance either.
TIME_OF_DAY = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(:\d{2})?(?![\d:])")


# A title written for the program, not for people: TiddlyWiki's system tiddlers ("$:/ControlPanel",
# "$:/config/NewJournal/Text"), a file path. Nobody asks to be taken to "$:/AdvancedSearch"; they ask for the
# "advanced search" the button says.
SYSTEM_NAME = re.compile(r"^(\$:/\S*|[\w.-]+(/[\w.-]+)+)$")


def as_written(name: str) -> str:
    """A name shown in capitals by the page's style ("VIEW TICKETS": CSS ``text-transform``, which the captured
    text keeps) as a person would type it, "View tickets"; an acronym ("FAQ", "RSS") stays."""
    letters = [c for c in name if c.isalpha()]
    if len(letters) < 5 or not name.isupper() or not all(c.isascii() for c in letters):
        return name
    return name[0] + name[1:].lower()


def as_said(name: str, opener: str) -> str:
    """A screen's name as a person says it: a program's title (``SYSTEM_NAME``) gives way to the words on the
    control that opened it ("$:/ControlPanel", opened by "control panel", is "Control panel")."""
    if SYSTEM_NAME.match(name) and opener and not SYSTEM_NAME.match(opener):
        return opener[0].upper() + opener[1:]
    return name


def spoken_label(el: Element) -> str:
    """The name a person could read off the screen or say: the element's text or accessible description, or a
    resource id that is a plain word ("logo"); "" for an id written for code, a role or a class name (an icon
    control with no name, which a VLM must describe from the screenshot)."""
    if el.text or el.content_desc:
        return el.label
    rid = el.resource_id
    return rid if rid and not MACHINE_ID.search(rid) and rid not in (el.role, el.class_name) else ""


TABLE_ROW = re.compile(r"^(.*/tbody\[\d+\]/tr\[\d+\]/)")
WORDY = re.compile(r"[^\W\d_]")  # a letter of any script: a name has words, a row id or page number has none


def row_label(obs: Observation, el: Element) -> str:
    """What a table row that ``el`` opens is called: the first cell of its row with words in it, when ``el`` says
    only a number (datasette's row link "3" beside "Italo Calvino"); "" otherwise. Only plain text cells count:
    a linked cell (a loan's book) is another record, and a name the table shows twice names no single row."""
    if WORDY.search(el.label):
        return ""
    row = TABLE_ROW.match(el.path)
    if row is None:
        return ""
    prefix = row.group(1)
    for other in obs.elements:
        if (other.visible and not other.clickable and other.path.startswith(prefix)
                and other.role not in ("link", "button") and WORDY.search(other.label)):
            name = " ".join(other.label.split())
            same = [e for e in obs.elements if " ".join(e.label.split()) == name]
            return name if len(same) == 1 else ""
    return ""


# The list row, table row or card a control sits in (the innermost one).
ROW = re.compile(r"^(.*(?:^|/)(?:li|tr|article)\[\d+\])(?:/|$)")


def _words_in(obs: Observation, prefix: str, el: Element) -> str:
    """The first text inside ``prefix`` (a heading's or row's DOM path) that names it on this screen: words, not
    the control's own label, no time of day (another instance shows another), and shown once on the screen. Plain
    text first: a row's own name is usually not a link."""
    inside = [e for e in obs.elements if e.visible and e.id != el.id and e.path.startswith(prefix + "/")]
    own = " ".join(el.label.split())
    for plain in (True, False):
        for other in inside:
            name = " ".join(other.label.split())
            control = other.clickable or other.role in ("link", "button")
            # plain text first, then a link (an entry's name often is one); never a button's words ("More options
            # for 'About us'"): they say what it does, not which row it is
            if control == plain or (control and other.role != "link") or not WORDY.search(name):
                continue
            if name == own or TIME_OF_DAY.search(name) or len(name) > MAX_TEXT_CHARS:
                continue
            if sum(" ".join(e.label.split()) == name for e in obs.elements if e.visible) == 1:
                return name
    return ""


def place_of(obs: Observation, el: Element) -> tuple[str, str]:
    """Where ``el`` sits, in words a person would use to point at it: ``("heading", "Start here")`` for a
    section's "edit" link inside that heading, ``("row", "Category:Events")`` for a "contribs" link in the row
    that names that page; ``("", "")`` when neither says. What tells look-alike controls apart (``twin_place``)."""
    m = IN_HEADING.match(el.path)
    if m is not None:
        name = _words_in(obs, m.group(1), el)
        if name:
            return "heading", name
    m = ROW.match(el.path)
    if m is not None and not TABLE_HEADER.search(el.path):  # a header row's links sort columns: no entry's row
        name = _words_in(obs, m.group(1), el)
        if name:
            return "row", name
    return "", ""


def twin_place(obs: Observation, el: Element) -> tuple[str, str]:
    """How to tell ``el`` from the other visible controls that read the same (every row's "contribs", every
    section's "edit"): its ``place_of`` when that place is its alone; ``("", "")`` when it has no look-alike or
    nothing on screen tells them apart."""
    key = element_key(el)
    twins = [e for e in obs.elements if e.visible and e.id != el.id and element_key(e) == key]
    if not twins:
        return "", ""
    place = place_of(obs, el)
    if not place[1] or any(place_of(obs, t)[1] == place[1] for t in twins):
        return "", ""
    return place


def _list_slot(el: Element) -> str:
    """The element's place in a repeated structure: its DOM path with sibling positions removed."""
    return INDEX_RE.sub("", el.path)


def siblings(obs: Observation, el: Element) -> list[Element]:
    """Other items of the same list: same role and resource id (or, without ids, the same repeated DOM slot,
    differing only in sibling positions), different label."""
    if el.role not in ("link", "listitem", "button", "cell", "row", "option", "menuitem"):
        return []
    out = []
    for e in obs.elements:
        if e.id == el.id or e.role != el.role or e.label == el.label or not e.visible or not e.label:
            continue
        if el.resource_id:
            same = e.resource_id == el.resource_id
        else:  # positional lists only in the page's content: a navigation bar is a row of links, not items, and
            # the links of a paragraph or a heading are its words ("see the (diff)", "#1 new defect"), not entries
            same = (not e.resource_id and bool(el.path) and not CHROME_PATH.search(el.path)
                    and not PROSE_PARENT.search(el.path) and not TABLE_HEADER.search(el.path)
                    and _list_slot(e) == _list_slot(el) and e.path != el.path and not _same_heading(el, e))
        if same:
            out.append(e)
    return out


def group_label(obs: Observation, el: Element) -> str:
    """The legend of the fieldset (or group) a choice belongs to, by DOM path, else the nearest label above."""
    if el.path:
        parts = el.path.split("/")
        for cut in range(len(parts) - 1, 0, -1):
            prefix = "/".join(parts[:cut])
            if not re.search(r"(fieldset|group|radiogroup)\[\d+\]$", prefix):
                continue
            for other in obs.elements:
                if other.role in GROUP_LABEL_ROLES and other.path.startswith(prefix + "/") and other.text.strip():
                    return clip(other.text)
    above = [e for e in obs.elements if e.role in GROUP_LABEL_ROLES and e.text.strip() and e.bbox.y2 <= el.bbox.y1]
    return clip(max(above, key=lambda e: e.bbox.y2).text) if above else ""


def gloss(label: str, language: str) -> str:
    """An option's name in ``language``: "中文 (Chinese)" is "Chinese" in English and "中文" in Chinese."""
    m = GLOSS_RE.match(label.strip())
    if not m:
        return label.strip()
    native, glossed = m.group("native").strip(), m.group("gloss").strip()
    native_cjk, gloss_cjk = bool(CJK_RE.search(native)), bool(CJK_RE.search(glossed))
    if language.startswith("zh"):
        return native if native_cjk else (glossed if gloss_cjk else native)
    return glossed if native_cjk and not gloss_cjk else native


def noun_from_heading(text: str, plural: bool = True) -> str:
    """The kind of item a heading is about: a list's plural ("All notes" → "note", "Your contacts" →
    "contact"), or with ``plural=False`` a form's singular too ("New note" → "note")."""
    words = re.findall(r"[A-Za-z]+", text)
    if not words or len(words) > 4 or re.search(r"[,.!?:;]", text):
        return ""  # a sentence or tagline ("Manage your shared expenses, easily") names no kind of item
    word = words[-1].lower()
    if len(word) < 4 or word in {"all", "list", "home", "overview", "dashboard", "news", "settings", "status"}:
        return ""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    # A list's heading names its items in the plural ("All notes"); a site title ("My TiddlyWiki") is no noun.
    return "" if plural else word


# "Project name", "Bill title": a form's field that names the thing the form makes. A person's own name fields
# ("First name", "User name") name nobody's kind of item.
FIELD_NOUN = re.compile(r"^\s*(?P<noun>[A-Za-z]{3,})\s+(name|title)\s*\*?\s*$", re.IGNORECASE)
NOT_NOUNS = {"first", "last", "full", "display", "user", "your", "nick", "file", "family", "given", "middle",
             "login", "account", "sur"}


def noun_from_fields(labels: Iterable[str]) -> str:
    """The kind of item a form creates, read off its name field ("Project name" → "project"), or ""."""
    for label in labels:
        m = FIELD_NOUN.match(label)
        if m and m.group("noun").lower() not in NOT_NOUNS:
            return m.group("noun").lower()
    return ""


def texts_in(needles: Iterable[str], obs: Observation) -> list[str]:
    """Those ``needles`` the screen shows somewhere (case- and whitespace-insensitive)."""
    hay = " ".join(all_text(obs).split()).lower()
    return [n for n in needles if n and " ".join(n.split()).lower() in hay]
