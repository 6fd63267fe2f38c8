"""Values the explorer types into form fields: valid for the field, and what a person would type.

Why both: forms are where most screens hide (a validation error, a created record, a search result), and a
value the field rejects (a placeholder string in an e-mail field, ``42`` where ``min`` is 100, a title where a
``pattern`` wants a code) only reaches the error screen — or an HTTP 400 page counted as a new state. And the
values end up in the dataset: synthesis writes them into task texts ("create a note titled …"), so they must
look like what a user would type, never like test fixtures.

Order of preference: the crawl config's ``form_values`` (by field name, id, label, autocomplete or type); a
``<select>``'s or ``<datalist>``'s own options; for a search box (``is_search_box``), a query taken from the items
the app listed (``queries``); a value picked from realistic pools by what the field is (its type, name, label,
autocomplete), written the way its placeholder shows (``DD/MM/YYYY``); then made to meet the field's own constraints
(``pattern``, ``min``/``max``/``step``, ``minlength``/``maxlength``). Pools are indexed by a hash of the field's
identity, so the same field always gets the same value (candidate keys stay stable across visits) while different
fields get different, varied values.

Typing that leads somewhere (why the filler keeps a little state): on an accounting UI 111 of 184 actions typed
note-like filler ("Garden plans") into its time, account and filter boxes, and half its states were junk URLs and
its error page; on a wiki the same word went into the search box ~50 times. So:
- note-like free text only goes where free text belongs (a textarea, a field named like a title, name, subject,
  description or comment, or a plain field of a form that writes); a field of a filter or formless bar whose kind
  the filler cannot tell (an "account" or "time" box) gets one of its own suggestions, a value its pattern or
  placeholder format accepts, or nothing: it is left alone (``value_for`` returns "");
- a search box gets a query from the items the app listed (link texts, cells, headings, not the words of its
  navigation and title that every screen repeats), keeps it until it was typed, then gets the next one, at most
  MAX_QUERIES distinct queries per box and each typed once; the box then offers "press Enter" until the query is
  submitted (``awaits_submit``), so a typed query is a submitted one;
- a value whose submission ended on the app's error page (``rejected``) is not typed into that field again.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import cast

from graph.screen import Screen, Widget

TITLES = ("Weekly team sync", "Groceries for Saturday", "Trip to Lisbon in May", "Quarterly budget review",
          "Birthday party checklist", "Books to read this summer", "Garden plans", "Conference travel notes",
          "Move to the new office", "Dinner with the Parkers")
SENTENCES = ("Remember to bring the receipts from the team lunch.",
             "Call the landlord about the heating before Friday.",
             "Pick up the dry cleaning and buy fresh basil on the way home.",
             "Draft agenda: budget, hiring plan, and the office move.",
             "Book the train tickets early, prices go up after Tuesday.",
             "Ask Maria for the slides from last week's review.")
FIRST_NAMES = ("Maria", "James", "Aiko", "Lukas", "Priya", "Daniel", "Sofia", "Omar")
LAST_NAMES = ("Garcia", "Chen", "Novak", "Okafor", "Schmidt", "Rossi", "Tanaka", "Moreau")
SEARCHES = ("budget", "meeting notes", "travel", "groceries", "report")
CITIES = ("Lisbon", "Toronto", "Melbourne", "Hamburg", "Osaka", "Portland")
STREETS = ("12 Rosemary Lane", "48 Harbor Street", "7 Maple Avenue", "230 King Road")
COMPANIES = ("Northwind Traders", "Blue Harbor Studio", "Acme Logistics", "Greenfield Bakery")
TAGS = ("work", "travel", "family", "ideas", "finance")
PLACEHOLDER_OPTION = re.compile(r"^\s*(-+|—+|choose|select|pick|please|none|\(none\)|请选择|选择|--.*--)",
                                re.IGNORECASE)

# (substring of name / id / label / autocomplete, pool kind) — first match wins, so specific hints come first.
HINTS = (
    ("email", "email"), ("e-mail", "email"), ("mail", "email"), ("邮箱", "email"),
    ("phone", "tel"), ("mobile", "tel"), ("tel", "tel"), ("电话", "tel"),
    ("password", "password"), ("passwd", "password"), ("pass", "password"), ("密码", "password"),
    ("username", "username"), ("login", "username"), ("user", "username"), ("用户名", "username"),
    ("first", "first_name"), ("given", "first_name"), ("last", "last_name"), ("family", "last_name"),
    ("surname", "last_name"), ("fullname", "name"), ("full name", "name"), ("author", "name"),
    ("member", "name"), ("payer", "name"), ("who", "name"), ("name", "name"), ("姓名", "name"),
    ("company", "company"), ("organi", "company"),
    ("title", "title"), ("subject", "title"), ("heading", "title"), ("标题", "title"),
    ("search", "search"), ("query", "search"), ("find", "search"), ("q", "search"), ("keyword", "search"),
    ("搜索", "search"),
    ("summary", "sentence"), ("amount", "amount"), ("price", "amount"), ("cost", "amount"),
    ("total", "amount"), ("sum", "amount"),
    ("金额", "amount"), ("weight", "quantity"), ("quantity", "quantity"), ("qty", "quantity"),
    ("count", "quantity"), ("age", "age"), ("year", "year"),
    ("zip", "zip"), ("postal", "zip"), ("postcode", "zip"), ("city", "city"), ("town", "city"),
    ("street", "street"), ("address", "street"), ("url", "url"), ("website", "url"), ("homepage", "url"),
    ("tag", "tag"), ("label", "tag"), ("date", "date"), ("when", "date"), ("time", "time"),
    ("comment", "sentence"), ("description", "sentence"), ("body", "sentence"), ("message", "sentence"),
    ("note", "sentence"), ("text", "sentence"), ("content", "sentence"), ("summary", "sentence"),
    ("what", "title"),
)
TYPE_KINDS = {"email": "email", "tel": "tel", "url": "url", "password": "password", "number": "quantity",
              "range": "quantity", "date": "date", "time": "time", "datetime-local": "datetime", "month": "month",
              "week": "week", "search": "search", "color": "color"}
AUTOCOMPLETE_KINDS = {"email": "email", "tel": "tel", "username": "username", "current-password": "password",
                      "new-password": "password", "given-name": "first_name", "family-name": "last_name",
                      "name": "name", "organization": "company", "postal-code": "zip", "address-level2": "city",
                      "street-address": "street", "address-line1": "street", "url": "url", "bday": "date"}
BASE_DAY = date(2024, 6, 3)  # a fixed Monday: dates stay reproducible across crawls


def _pick(pool: tuple[str, ...], seed: int) -> str:
    return pool[seed % len(pool)]


def _value(kind: str, seed: int) -> str:
    first, last = _pick(FIRST_NAMES, seed), _pick(LAST_NAMES, seed // 7)
    day = BASE_DAY + timedelta(days=seed % 60)
    values = {
        "email": f"{first.lower()}.{last.lower()}@example.com",
        "tel": f"+1 555 01{seed % 100:02d}",
        "url": f"https://www.example.com/{_pick(TAGS, seed)}",
        "password": "Blue-Harbor-7741",
        "username": f"{first.lower()}{last.lower()[:3]}",
        "first_name": first, "last_name": last, "name": f"{first} {last}",
        "company": _pick(COMPANIES, seed), "title": _pick(TITLES, seed), "search": _pick(SEARCHES, seed),
        "amount": f"{12 + seed % 80}.{(seed // 3) % 4 * 25:02d}", "quantity": str(2 + seed % 5),
        "age": str(28 + seed % 30), "year": str(2020 + seed % 5), "zip": f"{94100 + seed % 60}",
        "city": _pick(CITIES, seed), "street": _pick(STREETS, seed), "tag": _pick(TAGS, seed),
        "date": day.isoformat(), "time": f"{9 + seed % 8:02d}:30",
        "datetime": f"{day.isoformat()}T{9 + seed % 8:02d}:30",
        "month": day.strftime("%Y-%m"), "week": f"{day.isocalendar()[0]}-W{day.isocalendar()[1]:02d}",
        "color": "#3366cc", "sentence": _pick(SENTENCES, seed),
    }
    return values.get(kind, _pick(SENTENCES, seed))


NUMERIC_KINDS = ("amount", "quantity", "age", "year", "zip")
# Kinds whose value is note-like text: typed only into fields that look like free text (``_free_text``).
FREE_KINDS = ("title", "sentence")
# Hints that a plain text field wants free text: its name, id or label starts with one of these words.
FREE_HINTS = ("title", "name", "subject", "heading", "description", "comment", "note", "body", "message", "text",
              "content", "summary", "what", "caption", "remark", "memo", "标题", "描述", "备注")
MAX_QUERIES = 3  # distinct queries typed into one search box in a crawl: then the box is left alone


def field_kind(w: Widget) -> str:
    """What a field asks for, from its type, then autocomplete, then its name / id / label."""
    if w.input_type in ("number", "range"):
        hinted = _hinted(w)
        return hinted if hinted in NUMERIC_KINDS else "quantity"
    if w.input_type in TYPE_KINDS and w.input_type not in ("search",):
        return TYPE_KINDS[w.input_type]
    ac = w.autocomplete.split()[-1] if w.autocomplete else ""
    if ac in AUTOCOMPLETE_KINDS:
        return AUTOCOMPLETE_KINDS[ac]
    hinted = _hinted(w)
    if hinted:
        return hinted
    if w.input_type == "search":
        return "search"
    return "sentence" if w.tag == "textarea" else "title"


def _hinted(w: Widget) -> str:
    e = w.element
    hay = " ".join((w.input_name, e.resource_id, e.text, w.placeholder)).lower()
    words = set(re.split(r"[^a-z0-9\u4e00-\u9fff]+", hay))
    for hint, kind in HINTS:
        # Short hints ("q") are whole words; longer ones start a word ("email" in "user_email", not "female").
        if (hint in words) if len(hint) <= 2 else re.search(r"(?<![a-z])" + re.escape(hint), hay):
            return kind
    return ""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --- search terms ----------------------------------------------------------------------------------------------
# Words that name the interface, not the app's content (searching for them finds the menu, or nothing), and function
# words: never a search term.
NOT_TERMS = frozenset({
    "about", "above", "account", "after", "again", "also", "back", "before", "being", "below", "between", "blog",
    "bottom", "button", "cancel", "change", "changes", "clear", "click", "close", "contact", "content", "cookie",
    "cookies", "copy", "could", "create", "dark", "delete", "does", "donate", "download", "each", "edit", "email",
    "english", "every", "false", "filter", "from", "github", "have", "help", "here", "hide", "home", "into", "just",
    "language", "left", "light", "like", "link", "links", "loading", "login", "logout", "main", "many", "menu",
    "mode", "more", "most", "much", "next", "none", "null", "only", "open", "other", "over", "page", "pages",
    "password", "previous", "print", "privacy", "profile", "register", "remove", "reset", "right", "save", "search",
    "result", "results", "nothing", "found", "matches", "item", "items", "list", "entries", "total", "sort", "order",
    "settings", "share", "should", "show", "sign", "skip", "some", "such", "than", "that", "their", "them", "then",
    "there", "these", "they", "this", "those", "toggle", "true", "under", "undefined", "upload", "user", "username",
    "very", "view", "were", "what", "when", "where", "which", "while", "will", "with", "would", "your"
})
_TERM = re.compile(r"[^\W\d_]{4,24}|[\u4e00-\u9fff]{2,6}")


def search_term(screen: Screen, box: Widget) -> str:
    """A word the app shows on ``screen`` in most of its labels (links, buttons, headings), for typing into the
    search or filter box ``box``; "" when the screen shows none.

    Why a word from the page: a made-up query ("budget" in a documentation site) only reaches the "no results"
    screen, while the app's own vocabulary reaches the result list, the code that ranks and draws it, and the screens
    its hits open — and a task "search for 'configuration'" is one an agent can check on screen. Words of the box's
    own label or placeholder and of the interface itself (``NOT_TERMS``) are left out; among equally frequent words the
    first one on the page wins, so the same screen always gives the same term."""
    own = {t.lower() for t in _TERM.findall(" ".join((box.label, box.placeholder)))}
    counts: Counter[str] = Counter()
    shown: dict[str, str] = {}
    order: dict[str, int] = {}
    for w in screen.widgets:
        e = w.element
        if w is box or e.editable or not e.visible or not w.label:
            continue
        for tok in set(_TERM.findall(w.label)):
            low = tok.lower()
            if low in NOT_TERMS or low in own:
                continue
            counts[low] += 1
            shown.setdefault(low, tok)
            order.setdefault(low, len(order))
    if not counts:
        return ""
    best = min(counts, key=lambda t: (-counts[t], order[t]))
    return shown[best] if shown[best].isupper() or not shown[best][1:].islower() else best


# --- constraints ---------------------------------------------------------------------------------------------
def _number(w: Widget, wanted: str) -> str:
    """A number within ``min``/``max`` on the ``step`` grid, as close to ``wanted`` as they allow."""
    def dec(s: str) -> Decimal | None:
        try:
            return Decimal(s)
        except (InvalidOperation, ValueError):
            return None

    v = dec(wanted) or Decimal(3)
    lo, hi = dec(w.min), dec(w.max)
    step = None if w.step.strip().lower() == "any" else (dec(w.step) or Decimal(1))
    if step is not None and step <= 0:
        step = Decimal(1)
    if lo is not None and v < lo:
        v = lo
    if hi is not None and v > hi:
        v = hi
    if step is not None:
        base = lo if lo is not None else Decimal(0)
        v = base + ((v - base) / step).to_integral_value() * step
        if hi is not None and v > hi:
            v -= step
    text = format(v.normalize(), "f") if v != v.to_integral_value() else str(int(v))
    return text


def _date_in(w: Widget, wanted: str) -> str:
    """A date within ``min``/``max`` (ISO dates; other date-like types are left as they are)."""
    try:
        v = date.fromisoformat(wanted)
        if w.min and v < date.fromisoformat(w.min):
            v = date.fromisoformat(w.min)
        if w.max and v > date.fromisoformat(w.max):
            v = date.fromisoformat(w.max)
        return v.isoformat()
    except ValueError:
        return wanted


def _generate(pattern: str) -> str | None:
    """A short string matching ``pattern`` (HTML ``pattern`` is an anchored regex), or None if too exotic."""
    from re import _parser as parser  # type: ignore[attr-defined]  # the stdlib's own regex parser

    def gen(items: list[tuple[object, object]]) -> str:
        out = []
        for op, arg in items:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(arg))  # type: ignore[arg-type]
            elif name == "NOT_LITERAL":
                out.append("a" if chr(arg) != "a" else "b")  # type: ignore[arg-type]
            elif name == "ANY":
                out.append("a")
            elif name == "IN":
                out.append(_class_char(arg))  # type: ignore[arg-type]
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = cast("tuple[int, int, list[tuple[object, object]]]", arg)
                n = max(lo, 1) if hi >= 1 else 0
                out.append(gen(list(sub)) * min(n, 40))
            elif name == "SUBPATTERN":
                out.append(gen(list(arg[-1])))  # type: ignore[index]
            elif name == "BRANCH":
                out.append(gen(list(arg[1][0])))  # type: ignore[index]
            elif name in ("AT", "ASSERT", "ASSERT_NOT"):
                continue
            elif name == "CATEGORY":
                out.append(_category_char(str(arg)))
            else:
                raise ValueError(name)
        return "".join(out)

    try:
        return gen(list(parser.parse(pattern)))
    except Exception:
        return None


def _category_char(cat: str) -> str:
    return {"CATEGORY_DIGIT": "7", "CATEGORY_SPACE": " ", "CATEGORY_WORD": "a"}.get(cat, "a")


def _class_char(items: list[tuple[object, object]]) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    allowed: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            allowed.append(chr(arg))  # type: ignore[arg-type]
        elif name == "RANGE":
            lo, hi = cast("tuple[int, int]", arg)
            allowed.append(chr(lo if not (lo <= ord("a") <= hi) else ord("a")))
        elif name == "CATEGORY":
            allowed.append(_category_char(str(arg)))
    if negate:
        return next(c for c in "a7A_ x" if c not in allowed)
    return allowed[0] if allowed else "a"


def fits(w: Widget, value: str) -> bool:
    """Whether ``value`` meets the field's own constraints (what the browser's validation would check)."""
    if w.pattern:
        try:
            if not re.fullmatch(w.pattern, value):
                return False
        except re.error:
            pass
    if w.max_length >= 0 and len(value) > w.max_length:
        return False
    return not (w.min_length >= 0 and len(value) < w.min_length)


def constrain(w: Widget, value: str) -> str:
    """``value`` changed as little as needed to meet the field's type and constraints."""
    if w.input_type in ("number", "range"):
        value = _number(w, value)
    elif w.input_type == "date":
        value = _date_in(w, value)
    if w.pattern and not fits(w, value):
        # Prefer a realistic value the pattern accepts (a slug, a lowercase word) over a generated one.
        tries = [value.lower(), _slug(value), value.replace(" ", ""), *(_slug(t) for t in TITLES), *SEARCHES,
                 *(str(n) for n in (7, 42, 2024, 12345))]
        ok = next((t for t in tries if t and fits(w, t)), None)
        made = ok if ok is not None else _generate(w.pattern)
        if made is not None:
            value = made
    if w.max_length >= 0 and len(value) > w.max_length:
        value = value[: w.max_length].rstrip() or value[: w.max_length]
    i = 0
    while w.min_length >= 0 and len(value) < w.min_length and i < 50:  # more of the same kind of text
        value = f"{value} {_pick(SENTENCES, len(value) + i)}".strip()
        i += 1
    return value


def choose_option(w: Widget, seed: int) -> str:
    """A real option of a <select>: not a placeholder ("Choose…", empty value), and not the one already chosen
    when another exists (choosing it again changes nothing)."""
    real = [v for v, label in zip(w.options, w.option_labels or w.options, strict=False)
            if v and not PLACEHOLDER_OPTION.match(label or v)]
    if not real:
        return ""
    others = [v for v in real if v != w.value] or real
    return others[seed % len(others)]


# --- what a field is for --------------------------------------------------------------------------------------
SEARCH_ROLES = ("searchbox",)
TEXTLIKE = ("", "text", "search")


def _form_fields(w: Widget, screen: Screen | None) -> list[Widget]:
    """The editable fields of ``w``'s form on ``screen`` (itself included); [w] when it has no form or no screen."""
    if screen is None or not w.form_action:
        return [w]
    return [o for o in screen.widgets if o.element.editable and o.form_action == w.form_action
            and o.form_method == w.form_method]


def is_search_box(w: Widget, screen: Screen | None = None) -> bool:
    """Whether ``w`` is a search box: ``type=search``, ARIA ``searchbox`` (or a ``combobox`` with no list of its own
    to choose from), a name or label that says search / query / ``q``, or the only text field of a form sent with GET
    (a form that reads, one word in, a list out). Never a field with options to choose from."""
    e = w.element
    if not e.editable or w.options or w.suggestions or w.tag == "textarea" or w.input_type not in TEXTLIKE:
        return False
    if w.input_type == "search" or e.role in SEARCH_ROLES or e.role == "combobox":
        return True
    if _hinted(w) == "search":
        return True
    if placeholder_value(w, 0):
        return False  # its placeholder shows a format (a date, an amount): a filter's field, not a query
    if w.form_action and (w.form_method or "get").lower() == "get" and screen is not None:
        fields = [o for o in _form_fields(w, screen) if o.input_type in TEXTLIKE and o.tag != "textarea"]
        return len(fields) == 1 and not _hinted(w)
    return False


def _free_text(w: Widget, screen: Screen | None) -> bool:
    """Whether note-like text (a title, a sentence) belongs in ``w``: a textarea or rich-text editor, a field named
    or labelled like free text, or a plain field of a form that writes (POST: a create or edit form, where an empty
    field keeps the form from being sent). Not a field of a filter bar or of a GET form."""
    e = w.element
    if w.tag == "textarea" or (e.editable and w.tag not in ("input", "textarea", "")):
        return True  # a contenteditable editor
    hay = " ".join((w.input_name, e.resource_id, e.text, w.placeholder)).lower()
    if any(re.search(r"(?<![a-z])" + re.escape(h), hay) for h in FREE_HINTS):
        return True
    return bool(w.form_action) and (w.form_method or "get").lower() == "post"


_FORMATS = ((re.compile(r"\bdd[./-]mm[./-](yyyy|yy)\b", re.I), "%d{0}%m{0}%Y"),
            (re.compile(r"\bmm[./-]dd[./-](yyyy|yy)\b", re.I), "%m{0}%d{0}%Y"),
            (re.compile(r"\byyyy[./-]mm[./-]dd\b", re.I), "%Y{0}%m{0}%d"),
            (re.compile(r"\byyyy[./-]mm\b", re.I), "%Y{0}%m"))
_SEP = re.compile(r"[./-]")


def placeholder_value(w: Widget, seed: int) -> str:
    """A value written the way the field's placeholder shows its format ("YYYY-MM-DD", "dd.mm.yyyy", "HH:MM", an
    example number such as "0.00"), or "" when the placeholder shows none."""
    ph = w.placeholder.strip()
    if not ph:
        return ""
    day = BASE_DAY + timedelta(days=seed % 60)
    for rx, fmt in _FORMATS:
        m = rx.search(ph)
        if m:
            sep = _SEP.search(m.group(0))
            return day.strftime(fmt.format(sep.group(0) if sep else "-"))
    if re.fullmatch(r"(?i)hh:mm(:ss)?", ph):
        return f"{9 + seed % 8:02d}:30" + (":00" if ph.count(":") == 2 else "")
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", ph):
        return day.isoformat()
    if re.fullmatch(r"-?[0-9]+([.,][0-9]+)?", ph):
        decimals = len(re.split(r"[.,]", ph)[1]) if re.search(r"[.,]", ph) else 0
        n = Decimal(12 + seed % 80) + (Decimal((seed // 3) % 4 * 25) / 100 if decimals else 0)
        return f"{n:.{decimals}f}".replace(".", "," if "," in ph else ".")
    return ""


# --- search queries --------------------------------------------------------------------------------------------
CHROME_TAGS = re.compile(r"(^|/)(nav|header|footer|aside)\[")
CHROME_SHARE = 0.9  # a word on this share of the screens seen (with at least CHROME_MIN screens) is the app's chrome
CHROME_MIN = 4
LISTED = re.compile(r"/(li|td|tr|dt|dd|article)\[")


@dataclass
class Vocabulary:
    """Which words are the app's chrome: in its navigation, header or footer, in the document title (the site's
    name), or on most screens seen so far. Searching for them finds the menu, or every page, not an item."""

    pages: set[str] = field(default_factory=set)  # screens seen (their location without query or anchor)
    on_pages: dict[str, set[str]] = field(default_factory=dict)  # word -> screens it was on
    marked: set[str] = field(default_factory=set)  # words seen in the chrome regions or the title

    def see(self, screen: Screen) -> None:
        page = screen.location.split("#", 1)[0].split("?", 1)[0]
        if page in self.pages:
            return
        self.pages.add(page)
        self.marked |= {t.lower() for t in _TERM.findall(screen.title)}
        for w in screen.widgets:
            if not w.label or w.element.editable:
                continue
            words = {t.lower() for t in _TERM.findall(w.label)}
            if CHROME_TAGS.search(w.element.path) or w.element.role in ("navigation", "banner", "contentinfo"):
                self.marked |= words
            for t in words:
                self.on_pages.setdefault(t, set()).add(page)

    def chrome(self, word: str) -> bool:
        if word in self.marked:
            return True
        n = len(self.pages)
        return n >= CHROME_MIN and len(self.on_pages.get(word, ())) >= CHROME_SHARE * n


def queries(screen: Screen, box: Widget, vocab: Vocabulary | None = None) -> list[str]:
    """Queries for the search box ``box`` taken from the items ``screen`` lists, best first: words of link texts,
    list rows, table cells and headings (one per item, items of a list or table first, then words shown on more
    items), never the app's chrome (``Vocabulary``), the box's own label or ``NOT_TERMS``. A word a person would
    type, that the app's own data contains: it reaches the result list, not the "no results" screen. Words of the
    rows of a list or table come first, then those of links and headings; other prose ("Nothing found") is none."""
    own = {t.lower() for t in _TERM.findall(" ".join((box.label, box.placeholder)))}
    counts: Counter[str] = Counter()
    listed: set[str] = set()
    shown: dict[str, str] = {}
    order: dict[str, int] = {}
    for w in screen.widgets:
        e = w.element
        if w is box or e.editable or not e.visible or not w.label:
            continue
        if CHROME_TAGS.search(e.path):
            continue
        in_list = bool(LISTED.search("/" + e.path)) or e.role in ("cell", "gridcell", "row", "listitem")
        if not (in_list or w.href or e.role == "heading"):
            continue
        for tok in dict.fromkeys(_TERM.findall(w.label)):  # in reading order: the same screen, the same queries
            low = tok.lower()
            if low in NOT_TERMS or low in own or (vocab is not None and vocab.chrome(low)):
                continue
            counts[low] += 1
            shown.setdefault(low, tok)
            order.setdefault(low, len(order))
            if in_list:
                listed.add(low)
    ranked = sorted(counts, key=lambda t: (t not in listed, -counts[t], order[t]))
    return [shown[t] if shown[t].isupper() or not shown[t][1:].islower() else t for t in ranked]


def _ident(w: Widget) -> str:
    e = w.element
    return f"{w.input_name}|{e.resource_id}|{e.text}"


@dataclass
class FormFiller:
    """``overrides`` maps a field's name, resource id, label, autocomplete token or input type to its value."""

    overrides: Mapping[str, str] = field(default_factory=dict)
    # search box identity -> the query it offers now: the box keeps one value (one candidate key) in every state that
    # shows it until that query was typed (``typed``); then the next screen it is on gives the next one
    _terms: dict[str, str] = field(default_factory=dict, repr=False)
    vocab: Vocabulary = field(default_factory=Vocabulary, repr=False)
    used: dict[str, list[str]] = field(default_factory=dict, repr=False)  # search box -> queries typed, in order
    unsubmitted: dict[str, str] = field(default_factory=dict, repr=False)  # search box -> query typed, not submitted
    rejected: dict[str, set[str]] = field(default_factory=dict, repr=False)  # field -> values that hit an error page
    _unproven: list[tuple[str, str]] = field(default_factory=list, repr=False)  # typed since the last good page

    def value_for(self, w: Widget, screen: Screen | None = None) -> str:
        """The value to type or choose, "" to leave the field alone; ``screen``, the screen the field is on, gives
        search boxes their query and tells a search form from a filter bar."""
        e = w.element
        for key in (w.input_name, e.resource_id, e.text, w.autocomplete, w.input_type):
            if key and key in self.overrides:
                return self.overrides[key]
        ident = _ident(w)
        seed = int(hashlib.sha256(ident.encode()).hexdigest()[:8], 16)
        bad = self.rejected.get(ident, set())
        if w.options:
            value = choose_option(w, seed)
            shown = dict(zip(w.options, w.option_labels or w.options, strict=False)).get(value, value).strip()
            return "" if value in bad or shown in bad else value  # a choice is logged by its label
        if w.suggestions:
            fresh = [v for v in w.suggestions if v.strip() and v not in bad and v != w.value]
            return fresh[seed % len(fresh)] if fresh else ""
        if screen is not None and is_search_box(w, screen):
            return self._query(w, screen, ident, seed)
        kind = field_kind(w)
        if kind in FREE_KINDS and not _free_text(w, screen):
            # A plain field that is not free text and whose kind the filler cannot tell (an account, a time range,
            # a filter expression): a value only where the field itself shows what it takes, else left alone.
            value = placeholder_value(w, seed) or (constrain(w, _value(kind, seed)) if w.pattern else "")
        elif kind in ("date", "time", "datetime", "month") and w.input_type not in TYPE_KINDS:
            value = placeholder_value(w, seed) or constrain(w, _value(kind, seed))  # a text field that wants a date
        else:
            value = constrain(w, _value(kind, seed))
        return "" if value in bad else value

    def _query(self, w: Widget, screen: Screen, ident: str, seed: int) -> str:
        if ident in self._terms:
            return self._terms[ident]
        used = self.used.get(ident, [])
        if len(used) >= MAX_QUERIES:
            return ""  # this box was searched enough: it is left alone
        done = {u.lower() for u in used} | {b.lower() for b in self.rejected.get(ident, set())}
        pick = next((q for q in queries(screen, w, self.vocab) if q.lower() not in done), "")
        if not pick and not used:
            pick = _value("search", seed)  # a page without words: one query from the pool
        value = constrain(w, pick) if pick else ""
        if value:  # kept until typed (one candidate key); a screen without words gives none and decides nothing
            self._terms[ident] = value
        return value

    # --- what the crawler tells the filler --------------------------------------------------------------------
    def see(self, screen: Screen) -> None:
        """A screen was read: learn which of its words are chrome."""
        self.vocab.see(screen)

    def typed(self, w: Widget, value: str, screen: Screen | None = None) -> None:
        """``value`` was typed into (or chosen in) ``w``: a search box's query is spent (its next screen gives the
        next one) and waits for its submit; every value waits for a page that proves it acceptable."""
        ident = _ident(w)
        if ident in self._terms or (screen is not None and is_search_box(w, screen)):
            self._terms.pop(ident, None)
            self.used.setdefault(ident, []).append(value)
            self.unsubmitted[ident] = value
        self._unproven.append((ident, value))

    def awaits_submit(self, w: Widget) -> bool:
        """Whether ``w`` is a search box holding the query the crawl typed into it and has not submitted yet."""
        q = self.unsubmitted.get(_ident(w))
        return bool(q) and w.value.strip() == (q or "").strip()

    def submitted(self, w: Widget | None = None) -> None:
        """A query was submitted (Enter in ``w``), or the page changed (``w`` None): nothing waits any more."""
        if w is None:
            self.unsubmitted.clear()
        else:
            self.unsubmitted.pop(_ident(w), None)

    def page_shown(self, error: bool) -> None:
        """The screen an action led to is the app's error page (``error``): the values typed since the last good
        page are rejected for their fields; else, on a new page, they are proven acceptable."""
        if error:
            for ident, value in self._unproven:
                self.rejected.setdefault(ident, set()).add(value)
                if self._terms.get(ident) == value:
                    del self._terms[ident]
        self._unproven.clear()

    def restarted(self) -> None:
        """The app was restarted: what was typed is gone with the page it was typed into."""
        self._unproven.clear()
        self.unsubmitted.clear()
