"""State abstraction: when are two captures "the same screen"?

Two hashes per capture. The **exact** hash covers the location and every element's role, identity, visible
text (normalized), visibility and checked/enabled state; the **structural** hash only location pattern, roles
and identities. Text is normalized (dates, times and numbers become placeholders, whitespace collapsed),
repeated list rows are collapsed to one row template (a list of 6 notes and one of 7 are one screen), and
the values typed into inputs are ignored (typing is not a new screen). Elements are placed by ``slot_keys``, not by
sibling position: a flash message or a breadcrumb inserted above the content renumbers the DOM path of everything
after it (``div[3]`` becomes ``div[4]``), which is not another screen. Android system UI and keyboards never reach
this module (the XML parser drops them).

**Dynamic regions** are learned, not configured, per screen family: when a capture comes back to the same URL
with the same structure and an element's text differs from last time (a rotating banner, a counter the
placeholders did not catch), that element's slot is masked from then on on every screen of that family (the
normalized location: ``/note/<n>``). Slots are layout paths, so one family's changing "tip of the day" paragraph
can share its slot with another family's note body; masking it app-wide would merge every note into one state.
A slot is the app's instead (masked on every screen) when another family shows one of the same changing texts
in it: a shell's rotating banner, learned once on one page, is then masked on pages where it was never seen to
change. Mask entries are strings: ``slot`` (app-wide; also what logs written before family scopes hold) or
``family + SCOPE_SEP + slot``. A perceptual hash of the
screenshot is the secondary check that the pluggable ``Comparator`` may use; it is computed only for a
comparator that uses it (decoding every screenshot costs ~30 ms a step, and curation hashes the stored
screenshots itself).
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import parse_qsl, urlsplit

from graph.screen import Screen, Widget

_DATE = re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b"
                   r"|\d{4}年\d{1,2}月\d{1,2}日")
_TIME = re.compile(r"\b\d{1,2}:\d{2}(:\d{2})?(\s?[ap]\.?m\.?)?\b", re.IGNORECASE)
_NUM = re.compile(r"\d+(?:[.,]\d+)*")
_WS = re.compile(r"\s+")
TEXT_LIMIT = 60
REPEAT_MIN = 3  # a row template seen this many times is a list
MAX_DYNAMIC_PER_VISIT = 3  # more changed elements than this between two visits is not "dynamic content"
SCOPE_SEP = "\x1f"  # between a screen family and a slot in a family-scoped mask entry


def without_dates(text: str) -> str:
    """``text`` without its dates and times: what a clock or a calendar writes, not a name's number."""
    return _TIME.sub(" ", _DATE.sub(" ", text))


def normalize_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """Text with dates, times and numbers replaced by placeholders, whitespace collapsed, truncated."""
    t = _DATE.sub("<date>", text)
    t = _TIME.sub("<time>", t)
    t = _NUM.sub("<n>", t)
    return _WS.sub(" ", t).strip()[:limit]


_SESSION_PARAM = re.compile(r";[^/]*$")  # ``;jsessionid=…`` and other path parameters of a segment
_HEXISH = re.compile(r"^[0-9a-fA-F-]{16,}$")  # UUIDs, hex tokens, commit hashes
_TOKENISH = re.compile(r"^[A-Za-z0-9_-]{20,}$")


def _path_segment(seg: str) -> str:
    """A path segment as state identity reads it: numbers (database keys) and session or record tokens become
    placeholders, since another instance of the app numbers its records and sessions anew."""
    seg = _SESSION_PARAM.sub("", seg)
    if seg.isdigit():
        return "<n>"
    if _HEXISH.match(seg) and any(ch.isdigit() for ch in seg):
        return "<id>"
    if _TOKENISH.match(seg) and any(ch.isdigit() for ch in seg) and any(ch.isupper() for ch in seg) \
            and any(ch.islower() for ch in seg):
        return "<id>"
    return seg


def normalize_location(location: str) -> str:
    """URL path with numeric segments and session/record tokens as placeholders plus sorted query *keys*; Android:
    package/activity.

    No scheme, host or port: state identity is instance-free, so a graph crawled on one instance of an app (an
    environment on an ephemeral port) names the same screens on any other, where replay, probing, the flywheel
    and drift checks run. Which host a page is on stays the crawler's concern (``allowed_hosts``)."""
    if "://" not in location:
        return location
    parts = urlsplit(location)
    path = "/".join(_path_segment(seg) for seg in parts.path.split("/")) or "/"
    keys = sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return path + ("?" + "&".join(keys) if keys else "")


_INDEX = re.compile(r"\[\d+\]")


def stable_resource_id(rid: str) -> str:
    """A resource id with its numbers as placeholders (``payed_for-7`` is ``payed_for-<n>``): ids an app builds from
    its database keys, which another instance of the app numbers differently."""
    return _NUM.sub("<n>", rid)


def row_template(w: Widget, stable_ids: bool = False) -> str:
    """The element's identity with list positions removed: every row of a list shares it. ``stable_ids`` reads the
    resource id through ``stable_resource_id`` (``features``)."""
    e = w.element
    rid = stable_resource_id(e.resource_id) if stable_ids else e.resource_id
    return f"{e.role}|{e.class_name}|{rid}|{_INDEX.sub('', e.path)}"


def element_key(w: Widget) -> str:
    """An element's identity on its screen (role, resource id, DOM path): what an action's key names."""
    e = w.element
    return f"{e.role}|{e.resource_id}|{e.path}" if e.resource_id else f"{e.role}|{e.path}"


def slot_keys(widgets: list[Widget], stable_ids: bool = False) -> list[str]:
    """Each element's place in the screen's state identity, without sibling positions: its row template (role,
    class, resource id, path with the ``[n]`` positions removed) and which occurrence of that template it is, in
    page order. A flash message or an extra breadcrumb inserted above the content shifts every later sibling's
    ``div[3]`` to ``div[4]``, but not the content's template nor its order among its look-alikes, so the screen stays
    one state; two sibling buttons stay two slots (``…/button#1``, ``…/button#2``), and an element that appears
    (a dialog's buttons) still adds a slot. Android hierarchy paths are index paths and are kept as they are."""
    seen: Counter[str] = Counter()
    out = []
    for w in widgets:
        tmpl = row_template(w, stable_ids)
        seen[tmpl] += 1
        out.append(f"{tmpl}#{seen[tmpl]}")
    return out


@dataclass
class Features:
    """Everything the comparator needs from one capture, computed once."""

    location: str
    structure: list[str]
    content: dict[str, str]  # element key -> normalized text/state (non-repeated elements only)
    templates: list[str]  # collapsed row templates
    structural_hash: str
    phash: int | None = None
    raw_location: str = ""


# ARIA live regions: a flash ("Saved", "You are logged in"), a toast, a clock. They come and go on one screen, so
# they are no part of state identity (``graph.user_screens`` skips them for screens likewise); their controls are
# still offered while they show. A chat's ``log`` is content, and stays.
LIVE_ROLES = frozenset({"alert", "status", "timer", "marquee"})


def live_elements(widgets: list[Widget]) -> set[int]:
    """``id()`` of the widgets that are a live region's element (their role) or inside one (under a captured
    element with a live role, by DOM path)."""
    roots = tuple(w.element.path + "/" for w in widgets if w.element.role in LIVE_ROLES and w.element.path)
    return {id(w) for w in widgets
            if w.element.role in LIVE_ROLES or (roots and w.element.path.startswith(roots))}


def _digest(items: list[str]) -> str:
    return hashlib.sha256("\x1e".join(items).encode("utf-8")).hexdigest()[:20]


def features(screen: Screen, with_phash: bool = True, stable_ids: bool = True) -> Features:
    """The capture's state identity. ``stable_ids`` (``row_template``, the default everywhere identity is
    computed: the crawl's state ids, replay, rollouts) reads numbers in resource ids as placeholders: another
    instance of the app numbers its records anew (``note-17`` there is ``note-3`` here), and a crawl's state ids
    must name the same screens on any instance. Rows ``note-1`` … ``note-7`` are then one list's rows, as rows
    without ids always were. ``stable_ids=False`` is the older exact reading, kept for comparisons."""
    live = live_elements(screen.widgets)
    widgets = [w for w in screen.widgets if id(w) not in live]
    counts = Counter(row_template(w, stable_ids) for w in widgets)
    repeated = {t for t, n in counts.items() if n >= REPEAT_MIN}
    structure: set[str] = set()
    content: dict[str, str] = {}
    single = [w for w in widgets if row_template(w, stable_ids) not in repeated]
    slots = dict(zip(map(id, single), slot_keys(single, stable_ids), strict=True))
    for w in widgets:
        e = w.element
        tmpl = row_template(w, stable_ids)
        vis = "v" if e.visible else "h"
        if tmpl in repeated:
            structure.add(f"*{tmpl}|{vis}")
            continue
        slot = slots[id(w)]
        structure.add(f"{slot}|{vis}")
        text = "" if e.editable else normalize_text(e.text or e.content_desc)
        state = f"{int(e.checked)}{int(e.enabled)}{vis}"
        content[slot] = f"{text}|{state}"
    loc = normalize_location(screen.location)
    struct_items = [loc, *sorted(structure)]
    return Features(
        location=loc,
        structure=struct_items,
        content=content,
        templates=sorted(repeated),
        structural_hash=_digest(struct_items),
        phash=perceptual_hash(screen.screenshot) if with_phash else None,
        raw_location=screen.location,
    )


def exact_hash(f: Features, mask: set[str] | frozenset[str] = frozenset()) -> str:
    """The capture's identity with ``mask``'s slots left out; ``mask`` may hold family-scoped entries, and only
    those of ``f``'s family (and the app-wide ones) apply."""
    masked = masked_slots(mask, f.location)
    items = [f.structural_hash, *(f"{k}={v}" for k, v in sorted(f.content.items()) if k not in masked)]
    return _digest(items)


def scoped(family: str, slot: str) -> str:
    """The mask entry for ``slot`` on the screens of ``family`` only."""
    return f"{family}{SCOPE_SEP}{slot}"


def masked_slots(mask: set[str] | frozenset[str], family: str) -> set[str]:
    """The slots ``mask`` hides on a screen of ``family``: the app-wide entries and that family's own."""
    out = set()
    for entry in mask:
        fam, sep, slot = entry.partition(SCOPE_SEP)  # a location never holds the separator; a slot might
        if not sep:
            out.add(entry)
        elif fam == family:
            out.add(slot)
    return out


def perceptual_hash(png: bytes) -> int | None:
    """64-bit DCT perceptual hash of a screenshot; None when the bytes are not an image."""
    try:
        import imagehash
        from PIL import Image

        with Image.open(io.BytesIO(png)) as img:
            img.draft("L", (256, 256))
            return int(str(imagehash.phash(img.convert("L"))), 16)
    except Exception:
        return None


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


class Comparator(Protocol):
    """Decides state identity. ``key`` must be equal for captures it considers the same state."""

    @property
    def uses_phash(self) -> bool:
        """Whether ``same`` looks at ``Features.phash`` (else it is not computed)."""
        ...

    def key(self, f: Features, mask: set[str]) -> str: ...
    def same(self, a: Features, b: Features, mask: set[str]) -> bool: ...


class ExactComparator:
    """Same state = same masked exact hash; with ``max_phash_distance`` the screenshots must also look alike.

    The perceptual check splits screens the DOM/XML cannot tell apart (a canvas, a theme drawn by CSS only);
    leave it off (None) for apps whose images rotate.
    """

    def __init__(self, max_phash_distance: int | None = None):
        self.max_phash_distance = max_phash_distance

    @property
    def uses_phash(self) -> bool:
        return self.max_phash_distance is not None

    def key(self, f: Features, mask: set[str]) -> str:
        return exact_hash(f, mask)

    def same(self, a: Features, b: Features, mask: set[str]) -> bool:
        if self.key(a, mask) != self.key(b, mask):
            return False
        if self.max_phash_distance is None or a.phash is None or b.phash is None:
            return True
        return hamming(a.phash, b.phash) <= self.max_phash_distance


@dataclass
class StateTable:
    """Assigns state ids to captures, learns dynamic regions and merges states that the mask makes equal.

    Ids are deterministic (``app`` + structural hash + masked exact hash at creation), so two crawls of the
    same app name the same screen alike. A merge never rewrites history: the absorbed id is kept as an alias
    of the surviving one (``canonical``), and the graph store persists aliases.
    """

    app_id: str
    comparator: Comparator = field(default_factory=ExactComparator)
    mask: set[str] = field(default_factory=set)
    reps: dict[str, Features] = field(default_factory=dict)  # state id -> representative features
    by_struct: dict[str, list[str]] = field(default_factory=dict)
    last_at: dict[tuple[str, str], Features] = field(default_factory=dict)  # (structure, raw url) -> last
    aliases: dict[str, str] = field(default_factory=dict)
    # slot -> family -> the texts seen changing there (this process only: a resumed crawl reads its mask from
    # the log, and only a slot's promotion to app-wide needs these)
    dynamic_texts: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    def canonical(self, sid: str) -> str:
        seen = set()
        while sid in self.aliases and sid not in seen:
            seen.add(sid)
            sid = self.aliases[sid]
        return sid

    def mask_for(self, family: str) -> set[str]:
        """The slots masked on a screen of ``family`` (a ``Features.location``)."""
        return masked_slots(self.mask, family)

    def learn(self, f: Features) -> set[str]:
        """New mask entries: slots whose text changed since the last capture of the same structure and URL
        (scoped to ``f``'s family), and family-scoped slots that turn out to be the app's shell (app-wide)."""
        new = self._shared(f)
        prev = self.last_at.get((f.structural_hash, f.raw_location))
        self.last_at[(f.structural_hash, f.raw_location)] = f
        if prev is None:
            return self._add(new)
        changed = {k for k, v in f.content.items() if k in prev.content and prev.content[k] != v}
        # Only text changes are dynamic; a toggled checkbox (state suffix) is a real state change.
        changed = {k for k in changed if prev.content[k].rsplit("|", 1)[1] == f.content[k].rsplit("|", 1)[1]}
        # A clock, banner or counter is a few elements; a page whose text changed wholesale (language switch,
        # another record) is a different screen, and learning it would mask everything.
        if len(changed) > max(MAX_DYNAMIC_PER_VISIT, len(f.content) // 10):
            return self._add(new)
        masked = self.mask_for(f.location)
        for slot in changed - masked:
            seen = self.dynamic_texts.setdefault(slot, {})
            seen.setdefault(f.location, set()).update((prev.content[slot], f.content[slot]))
            shell = any(rep.location != f.location and rep.content.get(slot) in seen[f.location]
                        for rep in self.reps.values())
            new.add(slot if shell else scoped(f.location, slot))
        return self._add(new)

    def _shared(self, f: Features) -> set[str]:
        """Slots masked in another family whose changing texts ``f`` shows in the same place: the app's shell."""
        out = set()
        for slot, by_family in self.dynamic_texts.items():
            if slot in self.mask or f.content.get(slot) is None:
                continue
            if any(fam != f.location and f.content[slot] in texts for fam, texts in by_family.items()):
                out.add(slot)
        return out

    def _add(self, entries: set[str]) -> set[str]:
        new = entries - self.mask
        self.mask |= new
        return new

    def assign(self, f: Features) -> tuple[str, list[tuple[str, str]]]:
        """The state id of ``f`` and any merges (absorbed, survivor) the capture caused."""
        merges: list[tuple[str, str]] = []
        if self.learn(f):
            merges = self._remerge()
        mask = self.mask_for(f.location)
        for sid in self.by_struct.get(f.structural_hash, []):
            if self.canonical(sid) == sid and self.comparator.same(self.reps[sid], f, mask):
                return sid, merges
        sid = "s" + hashlib.sha256(
            f"{self.app_id}\x1f{f.structural_hash}\x1f{self.comparator.key(f, mask)}".encode()
        ).hexdigest()[:15]
        if sid in self.reps:  # same key as an absorbed state: reuse its survivor
            return self.canonical(sid), merges
        self.reps[sid] = f
        self.by_struct.setdefault(f.structural_hash, []).append(sid)
        return sid, merges

    def _remerge(self) -> list[tuple[str, str]]:
        merges = []
        for ids in self.by_struct.values():
            live = [s for s in ids if self.canonical(s) == s]
            if len(live) < 2:
                continue
            mask = self.mask_for(self.reps[live[0]].location)  # one structure: one location, one family
            for i, a in enumerate(live):
                if self.canonical(a) != a:
                    continue
                for b in live[i + 1:]:
                    if self.canonical(b) == b and self.comparator.same(self.reps[a], self.reps[b], mask):
                        self.aliases[b] = a
                        merges.append((b, a))
        return merges

    def restore(self, sid: str, f: Features) -> None:
        """Re-register a state loaded from the graph store (resume)."""
        if sid not in self.reps:
            self.reps[sid] = f
            self.by_struct.setdefault(f.structural_hash, []).append(sid)
        self.last_at[(f.structural_hash, f.raw_location)] = f
