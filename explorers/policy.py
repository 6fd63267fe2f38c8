"""Exploration policies: what to do next on this screen.

``GreedyPolicy`` is DroidBot's dfs_greedy with the fixes its users ask for, steered by an estimate of which
action is likely to reach a *new* state. Every untried action belongs to a novelty class — a link to a URL no
state has yet, a link to the page itself, an element never tried anywhere, one tried on another screen, typing,
a submit button whose form still has empty required fields, scrolling, back — whose chance of reaching a new
state starts at a prior and is learned from what this crawl's actions of that class did (typing into a field
rarely makes a new screen; in an app whose search box opens a popup it does). The policy takes the action with
the best chance per step spent: an action here, or one in another known state reached by walking the shortest
known path, by opening a known screen's URL directly (web: one navigation, and where a URL landed is learned), or
by restarting from the entry and walking from there — a restart and an opened URL are a step of the budget like
any action. A screen family (the screens of one URL pattern) whose last few untried actions all found nothing new
is explored enough: its remaining actions are worth a fraction of their class's chance, so the crawl moves on
instead of burning the budget there (links to URLs never seen still count in full). Rows of a list
count as one choice (two rows tried per screen, and a family of rows, pages or menu entries tried a few times
anywhere is explored enough), elements that did nothing elsewhere are skipped, and it stops when nothing
anywhere is left to try.

A class the priors call unpromising is probed: until the crawl has tried it twice its chance is at least
PROBE_FLOOR, then its own record decides (TiddlyWiki's ``#Title`` links look like anchors to the page itself and
open a tiddler each). An action that left the app (a link out, a "back" past a fresh session's first screen) is
booked as tried and found nothing, and back from a kind of screen where it always left the app is not tried again
(on the web the crawler offers no such back in the first place where DevTools shows the tab's history; this is for
Android's root screens and sessions without DevTools).

An element's own record counts for typing, scrolling and elements tried elsewhere: the search box typed into in
state after state without showing anything new is worth less each time, while a fresh field keeps its class's chance.

Where an element sits and what it did count too. The untried actions taken under one ancestor (a toolbar, a
sidebar, a dialog) of one screen family are that region's record, and a region whose actions changed nothing damps
its other unlabelled buttons and elements (Node-RED's canvas zoom tools are not pressed one by one; a region only
ever lowers a class's chance, and links and typing are judged by their own record). An element that left the screen
as it was wherever it was tried is "no-effect". A fragment that is a client-side route (``#/trails/overview``,
``#flow/tab2``) names a screen, so such a link is a link to a new URL, not to the page itself, and an ``href="#"`` or
an ``#anchor`` on a routed screen is a script's button. On a fresh session's first screen "back" leaves the app;
where that is all the screen offers (an editor still drawing itself) the entry is reloaded a few times instead.

What an element did is remembered per (identity, label): when the app switches language or account, the same
navigation link says something else and is "relabelled" — a new context worth exploring, not a link already
followed (for two contexts: the thirtieth language of a language menu is not a new context). Filling a
required field is worth the submit it unblocks (only when the safety guard lets that submit be pressed); a
submit pressed before is worth pressing again when its form holds something else (where it leads depends on the
form, not the button); re-choosing the radio option a form came with undoes the choice just
made. Walks follow where an action led the last time (apps change their own data: a settle page after a
settlement), a hop that missed twice in a row (led elsewhere, or was not on screen) is no longer walked, a state that
APPROACH_LIMIT navigation steps did not get the crawl to act in is given up, and an action a state stopped offering is
given up after two visits. A label whose elements changed nothing three times (settings toggles that re-render
the same screen, an edit button whose confirm dialog is cancelled) is not worth another try.

Where the crawl measures the app's own code (``js_coverage: true``), the policy is coverage-guided, as search-based
app testers are: what an action found is judged by the code it made the app run, not only by the screen it showed.
An action that ran at least CODE_NEW_MIN characters of the app's scripts no earlier action had run counts as a full
discovery; one that only reached an unseen screen counts STATE_ONLY_CREDIT of one. An editor whose sidebar tabs and
workspace tabs combine into hundreds of "new" screens (each tab × each flow) then stops looking promising once the
combinations stop running new code, and the budget goes to what does (a dialog, a menu, a search).

``RandomPolicy`` is the uniform-random baseline (OS-Genesis-style random walk), ``DepthFirstPolicy`` DroidBot's
naive depth-first one (first untried action, else back). A policy sees only candidates
the safety guard allowed, and returns a reason with every decision for the audit log.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

from explorers.candidates import PRIORITY, Candidate
from explorers.graph import Graph
from graph.abstraction import normalize_location, normalize_text
from graph.user_screens import hash_route
from schemas import ActionType

MAX_WALK = 12  # consecutive walking steps without reaching a fresh action before a restart

# Prior chance that an action of each class reaches a state never seen before, and how many observations the
# prior is worth against the crawl's own counts.
NOVELTY_PRIORS = {
    "link-new-url": 0.9, "relabelled": 0.8, "element-new": 0.6, "scroll": 0.4, "submit-again": 0.4, "other": 0.3,
    "type": 0.25, "link-known-url": 0.25, "element-seen": 0.2, "back": 0.1, "repeat-known": 0.1,
    "radio-revert": 0.1, "link-self": 0.05, "dead-label": 0.03, "submit-blocked": 0.05, "link-external": 0.02,
    "family-seen": 0.1, "no-effect": 0.05, "back-exit": 0.01, "scroll-dry": 0.01,
    "menu-seen": 0.02,
}
PRIOR_WEIGHT = 3.0
# A class with a low prior would never be tried, so the crawl would never learn that this app differs (TiddlyWiki's
# ``#Title`` links look like anchors to the page itself and open a tiddler each; a list's rows past the family limit
# each show another record). Until a class has been tried PROBE_TRIES times its chance is at least PROBE_FLOOR (just
# above MIN_NOVELTY: probed where nothing better is on screen, not sought out elsewhere); after that its own record
# decides. Not probed: classes whose low value is this crawl's evidence about the element itself (it changed nothing,
# led only to known screens, its label never did anything), or whose cost is known (leaving the app, undoing the
# choice just made, a submit the browser or server refuses for its empty required fields), and back, which returns to a
# screen the crawl has seen (its record says nothing about this app that it does not already know).
PROBE_TRIES = 2
PROBE_FLOOR = 0.25
UNPROBED = frozenset({"back", "back-exit", "link-external", "radio-revert", "submit-blocked", "dead-label",
                      "no-effect", "repeat-known", "scroll-dry", "menu-seen"})
# Below this chance an untried action is only taken when no state within reach offers a better one: the
# actions of the current state come first (leaving means coming back later), unless they are all unpromising.
MIN_NOVELTY = 0.2
FILL_DISCOUNT = 0.8  # a required field is worth this share of the submit it unblocks
HOP_MISS_LIMIT = 2  # consecutive times a known hop led elsewhere (or was not on screen) before walks stop using it
# Navigation steps (walk steps, opened URLs, restarts) spent towards one state without acting there before it is given
# up: a route that keeps failing in a way no single check sees (its hop missing from the screen, a landing that sends
# the walk elsewhere) must not take the rest of the budget. A walk of MAX_WALK steps fits twice.
APPROACH_LIMIT = 2 * MAX_WALK
REPLANS = 4  # times one decision plans again (its first hop not on screen, its target given up) before restarting
FUTILE_RESTARTS = 2  # restarts in a row with no known route anywhere before the crawl stops
DEAD_LABEL_TRIES = 3  # elements with one label that changed nothing this often are not worth another try
ABSENT_LIMIT = 2  # visits to a state without an action it once offered before that action is given up
SUBMIT_TYPES = ("submit", "image", "")
# A family of look-alike actions (rows of a list, pages of a pager, the entries of a language menu) tried this often
# across all screens is explored enough: each screen's group limit alone lets a 40-language menu, where every
# entry makes a new screen with a fresh menu, take the whole budget.
FAMILY_LIMIT = 4
FAMILY_CODE_WINDOW = 2  # coverage-guided: a family is explored enough once its last this-many tries ran no new code
# Labels an element may be tried with before a further relabelling (another language, another account) is no longer
# a new context worth exploring: the first switch shows the app in another context, the thirtieth shows it again.
RELABEL_LIMIT = 2
# A screen family whose last CONTEXT_WINDOW untried actions reached nothing new is explored enough: its untried
# actions are then worth CONTEXT_DAMP of their class's chance (a link to a URL never seen is exempt).
CONTEXT_WINDOW = 6
CONTEXT_DAMP = 0.25
LANDING_RETRIES = 3  # reloads of an entry that offered nothing but "back" before going back is tried
OPEN_MISS_LIMIT = 2  # consecutive times opening a URL showed another state than the last time before it is not used
# Screen regions: the untried actions taken under one ancestor element (a toolbar, a sidebar, a menu) of one screen
# family predict its other actions: a canvas toolbar whose zoom buttons re-render the same screen is not worth
# pressing button by button, while a tab strip whose first tab opened a panel is. An element's REGION_DEPTH nearest
# ancestors refine the class's chance in turn, widest first, each estimate counting as REGION_WEIGHT observations
# against the region's own; the result only ever lowers the class's chance.
REGION_DEPTH = 3
REGION_WEIGHT = 2.0
# The classes a region speaks for: actions the element's own record says little about (never tried, or tried on
# other screens, or a form's submit). An element that led only to known screens or changed nothing is judged by
# that record, a link by its target (a link to a known page is how synthesis learns equivalent controls: the
# sidebar's and the page's "New note"), and typing by the form it fills, whatever its neighbours did.
REGION_CLASSES = frozenset({"element-new", "element-seen", "submit-again", "submit-blocked", "other"})
# An element's own record: typing into the same field (its value comes from the same filler) or scrolling the same
# page in yet another state mostly shows what it showed before (TiddlyWiki's search box, typed into 38 times in one
# 200-action crawl for 6 discoveries). For these classes the discoveries of the element's earlier untried actions
# refine the class's chance, weighing ELEMENT_WEIGHT observations against them; like a region, it only lowers it.
ELEMENT_CLASSES = frozenset({"type", "scroll", "element-seen", "link-known-url", "submit-again"})
ELEMENT_WEIGHT = 2.0
# Coverage-guided crawls (see the module docstring): characters of the app's scripts that must run for the first time
# for an action to count as a full discovery (a hover or focus handler runs a few hundred), and what reaching an unseen
# screen without running new code is worth.
CODE_NEW_MIN = 500
STATE_ONLY_CREDIT = 0.2
# Content, not states: scrolling a screen family is over once SCROLL_DRY_LIMIT scrolls in a row showed no element it
# had not shown before (the first dry one may be a slow page: one more try), and a family of links that all lead to
# one route with another query value or to the same page in another language (a sort or language menu) is explored
# after VARIANT_LIMIT of its entries.
SCROLL_DRY_LIMIT = 2
VARIANT_LIMIT = 2


@dataclass
class Decision:
    kind: str  # act | restart | open (a known URL, web) | stop
    reason: str
    candidate: Candidate | None = None
    url: str = ""


@dataclass
class _Plan:
    """How to reach the state with the next action worth taking."""

    target: str
    hop: tuple[str, str] | None  # the first walk step (state, action key), for a walk
    distance: int  # steps spent before the action: walk steps, plus one for an opened URL or a restart
    how: str  # walk | open | restart
    url: str = ""  # for open


class Policy:
    """The contract between the crawler and a policy: ``choose`` decides, the other hooks are what the crawler
    tells a policy (or asks of it) and do nothing unless a policy overrides them. The crawler calls each one
    directly, so a new policy sees at a glance everything it may react to."""

    name: str = "policy"
    # Steps taken by this policy are logged as probe steps (not spent from the crawl's own budget).
    records_probe_steps: ClassVar[bool] = False
    # Web crawls set this: may the policy open a URL directly (an app page nothing on the deny-list names)?
    open_filter: Callable[[str], bool] | None = None

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision:
        raise NotImplementedError

    def snapshot(self) -> dict[str, Any] | None:
        """What a resumed crawl should restore (None: nothing worth keeping)."""
        return None

    def restore(self, data: dict[str, Any]) -> None:
        """Take back a ``snapshot`` after a crawl was killed and resumed."""

    def restarted(self) -> None:
        """The crawler restarted the app on its own (an error, leaving the app): not the last action's doing."""

    def left_app(self) -> None:
        """The last action left the app (an external page, another package): it found nothing."""

    def code_reached(self, chars: int) -> None:
        """The last action ran ``chars`` characters of app code never run before (JS coverage)."""


def _route_fragment(url: str) -> str:
    """The fragment of ``url`` when it is a client-side route (``#/trails/overview``, ``#!/inbox``, ``#flow/tab2``: a
    single-page app shows another screen there), else "" (an anchor on the page: ``#section``, a route's ``?id=``)."""
    route = hash_route(url.partition("#")[2])  # the one reading of a hash route: screens and synthesis share it
    return route.strip("/") if route else ""


def screen_url(url: str) -> str:
    """``url`` without an in-page anchor: two links to it show the same screen."""
    route = _route_fragment(url)
    return url.split("#", 1)[0] + ("#/" + route if route else "")


def route_of(url: str) -> str:
    """The kind of screen a URL names (``normalize_location``, client-side route included, numbers as
    placeholders): a link whose route no known state has leads somewhere new."""
    route = _route_fragment(url)
    return normalize_location(url.split("#", 1)[0]) + (
        "#/" + "/".join("<n>" if seg.isdigit() else seg for seg in route.split("/")) if route else "")


def signatures(graph: Graph, state: str) -> set[str]:
    """What a state shows, as element signatures: each offered action's element, and for the rows of a list (menu
    entries, pager links) their family once: another row of a list already seen is not new content. Actions of no
    element (scrolling, back) say nothing about what is on screen: a "scroll up" offered after scrolling down is
    not something new."""
    info = graph.states.get(graph.canonical(state))
    if info is None:
        return set()
    return {group if group != key else target for key, group in info.offered.items()
            if (target := info.targets.get(key, ""))}


_LANG_SEGMENT = re.compile(r"^[a-z]{2}(?:[-_][a-zA-Z]{2,4})?$")


def variant_key(href: str) -> str:
    """``href`` without its query and language path segment (``/de/``, ``/pt-BR/``): the entries of a sort or
    language menu all have one (a fragment stays: ``#Alpha`` and ``#Beta`` may open two tiddlers)."""
    parts = urlsplit(href)
    path = "/".join(seg for seg in parts.path.split("/") if not _LANG_SEGMENT.match(seg))
    return f"{parts.scheme}://{parts.netloc}/{path.strip('/')}#{parts.fragment}"


def is_variant_family(hrefs: set[str]) -> bool:
    """Whether a family of links is a sort or language menu: two or more addresses that differ only in their language
    segment or in query values that are words (``?sort=date``, ``?lang=de``): the same screen in another order or
    language. Numbers name other records or pages (``?id=7``, ``?page=3``): rows and pagers stay ordinary families."""
    if len(hrefs) < 2 or len({variant_key(h) for h in hrefs}) != 1:
        return False
    values: dict[str, set[str]] = {}
    for h in hrefs:
        for k, v in parse_qsl(urlsplit(h).query, keep_blank_values=True):
            values.setdefault(k, set()).add(v)
    varying = [v for vs in values.values() if len(vs) > 1 for v in vs]
    return not any(v.isdigit() for v in varying)


def _is_radio(c: Candidate) -> bool:
    return c.widget is not None and c.widget.element.role == "radio"


@dataclass
class _Seen:
    """What the policy remembers of a candidate from when it was on screen (other states are planned on this)."""

    cls_hint: str  # type(-required) / back / scroll / other / link / submit(-blocked) / element
    href: str = ""
    target: str = ""
    label: str = ""  # normalized visible label: the same element saying something else is another context
    group: str = ""  # the family of look-alike actions it belongs to ("" when it stands alone)
    path: str = ""  # the element's DOM / hierarchy path: its ancestors are the screen regions it belongs to

    @property
    def identity(self) -> tuple[str, str]:
        return self.target, self.label


@dataclass
class ActionStats:
    """What the crawl's actions found, by kind of action: each class, screen family, region, element, label and
    family of elements (a list's rows, a menu's entries) — what the greedy policy learns from and a resumed crawl
    restores."""

    tries: dict[str, int] = field(default_factory=dict)  # class -> actions taken
    hits: dict[str, float] = field(default_factory=dict)  # class -> of those, discoveries (``_gain``)
    label_tries: Counter[tuple[str, str]] = field(default_factory=Counter)  # (identity, label) -> actions taken
    labels_tried: dict[str, set[str]] = field(default_factory=dict)  # identity -> labels it was used with
    target_dests: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (identity, label) -> states
    label_effect: dict[str, tuple[int, int]] = field(default_factory=dict)  # label -> (actions, screen changed)
    family_tries: Counter[str] = field(default_factory=Counter)  # action family -> actions taken, in any state
    family_code: dict[str, list[bool]] = field(default_factory=dict)  # family -> recent tries: ran new code?
    context: dict[str, list[bool]] = field(default_factory=dict)  # screen family -> recent untried actions: new?
    target_effect: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # identity -> (tries, changed)
    regions: dict[str, tuple[int, float]] = field(default_factory=dict)  # family|ancestor -> (untried, discoveries)
    back_exits: dict[str, tuple[int, int]] = field(default_factory=dict)  # screen family -> (backs, left the app)
    element_gain: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)  # identity -> (untried, gain)
    radios: set[tuple[str, str]] = field(default_factory=set)  # radio options ever offered
    radio_defaults: set[tuple[str, str]] = field(default_factory=set)  # options a form came with
    content: dict[str, set[str]] = field(default_factory=dict)  # screen family -> element signatures it has shown
    scroll_dry: dict[str, int] = field(default_factory=dict)  # screen family -> scrolls in a row that showed nothing
    family_hrefs: dict[str, set[str]] = field(default_factory=dict)  # link family -> the addresses its entries name


@dataclass
class Wayfinding:
    """How to get places: where each hop and opened URL led last time and how often it missed, the hop in flight,
    actions a state stopped offering, and states the crawl gave up approaching."""

    failed_hops: set[tuple[str, str]] = field(default_factory=set)  # hops that missed since the last restart
    hop_misses: Counter[tuple[str, str]] = field(default_factory=Counter)  # consecutive misses of a hop
    latest: dict[tuple[str, str], str] = field(default_factory=dict)  # (state, key) -> where it led last time
    absent: Counter[tuple[str, str]] = field(default_factory=Counter)  # (state, key) not offered when there
    expected: tuple[str, str, str] | None = None  # (from, key, expected destination) of the last hop
    open_landing: dict[str, str] = field(default_factory=dict)  # URL -> the state opening it showed last time
    open_misses: Counter[str] = field(default_factory=Counter)  # URL -> consecutive surprising landings
    opening: tuple[str, str] | None = None  # (URL, expected state) of the URL just opened
    openable: dict[str, bool] = field(default_factory=dict)  # open_filter's verdict per URL (asked once)
    approach: Counter[str] = field(default_factory=Counter)  # state -> navigation steps towards it since acting there
    given_up: set[str] = field(default_factory=set)  # states no route reached in APPROACH_LIMIT steps: not planned


@dataclass
class GreedyPolicy(Policy):
    name: str = "greedy"
    max_walk: int = MAX_WALK
    priors: dict[str, float] = field(default_factory=lambda: dict(NOVELTY_PRIORS))
    learned: ActionStats = field(default_factory=lambda: ActionStats())
    ways: Wayfinding = field(default_factory=lambda: Wayfinding())
    _walking: int = 0
    _last_hop: tuple[str, str] | None = None  # (state, key) of the action just taken
    _entry: str | None = None  # where a restart lands
    _restarting: bool = True  # the next state seen is the landing of a restart
    _visited: set[str] = field(default_factory=set)
    _last_class: str | None = None
    _seen: dict[tuple[str, str], _Seen] = field(default_factory=dict)  # (state, key) -> candidate facts
    _known: set[str] = field(default_factory=set)  # normalized locations of known states (this decision)
    _last_target: tuple[str, str] | None = None
    _radio_chosen: bool = False  # the last action chose a radio option
    _last_group: str = ""
    # Which URLs may be opened directly (the crawler sets it on the web: in-app hosts, nothing the deny-list names);
    # None: the platform cannot open a screen by its address, so only walks and restarts reach other states.
    open_filter: Callable[[str], bool] | None = None
    _last_context: str | None = None  # the screen family the last untried action was taken in
    _last_regions: list[str] = field(default_factory=list)  # the regions of the untried action just taken
    _at_landing: bool = False  # standing where a restart landed, nothing done since: the browser has no history
    _landing_retries: int = 0  # restarts because the entry offered nothing but "back"
    _code_new: int | None = None  # new code characters the last action ran (``code_reached``); None: not measured
    _code_guided: bool = False  # the crawl measures the app's code: discoveries are judged by it
    _futile: int = 0  # restarts in a row that found no known route to any untried action
    _typed_target: str = ""  # the element the last action typed into (its Enter is pressed next: ``_query_submit``)

    # --- what a resumed crawl keeps ------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """What this crawl has learned, as JSON: class rates, what each element and label did, families, hops and
        URLs that missed, screen families explored enough, the facts of every candidate seen. A resumed crawl
        ``restore``s it, so it goes on where it stopped instead of re-learning (and re-trying) from the priors."""
        return {
            "policy": self.name, "version": 1, "entry": self._entry, "visited": sorted(self._visited),
            "tries": self.learned.tries, "hits": self.learned.hits,
            "label_tries": [[*k, n] for k, n in self.learned.label_tries.items()],
            "labels_tried": {k: sorted(v) for k, v in self.learned.labels_tried.items()},
            "target_dests": [[*k, sorted(v)] for k, v in self.learned.target_dests.items()],
            "label_effect": {k: list(v) for k, v in self.learned.label_effect.items()},
            "family_tries": dict(self.learned.family_tries),
            "family_code": self.learned.family_code,
            "radios": [list(k) for k in self.learned.radios],
            "radio_defaults": [list(k) for k in self.learned.radio_defaults],
            "hop_misses": [[*k, n] for k, n in self.ways.hop_misses.items()],
            "latest": [[*k, v] for k, v in self.ways.latest.items()],
            "absent": [[*k, n] for k, n in self.ways.absent.items()],
            "seen": [[st, key, v.cls_hint, v.href, v.target, v.label, v.group, v.path]
                     for (st, key), v in self._seen.items()],
            "open_landing": self.ways.open_landing, "open_misses": dict(self.ways.open_misses),
            "context": self.learned.context,
            "target_effect": [[*k, *v] for k, v in self.learned.target_effect.items()],
            "regions": {k: list(v) for k, v in self.learned.regions.items()}, "code_guided": self._code_guided,
            "back_exits": {k: list(v) for k, v in self.learned.back_exits.items()},
            "element_gain": [[*k, *v] for k, v in self.learned.element_gain.items()],
            "approach": dict(self.ways.approach), "given_up": sorted(self.ways.given_up),
            "content": {k: sorted(v) for k, v in self.learned.content.items()},
            "scroll_dry": dict(self.learned.scroll_dry),
            "family_hrefs": {k: sorted(v) for k, v in self.learned.family_hrefs.items()},
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Take back what ``snapshot`` saved (a snapshot of another policy or version is ignored)."""
        if data.get("policy") != self.name or data.get("version") != 1:
            return
        self._visited = set(data["visited"])
        self.learned.tries, self.learned.hits = dict(data["tries"]), dict(data["hits"])
        self.learned.label_tries = Counter({(t, lb): n for t, lb, n in data["label_tries"]})
        self.learned.labels_tried = {k: set(v) for k, v in data["labels_tried"].items()}
        self.learned.target_dests = {(t, lb): set(v) for t, lb, v in data["target_dests"]}
        self.learned.label_effect = {k: (int(v[0]), int(v[1])) for k, v in data["label_effect"].items()}
        self.learned.family_tries = Counter(data["family_tries"])
        self.learned.family_code = {k: [bool(x) for x in v] for k, v in data.get("family_code", {}).items()}
        self.learned.radios = {(t, lb) for t, lb in data["radios"]}
        self.learned.radio_defaults = {(t, lb) for t, lb in data["radio_defaults"]}
        self.ways.hop_misses = Counter({(a, b): n for a, b, n in data["hop_misses"]})
        self.ways.latest = {(a, b): v for a, b, v in data["latest"]}
        self.ways.absent = Counter({(a, b): n for a, b, n in data["absent"]})
        self._seen = {(st, key): _Seen(*rest) for st, key, *rest in data["seen"]}  # snapshots before paths: 7 items
        self.ways.open_landing = dict(data["open_landing"])
        self.ways.open_misses = Counter(data["open_misses"])
        self.learned.context = {k: list(v) for k, v in data["context"].items()}
        self.learned.target_effect = {(t, lb): (int(n), int(c)) for t, lb, n, c in data.get("target_effect", [])}
        self.learned.regions = {k: (int(v[0]), float(v[1])) for k, v in data.get("regions", {}).items()}
        self._code_guided = bool(data.get("code_guided", False))
        self.learned.back_exits = {k: (int(v[0]), int(v[1])) for k, v in data.get("back_exits", {}).items()}
        self.learned.element_gain = {(t, lb): (int(n), float(g)) for t, lb, n, g in data.get("element_gain", [])}
        self.ways.approach = Counter(data.get("approach", {}))
        self.ways.given_up = set(data.get("given_up", []))
        self.learned.content = {k: set(v) for k, v in data.get("content", {}).items()}
        self.learned.scroll_dry = {k: int(v) for k, v in data.get("scroll_dry", {}).items()}
        self.learned.family_hrefs = {k: set(v) for k, v in data.get("family_hrefs", {}).items()}

    # --- learning ----------------------------------------------------------------------------------
    def code_reached(self, chars: int) -> None:
        """The crawler measured the app's code: the action just taken ran ``chars`` characters of its scripts that
        no earlier action had run. From the first call on, discoveries are judged by code (module docstring)."""
        self._code_guided = True
        self._code_new = chars

    def _gain(self, new_state: bool) -> float:
        """What the last action discovered, 0..1: a new state; on a coverage-guided crawl, new code first."""
        if not self._code_guided:
            return float(new_state)
        if (self._code_new or 0) >= CODE_NEW_MIN:
            return 1.0
        return STATE_ONLY_CREDIT if new_state else 0.0

    def restarted(self) -> None:
        """The crawler restarted on its own (after an error or leaving the app): the next state is a landing,
        and nothing in flight (a walk, the class of the last action) carries over to it."""
        self._walking = 0
        self.ways.failed_hops.clear()
        self._restarting = True
        self.ways.expected = None
        self._last_hop = None
        self._last_class = self._last_target = None
        self._last_group = ""
        self._radio_chosen = False
        self.ways.opening = None
        self._last_context = None
        self._last_regions = []

    def _observe(self, graph: Graph, state: str) -> None:
        new = state not in self._visited
        gain = self._gain(new)
        if not self._found_content(graph, state):
            gain = 0.0
        moved = self._last_hop is not None and graph.canonical(self._last_hop[0]) != state
        self._credit(gain, moved, state)
        self._at_landing = False
        self._visited.add(state)
        if self._restarting:
            self._entry = state
            self._restarting = False
            self._at_landing = True

    def _credit(self, gain: float, moved: bool, dest: str | None) -> None:
        """Book what the action just taken found (``gain``, see ``_gain``) against its class, screen family, regions,
        element, label and family; ``moved``: it changed the screen; ``dest``: the state it led to (None: out of the
        app)."""
        self._code_new = None
        cls = self._last_class
        if cls is not None and cls != "type-required":
            self.learned.tries[cls] = self.learned.tries.get(cls, 0) + 1
            self.learned.hits[cls] = self.learned.hits.get(cls, 0) + gain
        if self._last_context is not None and cls != "type-required":
            recent = self.learned.context.setdefault(self._last_context, [])
            recent.append(gain >= 1.0)  # a full discovery: a new state, or on a coverage-guided crawl new code
            del recent[:-CONTEXT_WINDOW]
            if cls in ("back", "back-exit"):
                backs, exits = self.learned.back_exits.get(self._last_context, (0, 0))
                self.learned.back_exits[self._last_context] = (backs + 1, exits + (dest is None))
        self._last_context = None
        if cls != "type-required":
            for region in self._last_regions:
                tries, hits = self.learned.regions.get(region, (0, 0.0))
                self.learned.regions[region] = (tries + 1, hits + gain)
        self._last_regions = []
        if self._last_target is not None and cls is not None:  # an untried action (a walk's hop has no class)
            tries, hits = self.learned.element_gain.get(self._last_target, (0, 0.0))
            self.learned.element_gain[self._last_target] = (tries + 1, hits + gain)
        if self._last_target is not None:
            if self._last_hop is not None:
                tries, changed = self.learned.target_effect.get(self._last_target, (0, 0))
                self.learned.target_effect[self._last_target] = (tries + 1, changed + moved)
                if self._last_target[1]:
                    tries, changed = self.learned.label_effect.get(self._last_target[1], (0, 0))
                    self.learned.label_effect[self._last_target[1]] = (tries + 1, changed + moved)
            self.learned.label_tries[self._last_target] += 1
            self.learned.labels_tried.setdefault(self._last_target[0], set()).add(self._last_target[1])
            if dest is not None:
                self.learned.target_dests.setdefault(self._last_target, set()).add(dest)
        if self._last_group:
            self.learned.family_tries[self._last_group] += 1
            recent_code = self.learned.family_code.setdefault(self._last_group, [])
            recent_code.append(gain >= 1.0)
            del recent_code[:-FAMILY_CODE_WINDOW]
        self._last_class = self._last_target = None
        self._last_group = ""

    def _found_content(self, graph: Graph, state: str) -> bool:
        """Whether the action just taken found something, judged by content, not by the state id: an error page is a
        dead end, and a type or scroll that stayed on its screen family and brought up no element signature the family
        had not shown (typed text only changed an input's value; a scroll only moved the page; a sort or language
        menu's entry showed the same screen another way) found nothing, however the state abstraction split it. Also
        counts scrolls in a row that found nothing (``scroll_dry``)."""
        info = graph.states.get(state)
        if info is not None and info.error_page:
            return False
        cls, source = self._last_class, self._last_context
        menu = bool(self._last_group) and is_variant_family(self.learned.family_hrefs.get(self._last_group, set()))
        if source is None:
            return True
        family = self._family(graph, state)
        fresh = family != source or bool(signatures(graph, state) - self.learned.content.get(family, set()))
        if cls not in ("type", "type-required", "scroll") and not menu:
            # Any other action: on a crawl that measures code, code judges it (``_gain``). Otherwise it found
            # something when it left its family, showed another heading (a panel, a dialog: another screen to a
            # person) or brought up controls the family had not shown; a toggle flipped, a row ticked, a view
            # switched in place found nothing, however the state abstraction split it (a file manager's view
            # toggles kept 133 of 174 greedy actions on their screen).
            before = graph.states.get(graph.canonical(self._last_hop[0])) if self._last_hop else None
            moved_on = before is None or info is None or before.heading != info.heading
            return self._code_guided or fresh or moved_on
        if cls == "scroll":
            self.learned.scroll_dry[source] = 0 if fresh else self.learned.scroll_dry.get(source, 0) + 1
        return fresh

    def _note_content(self, graph: Graph, state: str) -> None:
        self.learned.content.setdefault(self._family(graph, state), set()).update(signatures(graph, state))

    def left_app(self) -> None:
        """The action just taken left the app (a link out, or back past the session's first page: TiddlyWiki's and
        Node-RED's screens are drawn by script, so a fresh session has no history to go back through). It counts as
        tried and found nothing; the crawler then restarts (``restarted``). Without this, an action that leaves
        is never booked, and a class probed for its first tries would be probed for ever."""
        self._credit(0.0, True, None)

    def novelty(self, cls: str) -> float:
        """Estimated chance that an action of ``cls`` reaches a new state (prior blended with this crawl)."""
        if cls == "type-required":
            # Filling a required field never changes the screen by itself; it is worth what the submit it unblocks
            # is worth, one step later.
            return FILL_DISCOUNT * self.novelty("element-new")
        rate = self._rate(cls)
        return PROBE_FLOOR if self._probing(cls, rate) else rate  # a prior is a guess about apps in general

    def _rate(self, cls: str) -> float:
        """The class's prior blended with what this crawl's actions of the class found."""
        prior = self.priors.get(cls, 0.3)
        return (self.learned.hits.get(cls, 0) + prior * PRIOR_WEIGHT) / (self.learned.tries.get(cls, 0) + PRIOR_WEIGHT)

    def _probing(self, cls: str, rate: float | None = None) -> bool:
        """Whether ``cls``'s chance is the probe floor, not its record (see PROBE_FLOOR)."""
        return self.learned.tries.get(cls, 0) < PROBE_TRIES and cls not in UNPROBED \
            and (self._rate(cls) if rate is None else rate) < PROBE_FLOOR

    # --- classifying ---------------------------------------------------------------------------------
    def _remember(self, state: str, cands: list[Candidate]) -> None:
        radio_just_chosen, self._radio_chosen = self._radio_chosen, False
        empty_required = {w.form_action for c in cands if (w := c.widget) is not None
                          and w.element.editable and w.required and not w.value and w.form_action}
        # Forms whose submit button is on offer (the safety guard may have withheld it, e.g. "Send"): only for
        # those is filling a required field a step towards a new screen.
        submittable = {w.form_action for c in cands if (w := c.widget) is not None and c.type is ActionType.CLICK
                       and w.form_action and w.tag in ("button", "input") and w.input_type in SUBMIT_TYPES}
        # A group of checkboxes of one name with none ticked is a multiple-choice field ("For whom?": which
        # participants share a bill); servers commonly refuse the form until one is ticked, so it counts as a
        # required field left empty.
        boxes: dict[tuple[str, str], bool] = {}
        for c in cands:
            if (w := c.widget) is not None and w.input_type == "checkbox" and w.input_name and w.form_action:
                key = (w.form_action, w.input_name)
                boxes[key] = boxes.get(key, False) or w.element.checked
        group_size = Counter((w.form_action, w.input_name) for c in cands if (w := c.widget) is not None
                             and w.input_type == "checkbox" and w.input_name and w.form_action)
        unticked = {k for k, ticked in boxes.items() if not ticked and group_size[k] >= 2}
        empty_required |= {form for form, _name in unticked}
        for c in cands:
            w = c.widget
            t = c.type
            if t is ActionType.CLICK and w is not None and (w.form_action, w.input_name) in unticked \
                    and w.form_action in submittable:
                hint = "type-required"  # ticking one box of the group unblocks the form's submit
            elif t in (ActionType.TYPE, ActionType.SELECT):
                needed = w is not None and w.required and not w.value and w.form_action in empty_required \
                    and w.form_action in submittable
                hint = "type-required" if needed else "type"
            elif t is ActionType.NAVIGATE_BACK:
                hint = "back"
            elif t in (ActionType.SCROLL, ActionType.SWIPE):
                hint = "scroll"
            elif t is not ActionType.CLICK or w is None:
                hint = "other"
            elif w.href and urlsplit(w.href).scheme in ("http", "https") and not w.href.endswith("#"):
                hint = "link"  # (an ``href="#"`` is a button drawn as a link: its script decides what it does)
            elif w.form_action in empty_required and w.tag in ("button", "input") and w.input_type in SUBMIT_TYPES:
                hint = "submit-blocked"
            elif w.form_action and w.tag in ("button", "input") and w.input_type in SUBMIT_TYPES:
                hint = "submit"
            else:
                hint = "element"
            label = normalize_text(w.label) if w else ""
            if hint == "link" and w is not None and c.group != c.key:
                self.learned.family_hrefs.setdefault(c.group, set()).add(w.href)
            seen = _Seen(hint, w.href if w else "", c.target_key or c.key, label, c.group if c.group != c.key else "",
                         w.element.path if w else "")
            if w is not None and w.element.role == "radio" and seen.identity not in self.learned.radios:
                # A checked radio offers no action; one that first shows up right after choosing another option
                # of its group is the option the form came with, and choosing it again undoes that choice.
                self.learned.radios.add(seen.identity)
                if radio_just_chosen:
                    self.learned.radio_defaults.add(seen.identity)
            self._seen[(state, c.key)] = seen

    def _class(self, graph: Graph, state: str, key: str) -> str:
        seen = self._seen.get((state, key))
        if seen is None:  # offered in a state this policy never stood in (resumed crawl): judge by the graph
            info = graph.states.get(state)
            target = info.targets.get(key, "") if info else ""
            return "element-seen" if graph.target_tries[target or key] else "element-new"
        # Element memory is keyed by identity *and* label: after a language or account switch the same navigation
        # link says something else and leads to screens never seen, so what it did before predicts nothing.
        tried = self.learned.label_tries[seen.identity] > 0
        if seen.cls_hint == "type-required" and tried:
            return "type"  # this field was filled (and its form submitted) elsewhere already
        if seen.identity in self.learned.radio_defaults:
            return "radio-revert"  # re-choosing the option the form came with undoes the choice just made
        if seen.group and not tried and self.learned.family_tries[seen.group] >= VARIANT_LIMIT \
                and is_variant_family(self.learned.family_hrefs.get(seen.group, set())):
            return "menu-seen"  # a sort or language menu whose entries show the same screen another way
        if seen.group and not tried and self.learned.family_tries[seen.group] >= FAMILY_LIMIT \
                and not (self._code_guided and any(self.learned.family_code.get(seen.group, []))):
            # A few rows of this list (entries of this menu) were tried already, elsewhere. On a coverage-guided
            # crawl, only once the last few stopped running new code: a list's rows share one renderer, a menu's
            # entries open a dialog each.
            return "family-seen"
        if seen.label and seen.cls_hint in ("link", "element", "submit"):
            tries, changed = self.learned.label_effect.get(seen.label, (0, 0))
            if tries >= DEAD_LABEL_TRIES and not changed:
                return "dead-label"  # elements saying this never changed the screen (a toggle, a cancelled confirm)
        if seen.cls_hint == "submit":
            # Where a submit leads depends on what the form holds, and this state's form holds something else
            # than where it was pressed before (another option chosen, another field filled).
            return "submit-again" if tried else "element-new"
        others = self.learned.labels_tried.get(seen.target, set())
        if not tried and seen.label and seen.cls_hint in ("link", "element") and len(others) < RELABEL_LIMIT \
                and any(label != seen.label for label in others):
            return "relabelled"  # an element already used now says something else: the app's context changed
        if seen.cls_hint in ("link", "element") and tried:
            tries, changed = self.learned.target_effect.get(seen.identity, (0, 0))
            if tries and not changed:
                return "no-effect"  # wherever this element was tried, the screen stayed as it was (a zoom button)
        if seen.cls_hint in ("link", "element", "submit-blocked"):
            dests = self.learned.target_dests.get(seen.identity)
            if dests and all(graph.canonical(d) in self._visited for d in dests):
                return "repeat-known"  # this element led only to screens already seen, wherever it was tried
        if seen.cls_hint == "link":
            here = graph.states.get(state)
            if here is not None and urlsplit(seen.href).netloc != urlsplit(here.location).netloc:
                return "link-external"  # leaving the app costs the step and the way back
            if here is not None and screen_url(seen.href) == screen_url(here.location):
                return "link-self"
            if here is not None and _route_fragment(here.location) and not _route_fragment(seen.href) \
                    and seen.href.split("#", 1)[0] == here.location.split("#", 1)[0]:
                # ``#info`` on a screen a client-side route drew (``#flow/tab1``) names no page: the app's script
                # handles it (a sidebar tab, a toggle), so it is judged like any element.
                return "element-seen" if tried else "element-new"
            if route_of(seen.href) not in self._known:
                return "link-new-url"
            return "element-seen" if tried else "link-known-url"
        if seen.cls_hint == "element":
            return "element-seen" if tried else "element-new"
        if seen.cls_hint == "scroll" and self.learned.scroll_dry.get(self._family(graph, state), 0) >= SCROLL_DRY_LIMIT:
            return "scroll-dry"  # scrolling this kind of screen stopped showing anything new
        if seen.cls_hint == "back" and self._at_landing and state == graph.canonical(self._entry or ""):
            return "back-exit"  # a restart opened a fresh session here: going back leaves the app
        if seen.cls_hint == "back":
            backs, exits = self.learned.back_exits.get(self._family(graph, state), (0, 0))
            if exits and exits == backs:
                return "back-exit"  # every back from this kind of screen left the app (no history to go back in)
        return seen.cls_hint

    def _best_in(self, graph: Graph, state: str, offered: set[str] | None = None) -> tuple[float, str, str] | None:
        """(novelty, key, class) of the most promising untried action of ``state``.

        ``offered``: the keys on screen now (the current state); elsewhere, actions that were missing the last
        ABSENT_LIMIT times the crawl stood in that state (a variant merged into it offered them) are not counted.
        """
        best = None
        for key in graph.fresh_keys(state):
            if (key not in offered) if offered is not None else self.ways.absent[(state, key)] >= ABSENT_LIMIT:
                continue
            score, cls = self._score(graph, state, key)
            if best is None or score > best[0]:
                best = (score, key, cls)
        return best

    def _score(self, graph: Graph, state: str, key: str) -> tuple[float, str]:
        """Chance that this action reaches a new state (its class's learned rate, damped in a screen family that
        is explored enough), and the class."""
        cls = self._class(graph, state, key)
        score = self.novelty(cls)
        if cls in REGION_CLASSES:
            score = self._regional(graph, state, key, score)
        if cls in ELEMENT_CLASSES and (seen := self._seen.get((state, key))) is not None:
            tries, hits = self.learned.element_gain.get(seen.identity, (0, 0.0))
            score = min(score, (hits + ELEMENT_WEIGHT * score) / (tries + ELEMENT_WEIGHT))
        if cls != "link-new-url" and self.context_exhausted(graph, state):
            score *= CONTEXT_DAMP
        return score, cls

    def _regions_of(self, graph: Graph, state: str, key: str) -> list[str]:
        """The screen regions an action's element belongs to, nearest first: its REGION_DEPTH closest ancestors,
        each named with the screen family (one toolbar of one kind of screen)."""
        seen = self._seen.get((state, key))
        if seen is None or not seen.path:
            return []
        parts = seen.path.strip("/").split("/")
        family = self._family(graph, state)
        return [f"{family}|{'/'.join(parts[:n])}" for n in range(len(parts) - 1, max(0, len(parts) - 1 - REGION_DEPTH),
                                                                      -1)]

    def _regional(self, graph: Graph, state: str, key: str, score: float) -> float:
        """``score`` (the class's chance) damped by what the untried actions taken in the element's regions did,
        from the widest to the nearest: each region's (actions, new screens) refine the estimate of the one around
        it, a region's evidence counting half as much per level it lies further out (a page's main container holds
        the toolbar and the sidebar alike; the toolbar itself speaks for its buttons)."""
        regions = self._regions_of(graph, state, key)
        estimate = score
        for depth, region in reversed(list(enumerate(regions))):
            tries, hits = self.learned.regions.get(region, (0, 0))
            weight = 0.5 ** depth
            estimate = (hits * weight + REGION_WEIGHT * estimate) / (tries * weight + REGION_WEIGHT)
        # A region only damps: neighbours that kept finding new screens say little about an action of a class
        # that rarely does (a link to a known page next to links to new ones), neighbours that changed nothing do.
        return min(score, estimate)

    def _family(self, graph: Graph, state: str) -> str:
        info = graph.states.get(graph.canonical(state))
        return normalize_location(info.location) if info is not None and info.location else ""

    def context_exhausted(self, graph: Graph, state: str) -> bool:
        """Whether the last CONTEXT_WINDOW untried actions taken in this state's screen family found nothing new."""
        recent = self.learned.context.get(self._family(graph, state), [])
        return len(recent) >= CONTEXT_WINDOW and not any(recent)

    # --- planning --------------------------------------------------------------------------------------
    def _bfs(self, graph: Graph, start: str | dict[str, str]) -> dict[str, tuple[int, tuple[str, str] | None]]:
        """Known states reachable from ``start`` (or the nearest of several): distance and the first hop (state,
        action key) towards them, over hops that have not failed or missed too often, each to where it led last."""

        def hop(s: str, key: str, tos: Counter[str]) -> str | None:
            if (s, key) in self.ways.failed_hops or self.ways.hop_misses[(s, key)] >= HOP_MISS_LIMIT:
                return None
            return graph.canonical(self._destination(s, key, tos))

        return graph.routes(start, hop)

    def _bfs_from(self, graph: Graph, sources: dict[str, str]) -> dict[str, tuple[int, str]]:
        """Known states reachable from any of ``sources`` (state -> the URL that shows it): distance from the
        nearest source and that source's URL."""
        reach = self._bfs(graph, sources)
        return {s: (dist, sources[first[0] if first is not None else s]) for s, (dist, first) in reach.items()}

    def _open_sources(self, graph: Graph, here: str) -> dict[str, str]:
        """States an opened URL shows (state -> URL): where the URL landed last time, else the first state seen at
        it. Scripted screens (a login form), URLs whose landing keeps changing and the current state are left out."""
        if self.open_filter is None:
            return {}
        first: dict[str, tuple[int, str]] = {}
        for sid, info in graph.states.items():
            loc = info.location
            if loc and (loc not in first or info.first_step < first[loc][0]):
                first[loc] = (info.first_step, sid)
        out: dict[str, str] = {}
        for url, (_step, sid) in sorted(first.items()):
            landing = graph.canonical(self.ways.open_landing.get(url, sid))
            if landing == here or landing in graph.abandoned or landing in out \
                    or self.ways.open_misses[url] >= OPEN_MISS_LIMIT \
                    or not self.ways.openable.setdefault(url, self.open_filter(url)):
                continue
            out[landing] = url
        return out

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision:
        state = graph.canonical(state)
        enter = self._query_submit(cands)
        if enter is not None and self._last_class == "type":
            self._last_class = "type-required"  # typing a query is judged by its submit (booked as "type" below)
        self._observe(graph, state)
        self._remember(state, cands)
        self._note_content(graph, state)
        self._known = {r for s in graph.states.values() if s.location
                       for r in (route_of(s.location), normalize_location(s.location.split("#", 1)[0]))}
        if self.ways.opening is not None:
            url, want = self.ways.opening
            self.ways.open_misses[url] = 0 if graph.canonical(want) == state else self.ways.open_misses[url] + 1
            self.ways.open_landing[url] = state  # the app may show another screen at a URL later; the latest counts
            self.ways.opening = None
        if self.ways.expected is not None:
            src, key, want = self.ways.expected
            hop = (graph.canonical(src), key)
            if graph.canonical(want) != state:
                self.ways.failed_hops.add(hop)
                self.ways.hop_misses[hop] += 1
            else:
                self.ways.hop_misses[hop] = 0
            self.ways.expected = None
        if self._last_hop is not None:
            tos: Counter[str] = graph.edges.get(self._last_hop) or Counter()
            if any(graph.canonical(t) == state for t in tos):  # the graph recorded the same landing
                self.ways.latest[self._last_hop] = state  # apps change their data: the latest outcome predicts best
            self._last_hop = None
        by_key = {c.key: c for c in cands}
        for key in graph.fresh_keys(state):
            if key not in by_key:
                self.ways.absent[(state, key)] += 1
        if enter is not None:
            self._walking = 0
            self.ways.approach.pop(state, None)
            self._futile = 0
            self._pick(graph, state, [enter], enter.key, 0.0)
            self._last_class = "type"
            return Decision("act", "submit the query just typed (Enter in the search box)", enter)
        # The best action here; if it is unpromising, the best elsewhere per step spent reaching it (walking, or
        # restarting from the entry and walking from there).
        here = self._best_in(graph, state, set(by_key))
        plan: _Plan | None = None
        if here is None or here[0] < MIN_NOVELTY or self._probing(here[2]):
            # A probe is taken only where nothing within reach is worth more per step.
            plan = self._route(graph, state, here[0] if here else 0.0, set(by_key))
        if plan is None and here is not None and here[2] == "back-exit" and self._landing_retries < LANDING_RETRIES:
            # All a fresh session's first screen offers is leaving it: the app had not finished loading (an editor
            # that draws itself after the page's load event). Reloading costs one step; going back costs two or three
            # (back, back again from the browser's blank page, restart) and teaches nothing.
            self._landing_retries += 1
            self._walking = 0
            self.ways.failed_hops.clear()
            self._restarting = True
            return Decision("restart", "the entry offers nothing but leaving the app: reload it (still loading?)")
        if plan is None and here is not None:
            score, key, _cls = here
            best = self._pick(graph, state, cands, key, score)
            self._walking = 0
            self.ways.approach.pop(state, None)
            self._futile = 0
            n = graph.target_tries[best.target_key or best.key]
            return Decision("act", f"untried action in this state ({self._last_class}, novelty "
                            f"{score:.2f})" + (", new element" if n == 0 else ""), best)
        if plan is not None:
            self.ways.approach[plan.target] += 1
            self._futile = 0
        if plan is not None and plan.how == "open":
            self._walking = 0
            self.ways.failed_hops.clear()
            landing = self._open_sources(graph, state)
            want = next((s for s, u in landing.items() if u == plan.url), plan.target)
            self.ways.opening = (plan.url, want)
            return Decision("open", f"open a known URL, then {plan.distance - 1} step(s) to a state with a more "
                            "promising untried action", url=plan.url)
        if plan is not None and plan.how == "walk" and plan.hop is not None:
            src, key = plan.hop
            c = by_key.get(key)
            if c is not None:
                self._walking += 1
                self._last_target = self._identity(state, c)
                self._last_group = self._group_of(state, c)
                self._radio_chosen = _is_radio(c)
                self._last_hop = (state, key)
                self.ways.expected = (src, key, self._destination(src, key, graph.edges[(src, key)]))
                return Decision("act", f"walk {plan.distance} step(s) to a state with a more promising untried "
                                "action", c)
            self.ways.failed_hops.add((src, key))
        left = plan is not None or self._anything_left(graph)
        if plan is None and left:
            self._futile += 1
            if self._futile > FUTILE_RESTARTS:
                return Decision("stop", f"no known route reaches a state with untried actions ({self._futile - 1} "
                                "restarts in a row found none)")
        if left:
            self._walking = 0
            self.ways.failed_hops.clear()
            self._restarting = True
            why = "restart: the nearest promising untried action is closer from the entry" if plan is not None \
                else "no known path from here to a state with untried actions"
            return Decision("restart", why)
        return Decision("stop", "every known state is fully explored")

    def _route(self, graph: Graph, state: str, floor: float, offered: set[str]) -> _Plan | None:
        """``_plan``, checked against what is on screen and what earlier approaches achieved. A planned walk whose
        first hop is not on this screen (the app drew the state without it: a list emptied, a button hidden) is a
        miss of that hop, like a hop that led elsewhere, and the route is planned again without it; a state that
        APPROACH_LIMIT navigation steps did not get the crawl to act in is given up. Without both, a restart clears
        the hops that failed and the same route is tried again and again (I Hate Money: restart, open, one walk
        step, 30 times over in one 200-step crawl)."""
        plan = None
        for _ in range(REPLANS + 1):
            plan = self._plan(graph, state, floor)
            if plan is None:
                return None
            if plan.how == "walk" and plan.hop is not None and plan.hop[1] not in offered:
                self.ways.failed_hops.add(plan.hop)
                self.ways.hop_misses[plan.hop] += 1
                continue
            if self.ways.approach[plan.target] >= APPROACH_LIMIT:
                self.ways.given_up.add(plan.target)
                continue
            return plan
        return plan

    def _plan(self, graph: Graph, state: str, floor: float) -> _Plan | None:
        """The known state whose best untried action is worth most per step spent getting there: walking from here,
        opening a known URL and walking from where it lands, or restarting and walking from the entry (a restart
        and an opened URL cost one step each). At equal cost a walk beats an opened URL, which beats a restart."""
        best_value, plan = floor, None
        walks = self._bfs(graph, state) if self._walking < self.max_walk else {state: (0, None)}
        from_entry = self._bfs(graph, graph.canonical(self._entry)) if self._entry is not None else {}
        opened = self._bfs_from(graph, self._open_sources(graph, state))
        for s in set(walks) | set(from_entry) | set(opened):
            if s == state or s in self.ways.given_up or not graph.has_unexplored(s) \
                    or ((info := graph.states.get(s)) is not None and info.error_page):
                continue  # (an error page's untried actions are the app's chrome, offered on every other screen)
            got = self._best_in(graph, s)
            if got is None:
                continue
            options = []
            if s in walks:
                options.append((walks[s][0], 0, "walk"))
            if s in opened:
                options.append((1 + opened[s][0], 1, "open"))
            if s in from_entry:
                options.append((1 + from_entry[s][0], 2, "restart"))
            if not options:
                continue
            dist, _order, how = min(options)
            value = got[0] / (dist + 1)
            if value > best_value or (plan is not None and value == best_value and dist < plan.distance):
                best_value = value
                plan = _Plan(s, walks[s][1] if how == "walk" else None, dist, how,
                             opened[s][1] if how == "open" else "")
        return plan

    def _pick(self, graph: Graph, state: str, cands: list[Candidate], key: str, score: float) -> Candidate:
        """Among this state's fresh candidates of the best novelty, the one the old order ranks first."""
        tied = [c for c in cands if graph.is_fresh(state, c.key)
                and self._score(graph, state, c.key)[0] >= score - 1e-9]

        def rank(c: Candidate) -> tuple[bool, int, int]:
            tries = self.learned.label_tries[self._identity(state, c)]
            return tries > 0, PRIORITY.get(c.type, 5), tries

        best = min(tied, key=rank) if tied else next(c for c in cands if c.key == key)
        self._typed_target = (best.target_key or best.key) if best.type is ActionType.TYPE else ""
        self._last_class = self._class(graph, state, best.key)
        self._last_context = self._family(graph, state)
        self._last_regions = self._regions_of(graph, state, best.key)
        self._last_target = self._identity(state, best)
        self._last_group = self._group_of(state, best)
        self._radio_chosen = _is_radio(best)
        self._last_hop = (state, best.key)
        return best

    def _query_submit(self, cands: list[Candidate]) -> Candidate | None:
        """The Enter that submits the query the last action typed into a search box, when this screen offers it
        (``candidates`` offers one only while a typed query waits): typing and submitting are one move."""
        target, self._typed_target = self._typed_target, ""
        if not target:
            return None
        return next((c for c in cands if c.type is ActionType.KEY and (c.target_key or c.key) == target), None)

    def _destination(self, src: str, key: str, tos: Counter[str]) -> str:
        """Where taking ``key`` in ``src`` is expected to lead: where it led last time, else most often."""
        return self.ways.latest.get((src, key)) or tos.most_common(1)[0][0]

    def _group_of(self, state: str, c: Candidate) -> str:
        seen = self._seen.get((state, c.key))
        return seen.group if seen is not None else ""

    def _identity(self, state: str, c: Candidate) -> tuple[str, str]:
        seen = self._seen.get((state, c.key))
        return seen.identity if seen is not None else (c.target_key or c.key, "")

    def _anything_left(self, graph: Graph) -> bool:
        """Whether any known state still has an untried action that was on screen the last time it was there."""
        return any(self._best_in(graph, s) is not None for s in graph.states
                   if s not in self.ways.given_up and graph.has_unexplored(s))


@dataclass
class RandomPolicy(Policy):
    name: str = "random"
    seed: int = 0
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision:
        if not cands:
            return Decision("restart", "no actions on this screen")
        return Decision("act", "uniform random choice", self._rng.choice(cands))


DFS_MAX_BACKS = 3  # consecutive backs from explored screens before the depth-first baseline restarts


@dataclass
class DepthFirstPolicy(Policy):
    """DroidBot's naive depth-first baseline (``dfs_naive``): on every screen the first action not yet tried there,
    in page order; on a screen with none left, back; after a few backs that found nothing new, restart from the
    entry. No novelty estimate, no list families, no walking: the yardstick the greedy policy must beat."""

    name: str = "dfs"
    max_backs: int = DFS_MAX_BACKS
    _backs: int = 0

    def restarted(self) -> None:
        self._backs = 0

    @staticmethod
    def _untried(graph: Graph, state: str, key: str) -> bool:
        return key not in graph.tried.get(state, ()) and (state, key) not in graph.failed

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision:
        state = graph.canonical(state)
        for c in cands:
            if c.type is not ActionType.NAVIGATE_BACK and self._untried(graph, state, c.key):
                self._backs = 0
                return Decision("act", "dfs: first untried action on this screen", c)
        back = next((c for c in cands if c.type is ActionType.NAVIGATE_BACK), None)
        if back is not None and self._backs < self.max_backs:
            self._backs += 1
            return Decision("act", "dfs: nothing left to try here, back", back)
        self._backs = 0
        left = any(self._untried(graph, s, k) for s, info in graph.states.items() if s not in graph.abandoned
                   for k, a in info.actions.items() if ActionType(a.type) is not ActionType.NAVIGATE_BACK)
        if left:
            return Decision("restart", "dfs: backing up found nothing new; restart from the entry")
        return Decision("stop", "every known state is fully explored")


POLICIES = ("greedy", "random", "dfs")


def make_policy(name: str, seed: int = 0) -> Policy:
    if name == "greedy":
        return GreedyPolicy()
    if name == "random":
        return RandomPolicy(seed=seed)
    if name == "dfs":
        return DepthFirstPolicy()
    raise ValueError(f"policy: unknown policy {name!r} (known: {', '.join(POLICIES)})")
