"""Near-duplicate screens judged by what is on them: a step's element tree, not its pixels.

A global image distance cannot tell "another item on the same template" from "the same screen with another clock":
both move a few percent of the pixels. The element tree can. Two captures are compared with the graph's own
screen-identity features (``graph.abstraction.features``: the location family, the layout slots, each single
element's normalized text — numbers, dates and times already placeholders — and list rows collapsed to templates):

- **where**: the location family must match (``/notes/<n>``, query keys), or it is another page;
- **layout**: the slots present on one side only (a flash message, a breadcrumb, a highlight, an open menu) are
  counted; a few are dynamic furniture, many are another view;
- **content**: the texts of slots on both sides are compared; a slot *learned* to be dynamic — one whose text was
  seen to change while everything else on the capture stayed the same, the crawler's own rule
  (``StateTable.learn``) run over the whole corpus — is not counted (rotating banners, counters, trails);
- **lists**: the rows of collapsed lists are compared as sets of normalized texts (a filter or another page of
  results keeps the template but changes the rows).

``Sketch`` keeps only hashes of these, so what crosses a shuffle per distinct screenshot is small. No app is named
here: what counts as dynamic is learned from the data, never configured per app.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import TypeAdapter

from filters.pickling import fast_state
from filters.pixel_blocks import THUMB_H, THUMB_W, changed_share, pixels, region_changed
from graph.abstraction import (
    REPEAT_MIN,
    Features,
    StateTable,
    features,
    normalize_location,
    normalize_text,
    row_template,
    slot_keys,
)
from graph.screen import Screen, Widget
from graph.user_screens import FIELD_ROLES
from schemas.element import Element


def _h(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def screen_of(location: str, elements: Iterable[Element | Mapping[str, Any]], platform: str = "web") -> Screen:
    """A ``Screen`` (no pixels) from a stored observation's location and elements (records or their JSON)."""
    widgets = [Widget(element=e if isinstance(e, Element) else Element.model_validate(e)) for e in elements]
    return Screen(platform, location, 0, 0, 1.0, widgets, b"")  # type: ignore[arg-type]


def capture_features(location: str, elements: Iterable[Element | Mapping[str, Any]]) -> Features:
    """The graph's screen-identity features of a stored capture (database numbers in ids read as placeholders)."""
    return features(screen_of(location, elements), with_phash=False, stable_ids=True)


@fast_state
@dataclass(frozen=True, slots=True)
class Sketch:
    """A capture's identity, hashed: what dedupe keeps of a step's element tree (a few KB at most).

    ``slots`` are the single elements by their slot (``graph.abstraction.slot_keys``: the place in the layout,
    not the DOM position) with a hash of their normalized text — for an input, the value typed into it — and their
    state (checked, enabled, visible), in the ``text|state`` form of ``Features.content``; ``rows`` are the rows of
    collapsed lists (template, text and state). Both keep each element's vertical extent: a web capture lists only
    the elements in the viewport, so a scrolled capture of one screen lacks some and shows others, and the offset
    between the two tells which of those were merely scrolled out of view."""

    family: str  # normalized location without the host: path with numbers as placeholders, query keys
    route: str  # path, query and fragment: a revisit of the same URL shares it
    height: int  # viewport height, in the same pixels as the boxes
    slots: tuple[tuple[str, str, int, int], ...]  # sorted (slot hash, "text hash|state", top, bottom)
    rows: tuple[tuple[int, str, int, int], ...]  # (row hash, state, top, bottom) of collapsed lists' rows
    width: int = 0  # viewport width, in the same pixels as the boxes (0: unknown)
    fields: tuple[tuple[str, int, int, int, int], ...] = ()  # (slot hash, box) of the form fields shown

    def content(self) -> dict[str, str]:
        return {k: v for k, v, _, _ in self.slots}


def _family(location: str) -> str:
    """``normalize_location`` without the host (two crawls of one app may serve it on other ports) and without
    query parameters left blank (an empty filter form's ``?search=&payer=`` selects nothing)."""
    if "://" not in location:
        return location
    p = urlsplit(location)
    query = "&".join(x for x in p.query.split("&") if x and not x.endswith("="))
    return normalize_location(p._replace(netloc="", query=query).geturl().removeprefix("//"))


def _route(location: str) -> str:
    if "://" not in location:
        return location
    p = urlsplit(location)
    return f"{p.path}?{p.query}#{p.fragment}"


def _value(e: Element) -> str:
    state = f"{int(e.checked)}{int(e.enabled)}{'v' if e.visible else 'h'}"
    typed = "\x1etyped" if e.editable else ""  # an input's value: another value typed is another form state
    return f"{normalize_text(e.text or e.content_desc)}{typed}|{state}"


def _is_field(e: Element) -> bool:
    return e.editable or e.role in FIELD_ROLES  # the screen definition's form fields (``graph.user_screens``)


def sketch(location: str, elements: Sequence[Element | Mapping[str, Any]], height: int = 0,
           width: int = 0) -> Sketch:
    """The sketch of one capture: a stored observation's location, elements and screenshot height and width."""
    screen = screen_of(location, elements)
    counts = Counter(row_template(w, True) for w in screen.widgets)
    repeated = {t for t, n in counts.items() if n >= REPEAT_MIN}
    single = [w for w in screen.widgets if row_template(w, True) not in repeated]
    slots = tuple(sorted((f"{_h(k):016x}", f"{_h(_value(w.element).rsplit('|', 1)[0]):016x}|"
                          f"{_value(w.element).rsplit('|', 1)[1]}", int(w.element.bbox.y1), int(w.element.bbox.y2))
                         for k, w in zip(slot_keys(single, True), single, strict=True)))
    rows = tuple(sorted((_h(f"{row_template(w, True)}\x1f{_value(w.element).rsplit('|', 1)[0]}"),
                         _value(w.element).rsplit("|", 1)[1], int(w.element.bbox.y1), int(w.element.bbox.y2))
                        for w in screen.widgets if row_template(w, True) in repeated))
    fields = tuple(sorted((f"{_h(k):016x}", int(b.x1), int(b.y1), int(b.x2), int(b.y2))
                          for k, w in zip(slot_keys(single, True), single, strict=True)
                          if _is_field(w.element) and w.element.visible for b in (w.element.bbox,)))
    return Sketch(_family(location), _route(location), int(height), slots, rows, int(width), fields)


_ELEMENTS_JSON = TypeAdapter(list[Element])


class SketchMemo:
    """``sketch`` with a bounded memo: the steps of a run revisit the same screens (a crawl returns to its lists, a
    recovery repeats its demonstration's steps), and a sketch costs ten times the JSON of the elements it is keyed
    by. ``Sketch`` is frozen, so steps may share one. Keys hold the elements' JSON, so memory is bounded by
    ``max_entries`` element trees; the memo is cleared, not evicted entry by entry, when full."""

    def __init__(self, max_entries: int = 4096):
        self.max_entries = max_entries
        self.memo: dict[tuple[str, int, int, bytes], Sketch] = {}

    def __call__(self, location: str, elements: Sequence[Element], height: int = 0, width: int = 0) -> Sketch:
        key = (location, int(height), int(width), _ELEMENTS_JSON.dump_json(list(elements)))
        found = self.memo.get(key)
        if found is None:
            if len(self.memo) >= self.max_entries:
                self.memo.clear()
            found = self.memo[key] = sketch(location, elements, height, width)
        return found


def _as_features(s: Sketch) -> Features:
    """A sketch in the shape ``StateTable`` reads (its rule for learning dynamic slots works on hashes alike)."""
    structure = [s.family, *sorted({f"{k}|{v.rsplit('|', 1)[1]}" for k, v, _, _ in s.slots})]
    return Features(location=s.family, structure=structure, content=s.content(), templates=[],
                    structural_hash=hashlib.sha256("\x1e".join(structure).encode()).hexdigest()[:20],
                    raw_location=s.route)


def learn_dynamic(sketches: Iterable[Sketch]) -> dict[str, set[str]]:
    """family → the slots whose text is dynamic there, learned by the crawler's own rule over the corpus
    (``StateTable.learn``): a slot whose text changed between two captures of one URL and one layout where little
    else changed (a banner, a counter), app-wide once its changing texts show on another family too (the shell).
    Feed one app's sketches in a deterministic order."""
    table = StateTable("dedupe")
    feats = [_as_features(s) for s in sketches]
    for f in feats:
        table.learn(f)
    return {f.location: table.mask_for(f.location) for f in feats}


@fast_state
@dataclass(frozen=True, slots=True)
class Limits:
    """How different two captures of one screen may be. They count elements, so they do not depend on the screen
    size; calibrated on ``benchmarks/data/neardup`` (``benchmarks/bench_dedupe.py`` prints the result)."""

    layout: int = 4  # elements on one side only, not explained by scrolling (a flash message, a crumb, a highlight)
    layout_share: float = 0.1  # ... or this share of the elements of both, when more
    texts: int = 0  # shared slots whose text differs, dynamic slots left out
    pixels: float = 0.03  # most changed thumbnail blocks when the elements line up exactly (typed values, a theme)
    phash: int = 6  # most pHash bits apart when the elements line up unscrolled (the curation's pHash radius)
    rows: float = 0.8  # least share of the list rows one side shows in the other's view that the other has too
    fields: float = 0.01  # most changed thumbnail pixels inside one form field (another value typed or chosen)


def _offset(a: Sketch, b: Sketch) -> int:
    """How far b's content sits below a's (the scroll between them): the median shift of the slots both show."""
    ya = {k: y for k, _, y, _ in a.slots}
    shifts = sorted(y - ya[k] for k, _, y, _ in b.slots if k in ya)
    return shifts[len(shifts) // 2] if shifts else 0


def _in_view(top: int, bottom: int, height: int) -> bool:
    """Whether an element at this extent would be wholly in a viewport of ``height`` (then a capture lists it)."""
    return height <= 0 or (top >= 0 and bottom <= height)


def difference(a: Sketch, b: Sketch, dynamic: set[str] | frozenset[str] = frozenset()
               ) -> tuple[int, int, int, float]:
    """(elements on one side only that the other would show in view, shared slots with another text, shared slots
    in another state, the share of list rows in the other's view that the other shows too)."""
    dy = _offset(a, b)
    ca, cb = a.content(), b.content()
    only = sum(1 for k, _, t, bo in a.slots if k not in cb and _in_view(t + dy, bo + dy, b.height))
    only += sum(1 for k, _, t, bo in b.slots if k not in ca and _in_view(t - dy, bo - dy, a.height))
    texts = states = 0
    for k in ca.keys() & cb.keys():
        if ca[k] == cb[k]:
            continue
        (ta, sa), (tb, sb) = ca[k].rsplit("|", 1), cb[k].rsplit("|", 1)
        if sa != sb:
            states += 1
        elif ta != tb and k not in dynamic:
            texts += 1
    # List rows either side would show in the other's view must be in the other's rows (at any place in it); a
    # row the other shows in another state (a ticked checkbox in a list of them) is a state change.
    rows_a, rows_b = {(h, st) for h, st, _, _ in a.rows}, {(h, st) for h, st, _, _ in b.rows}
    texts_a, texts_b = {h for h, _ in rows_a}, {h for h, _ in rows_b}
    expected = [((h, st) in rows_b, h in texts_b) for h, st, t, bo in a.rows if _in_view(t + dy, bo + dy, b.height)]
    expected += [((h, st) in rows_a, h in texts_a) for h, st, t, bo in b.rows
                 if _in_view(t - dy, bo - dy, a.height)]
    states += sum(1 for same, shown in expected if shown and not same)
    return only, texts, states, (sum(same for same, _ in expected) / len(expected) if expected else 1.0)


def fields_changed(a: Sketch, b: Sketch, thumbs: tuple[bytes, bytes]) -> float:
    """The most changed share of one form field's pixels between two captures: each field both show (by its
    slot), at its own place on each side (a scroll moves it), where it has one size on both. The element tree does
    not hold what a field shows (a typed date, a chosen option), the screenshot does, and within the field's box a
    clock or a banner elsewhere on the screen cannot weigh in. 0.0 where sizes are unknown."""
    if not (a.width and a.height and b.width and b.height):
        return 0.0
    boxes_b = {k: box for k, *box in b.fields}
    shared = [(_scaled(box_a, a), _scaled(boxes_b[k], b)) for k, *box_a in a.fields if k in boxes_b]
    if not shared:
        return 0.0
    x, y = pixels(thumbs[0]), pixels(thumbs[1])
    return max(region_changed(x, y, box_a, box_b) for box_a, box_b in shared)


def _scaled(box: Sequence[int], s: Sketch) -> tuple[int, int, int, int]:
    sx, sy = THUMB_W / s.width, THUMB_H / s.height
    return round(box[0] * sx), round(box[1] * sy), round(box[2] * sx), round(box[3] * sy)


def same_screen(a: Sketch, b: Sketch, dynamic: set[str] | frozenset[str] = frozenset(),
                limits: Limits = Limits(), phashes: tuple[int, int] | None = None,
                thumbs: tuple[bytes, bytes] | None = None) -> bool:
    """Whether two captures show one screen: one family, the same elements give or take a few (and those scrolled
    out of view), the same texts but for dynamic ones, the same element states, mostly the same list rows.

    The tree does not carry a theme, the values typed into a form or what a canvas draws, so captures whose elements
    line up without a scroll must also look alike: within ``limits.phash`` bits of their 64-bit pHashes
    (``phashes``), and — when no element is on one side only, so nothing on screen explains a changed region —
    with at most ``limits.pixels`` of their thumbnails' blocks changed (``thumbs``, ``filters.pixel_blocks``).
    A scrolled pair is not held to either (its pixels moved). Every pair is held to ``limits.fields``: the pixels
    inside each form field both show (``fields_changed``), where another value typed or chosen shows."""
    if a.family != b.family:
        return False
    unscrolled = _offset(a, b) == 0
    if phashes is not None and unscrolled and (phashes[0] ^ phashes[1]).bit_count() > limits.phash:
        return False
    only, texts, states, overlap = difference(a, b, dynamic)
    size = len(a.slots) + len(b.slots)
    if not (only <= max(limits.layout, limits.layout_share * size) and texts <= limits.texts and states == 0
            and overlap >= limits.rows):
        return False
    if thumbs is not None and fields_changed(a, b, thumbs) > limits.fields:
        return False
    return not (thumbs is not None and unscrolled and only == 0
                and changed_share(thumbs[0], thumbs[1], align=False) > limits.pixels)
