"""How to get around an app's graph the way a fresh user would: clean captures, navigation edges, form sessions.

A crawl changes the app it explores: it creates notes, edits them, switches the language. A task, though, is
replayed (and later performed by an agent) on a fresh app, so everything synthesis builds on must exist there:

- **Clean captures.** A capture that shows text the crawler itself typed (a note it created, a title it edited)
  is polluted; a step is always shown on a clean capture of its state, and an edge whose target element exists
  only on polluted captures (the crawler's own note in a list) is not used. Captures taken after the crawler
  switched the app's language are not clean either (``switched_captures``): a fresh app speaks its own.
- **Navigation edges** move between screens without committing anything. A path to a screen goal uses only
  them, so no task silently depends on a form the crawler submitted earlier (the language it switched, the note
  it created). Edges whose destination depends on history (back) are never used: "back" from Settings went to
  the edit form in the crawl but goes elsewhere at the end of another path.
- **Anchoring by identity.** An edge recorded on one capture is replayed on another capture of the same state
  by finding its target element by ``screens.element_key`` (role, resource id, label) and its occurrence, never
  by DOM position, so a grown list cannot turn "open Weekend ideas" into "open Trip to Kyoto".
- **Form sessions.** The crawler records typing as self-loops and a submit as an edge; what it actually typed
  and chose before a submit is read back from its timeline, so a create/edit/setting task repeats exactly the
  combination the crawler executed (never an untried mix of fields).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import parse_qsl, unquote_plus, urlparse

from graph.paths import Hop, breadth_first, route_to
from graph.reader import AppGraph
from pipelines.synthesis.graph_names import site_titles_of
from pipelines.synthesis.screen_keys import screen_groups
from pipelines.synthesis.screens import (
    CHOICE_ROLES,
    LANGUAGE_NAME,
    TIME_OF_DAY,
    ElementKey,
    element_key,
    find_element,
    heading,
    location_path,
    occurrence,
)
from schemas import Action, ActionType, Element, Observation, Transition

# Labels of controls that commit something; en and zh, matched on whole words / substrings.
COMMIT_WORDS = re.compile(
    r"\b(save|submit|create|add|send|log ?in|sign ?in|sign ?up|register|apply|confirm|update|post|done|ok|publish)\b"
    r"|保存|提交|创建|添加|发送|登录|注册|应用|确认|更新|完成|发布",
    re.IGNORECASE,
)
# Where these lead depends on the history (browser or activity stack), not on the screen.
HISTORY_DEPENDENT = {ActionType.NAVIGATE_BACK}
POINTED = {ActionType.CLICK, ActionType.LONG_PRESS, ActionType.TYPE, ActionType.SELECT, ActionType.HOVER}
FILL_TYPES = {ActionType.TYPE, ActionType.SELECT}
MIN_TYPED_CHARS = 3
# A URL path ending in a script's file name (``/index.php``, ``/cgi-bin/app.cgi``): the program that serves the
# pages, not a page of its own.
SCRIPT = re.compile(r"/[^/]+\.(?:php\d?|cgi|pl|aspx?|jsp|py|fcgi)$", re.IGNORECASE)
LEAVES_APP = re.compile(r"\b(log ?out|sign ?out)\b|退出|登出|注销", re.IGNORECASE)


def target_of(graph: AppGraph, edge: Transition) -> tuple[Observation, Element | None]:
    obs = graph.observation(edge.from_observation_id)
    el = obs.element(edge.action.target_element_id) if edge.action.target_element_id else None
    return obs, el


def target_label(graph: AppGraph, edge: Transition) -> str:
    _, el = target_of(graph, edge)
    return el.label if el is not None else ""


def target_role(graph: AppGraph, edge: Transition) -> str:
    _, el = target_of(graph, edge)
    return el.role if el is not None else ""


def is_commit(graph: AppGraph, edge: Transition) -> bool:
    """Whether an edge submits something: Enter, or a control labelled save / submit / create … on a screen
    that shows a form (a visible field or option). "Add a new bill" on a list only opens the form."""
    t = ActionType(edge.action.type)
    if t is ActionType.KEY:
        return (edge.action.key or "").lower() == "enter"
    if t is not ActionType.CLICK or not COMMIT_WORDS.search(target_label(graph, edge)):
        return False
    obs = graph.observations.get(edge.from_observation_id)
    if obs is None:
        return True
    after = graph.observations.get(edge.to_observation_id)
    if after is not None and _fields(after) > _fields(obs):
        return False  # "Add a new bill" opened a form: an opener, not a submit
    el = obs.element(edge.action.target_element_id) if edge.action.target_element_id else None
    form = FORM_RE.match(el.path) if el is not None and el.path else None
    if form:  # a submit belongs to the form whose fields it sends
        prefix = form.group(1)
        return any(e.visible and (e.editable or e.checkable) and e.path.startswith(prefix) for e in obs.elements)
    if el is not None and el.role == "link" and el.path:
        # A link outside every form sends no field: I Hate Money's empty bill list offers "Add your first bill"
        # under its search box, and typing a search term then following it read as "Create a bill with search".
        return False
    return _fields(obs) > 0


FORM_RE = re.compile(r"^(.*\bform\[\d+\]/)")


def _fields(obs: Observation) -> int:
    return sum(e.visible and (e.editable or e.checkable) for e in obs.elements)


def is_choice(graph: AppGraph, edge: Transition) -> bool:
    return ActionType(edge.action.type) is ActionType.CLICK and target_role(graph, edge) in CHOICE_ROLES


def is_fill(graph: AppGraph, edge: Transition) -> bool:
    return ActionType(edge.action.type) in FILL_TYPES or is_choice(graph, edge)


def history_dependent(edge: Transition) -> bool:
    return ActionType(edge.action.type) in HISTORY_DEPENDENT


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _shows(norm: str, value: str) -> bool:
    """Whether a normalized text shows a lower-cased typed value (see ``Pollution.contains_typed``)."""
    return norm == value or (len(value.split()) >= 2 and value in norm)


@dataclass
class Pollution:
    """Text the crawler typed into the app, which a fresh app does not contain — tracked per value and per the
    captures its typing can have reached.

    A capture is polluted by a typed value when it shows the value *and* the crawl's history says it came from
    that typing (``reached``): the capture's URL carries the value (a search's results, a created item's slug),
    it is on the page the value was typed on, in the same unbroken visit (live results, a preview), or the value
    was sent by a submit and the capture came after it (a created note in the list). Even there, an element that
    showed the value on a capture the typing never reached (``own_keys``: the site title the crawl picked its
    search term from) is the app's own text. A word shown anywhere is not enough: a wiki whose crawl searched for
    the wiki's own name lost the clean capture of 65 of 117 screens to its title and footer.
    """

    typed: set[str] = field(default_factory=set)
    # value -> the captures its typing can have reached; a value missing here reaches every capture
    reached: dict[str, frozenset[str]] = field(default_factory=dict)
    # value -> identities of the elements that show it on captures its typing never reached (the app's own)
    own_keys: dict[str, frozenset[ElementKey]] = field(default_factory=dict)

    @classmethod
    def of(cls, graph: AppGraph) -> Pollution:
        """The values the crawler typed, less those the app showed before the crawler first typed them, each
        with the captures its typing reached.

        Only typed text: choosing a <select> option (named by its label, "Alice") adds nothing to the app. And a
        value the app already showed is the app's own text, which a fresh app shows too: the crawler types into a
        search box a word the page shows ("Deploy" on Node-RED, "Contributing" on docsify), and counting it would
        make every screen with that toolbar button or sidebar link polluted (111 of a Node-RED crawl's 131
        states: no task at all). "Before": on the screen the value was first typed on, or on an earlier capture.
        """
        first: dict[str, tuple[datetime, str]] = {}  # value -> (when first typed, the screen it was typed on)
        for t in graph.transitions:
            value = _typed_value(t)
            if not value:
                continue
            on = graph.observations.get(t.from_observation_id)
            when = on.timestamp if on is not None else t.timestamp
            if value not in first or when < first[value][0]:
                first[value] = (when, t.from_observation_id)
        own: set[str] = set()
        for obs in graph.observations.values():
            pending = [v for v, (when, typed_on) in first.items()
                       if v not in own and (obs.timestamp < when or obs.id == typed_on)]
            if not pending:
                continue
            shown = [_norm(e.label) for e in obs.elements if e.visible and not e.editable]
            own.update(v for v in pending if any(_shows(text, v.lower()) for text in shown))
        typed = set(first) - own
        reached = _reached_by_typing(graph, typed)
        own_keys: dict[str, frozenset[ElementKey]] = {}
        for v in typed:
            low, where = v.lower(), reached.get(v, frozenset())
            own_keys[v] = frozenset(element_key(e) for obs in graph.observations.values() if obs.id not in where
                                    for e in obs.elements
                                    if e.visible and not e.editable and _shows(_norm(e.label), low))
        return cls(typed, reached, own_keys)

    def contains_typed(self, text: str, allowed: frozenset[str] = frozenset()) -> bool:
        """Whether ``text`` shows something the crawler typed: the whole value, or — for values distinctive
        enough to be nobody else's text (two words or more) — the value inside a longer text. A one-word
        search term ("notes") is only pollution where it stands alone, not in "All notes"."""
        norm = _norm(text)
        return any(_shows(norm, t.lower()) for t in self.typed - allowed)

    def shows_typed(self, obs: Observation, el: Element, allowed: frozenset[str] = frozenset()) -> bool:
        """Whether element ``el`` of capture ``obs`` shows a value the crawler typed there (see the class)."""
        if not el.visible or el.editable:
            return False
        norm = _norm(el.label)
        for v in self.typed - allowed:
            if not _shows(norm, v.lower()):
                continue
            where = self.reached.get(v)
            if where is not None and obs.id not in where:
                continue  # the typing never reached this capture: the app's own text
            if element_key(el) in self.own_keys.get(v, frozenset()):
                continue  # the same element shows it where the typing never reached
            return True
        return False

    def clean(self, obs: Observation, allowed: frozenset[str] = frozenset()) -> bool:
        """No visible element shows crawler-typed text (other than ``allowed``, a task's own values)."""
        if not self.typed:
            return True
        return not any(self.shows_typed(obs, e, allowed) for e in obs.elements)


def _typed_value(t: Transition) -> str:
    value = " ".join((t.action.text or "").split())
    if ActionType(t.action.type) is not ActionType.TYPE or len(value) < MIN_TYPED_CHARS:
        return ""
    return value


def _reached_by_typing(graph: AppGraph, values: set[str]) -> dict[str, frozenset[str]]:
    """For each typed value, the captures the crawl's history ties to its typing: those whose URL carries it,
    those of the unbroken visit to the page it was typed on, and every capture after a submit that sent it to be
    kept (not a query: a submit whose next URL carries the value, or typing into a search box)."""
    if not values:
        return {}
    chain = timeline(graph)
    out: dict[str, set[str]] = {v: set() for v in values}
    for obs in graph.observations.values():
        loc = unquote_plus(obs.location).casefold()
        for v in values:
            if v.casefold() in loc:
                out[v].add(obs.id)
    for i, t in enumerate(chain):
        v = _typed_value(t)
        if v not in out:
            continue
        page = location_path(graph.observation(t.from_observation_id)) \
            if t.from_observation_id in graph.observations else ""
        out[v].add(t.to_observation_id)
        prev = t
        for nxt in chain[i + 1:]:  # the same visit, on the same page: live results, a preview
            if nxt.from_observation_id != prev.to_observation_id:
                break
            out[v].add(nxt.from_observation_id)
            after = graph.observations.get(nxt.to_observation_id)
            if after is None or location_path(after) != page:
                break
            out[v].add(nxt.to_observation_id)
            prev = nxt
    sent: dict[str, datetime] = {}
    for c in chain:
        if c.error or not c.effective or not is_commit(graph, c):
            continue
        session = form_session(graph, c, chain)
        after = graph.observations.get(c.to_observation_id)
        query = unquote_plus(after.location).casefold() if after is not None else ""
        for f in session[1] if session is not None else []:
            v = _typed_value(f)
            if v.casefold() in query or target_role(graph, f) == "searchbox":
                continue  # a query: it lives in the URL and the results, the app keeps nothing of it
            if v in out and (v not in sent or c.timestamp < sent[v]):
                sent[v] = c.timestamp
    if sent:
        seen = _capture_times(graph, chain)
        for v, when in sent.items():
            out[v].update(oid for oid, at in seen.items() if at >= when)
    return {v: frozenset(ids) for v, ids in out.items()}


def _capture_times(graph: AppGraph, chain: list[Transition]) -> dict[str, datetime]:
    """When the crawl saw each capture, read off its timeline: right after the first action that reached it, else
    at the first action taken on it (a start screen), else its own timestamp."""
    arrived: dict[str, datetime] = {}
    left: dict[str, datetime] = {}
    for t in chain:
        arrived.setdefault(t.to_observation_id, t.timestamp)
        left.setdefault(t.from_observation_id, t.timestamp)
    return {oid: arrived.get(oid) or left.get(oid) or obs.timestamp for oid, obs in graph.observations.items()}


@dataclass(frozen=True)
class Anchored:
    """An edge's action expressed on a chosen capture of its state, with its target's stable identity."""

    action: Action
    observation_id: str
    key: ElementKey | None
    nth: int


def anchor(graph: AppGraph, edge: Transition, obs: Observation) -> Anchored | None:
    """``edge``'s action on capture ``obs`` of the same state; None when the target is not on that capture."""
    src, el = target_of(graph, edge)
    a = edge.action
    if el is None:
        if a.point is not None and (a.image_width, a.image_height) != (obs.width, obs.height):
            return None
        return Anchored(a, obs.id, None, 0)
    key, nth = element_key(el), occurrence(src, el)
    if obs.id == src.id:
        return Anchored(a, obs.id, key, nth)
    here = find_element(obs, key, nth)
    if here is None or not here.visible:
        return None
    if a.point is None:
        return Anchored(a.model_copy(update={"target_element_id": here.id}), obs.id, key, nth)
    x, y = here.bbox.center
    data = a.model_dump(exclude={"x_norm", "y_norm", "x2", "y2", "x2_norm", "y2_norm"})
    data.update(x=x, y=y, image_width=obs.width, image_height=obs.height, target_element_id=here.id,
                target_bbox=here.bbox.model_dump())
    return Anchored(Action.model_validate(data), obs.id, key, nth)


def switched_captures(graph: AppGraph) -> set[str]:
    """Captures the crawler took after it switched the app's language, until it was back on the entry screen.

    A language lives in the session (a cookie, a saved preference), so every screen after the switch speaks it,
    and a fresh app does not. Most of those screens are states of their own (their words differ), but a screen
    with few words of its own (I Hate Money's settle-up table) is one state in both languages, and an edge the
    crawler took from its German capture ("demonstration" → "Starte ein neues Projekt") read as a route from the
    English one: the task then asked for German words and failed replay. Followed per device along the crawl's
    timeline; landing on the entry state (whose words are the fresh app's) ends it, as a reset or a switch back
    does.
    """
    switched: set[str] = set()
    on: dict[str, bool] = {}
    for t in timeline(graph):
        src = graph.observations.get(t.from_observation_id)
        device = src.device.name if src is not None else ""
        if t.from_state == graph.entry:
            on[device] = False
        if on.get(device):
            switched.add(t.from_observation_id)
        if t.effective and not t.error and LANGUAGE_NAME.match(target_label(graph, t)):
            on[device] = True
        if t.to_state == graph.entry:
            on[device] = False
        elif on.get(device):
            switched.add(t.to_observation_id)
    return switched


class Navigator:
    """Clean captures and shortest navigation paths of one graph (built once per graph, read by every plan).

    A clean capture shows nothing the crawler typed and was not taken in a language the crawler switched to
    (``switched_captures``): a route is only what a fresh user sees."""

    def __init__(self, graph: AppGraph):
        self.graph = graph
        self.pollution = Pollution.of(graph)
        self.switched = switched_captures(graph)
        self._clean: dict[str, Observation | None] = {}
        self.pred: dict[str, tuple[Transition, Anchored]] = {}
        self.dist: dict[str, int] = {}
        self.order: list[str] = []
        self._reached: dict[str, Hop[str, tuple[Transition, Anchored]]] = {}
        self.groups = screen_groups(graph)  # state -> its screen: routes are planned over screens
        self._link_map: dict[ElementKey, Transition] | None = None
        self._page_bound: set[ElementKey] = set()
        self.members: dict[str, list[str]] = {}
        for state, key in self.groups.items():
            self.members.setdefault(key, []).append(state)
        if graph.entry and self.clean_capture(graph.entry) is not None:
            self._bfs()

    def clean_capture(self, state: str, allowed: frozenset[str] = frozenset()) -> Observation | None:
        """The first clean capture of ``state`` (None when every capture shows crawler-made data)."""
        if not allowed and state in self._clean:
            return self._clean[state]
        found = None
        for oid in self.graph.state_observations.get(state, []):
            obs = self.graph.observations.get(oid)
            if obs is not None and oid not in self.switched and self.pollution.clean(obs, allowed):
                found = obs
                break
        if not allowed:
            self._clean[state] = found
        return found

    def is_navigation(self, edge: Transition) -> bool:
        """An edge a screen-goal path may use: it changes screens and commits nothing the app keeps."""
        if edge.from_state == edge.to_state or not edge.effective or edge.error or history_dependent(edge):
            return False
        if is_commit(self.graph, edge) or is_fill(self.graph, edge):
            return False
        label = target_label(self.graph, edge)
        return not (LEAVES_APP.search(label) or LANGUAGE_NAME.match(label) or TIME_OF_DAY.search(label)
                    or self._polluted_target(edge))

    def _polluted_target(self, edge: Transition) -> bool:
        """Whether the edge's control shows text the crawler typed there (a link to the note it created)."""
        obs, el = target_of(self.graph, edge)
        return el is not None and self.pollution.shows_typed(obs, el)

    def anchored(self, edge: Transition) -> Anchored | None:
        """``edge`` on its from-state's clean capture (None when its target exists only on polluted ones)."""
        obs = self.clean_capture(edge.from_state)
        return anchor(self.graph, edge, obs) if obs is not None else None

    def _bfs(self) -> None:
        """Shortest routes over screens, not states (``screen_keys.screen_groups``): from a state, every
        navigation edge the crawl took from any state of the same screen is a way on, replayed on this state's
        clean capture (by the control's identity). A start screen whose content is random is many states with one
        or two out-edges each; as one screen it has them all, and routes are the screen graph's, not the crawl's
        walk. A hop that stays on its screen is no step of a route."""
        groups = self.groups

        def neighbours(u: str) -> Iterator[tuple[tuple[Transition, str], str]]:
            for e, to in self.hops_from(u):
                yield (e, u), to

        def admit(hop: tuple[Transition, str], to: str) -> tuple[Transition, Anchored] | None:
            e, u = hop
            if groups.get(to, to) == groups.get(u, u) or not self.is_navigation(e) or self.clean_capture(to) is None:
                return None
            a = self.anchor_on(e, u)
            return (e, a) if a is not None else None

        reached = breadth_first([self.graph.entry], neighbours, admit)
        self.dist = {state: hop.dist for state, hop in reached.items()}
        self.order = list(reached)
        self.pred = {state: hop.via for state, hop in reached.items() if hop.via is not None}
        self._reached = reached

    def hops_from(self, state: str) -> Iterator[tuple[Transition, str]]:
        """Every way on from ``state`` a route may take, as (edge, where it leads): the edges the crawl took from
        its screen (``ways_out``), then the links (``_links``) its clean capture shows that none of those tapped.
        Callers still check ``is_navigation`` and anchor the edge on ``state``'s capture (``anchor_on``)."""
        if self._link_map is None:
            self._link_map = self._links()
        links = self._link_map
        tried: set[ElementKey] = set()
        for e in self.ways_out(state):
            _, el = target_of(self.graph, e)
            if el is not None:
                tried.add(element_key(el))
            yield e, e.to_state
        here = self.clean_capture(state)
        for el in here.elements if here is not None else []:
            key = element_key(el)
            if key in links and key not in tried and el.visible and el.clickable:
                tried.add(key)
                yield links[key], links[key].to_state

    def _links(self) -> dict[ElementKey, Transition]:
        """Controls that are links to one place wherever they are shown, each with the first edge that took it.

        A navigation bar's "Roadmap" goes to the roadmap from every page, so a route may use it on any screen
        that shows it, tapped there or not: a crawl that walked one long chain through a wiki (entry, help, prefs,
        guide, about, timeline, roadmap) otherwise leaves every screen at the end of that chain, a detour away.
        A control counts when every tap of it (a navigation edge) led to one screen, never to a page named after
        the one it was on (a wiki's "Edit" tab, "What links here"), and it was tapped on two screens or is
        chrome — shown at three locations or more. Replay checks every route so built."""
        g = self.graph
        dests: dict[ElementKey, set[str]] = {}
        first: dict[ElementKey, Transition] = {}
        sources: dict[ElementKey, set[str]] = {}
        dependent: set[ElementKey] = set()
        stayed: set[ElementKey] = set()
        in_place: set[ElementKey] = set()
        start = self.clean_capture(g.entry) if g.entry else None
        home = location_path(start) if start is not None and "://" in start.location else ""
        for t in timeline(g):
            src, el = target_of(g, t)
            after = g.observations.get(t.to_observation_id)
            if el is None or after is None or not self.is_navigation(t):
                continue
            key = element_key(el)
            if self.groups.get(t.to_state, t.to_state) == self.groups.get(t.from_state, t.from_state):
                # A tap that stayed on its screen (a page's own search form, a filter) went nowhere: it says
                # nothing of where the control leads from elsewhere, as the planner's detour check reads it too
                # (``Planner._destinations``), and it binds the control to no page.
                stayed.add(key)
                continue
            first.setdefault(key, t)
            dests.setdefault(key, set()).add(self.groups.get(t.to_state, t.to_state))
            sources.setdefault(key, set()).add(self.groups.get(t.from_state, t.from_state))
            if after.location == src.location:
                # It acted where it was: opened a menu or a dialog over the page, or closed one. What it led to
                # holds the page under it, so it says nothing of where it leads from another page.
                in_place.add(key)
            if _source_dependent(src, after, home):
                dependent.add(key)
                if location_path(src) == location_path(after) and not SCRIPT.search(location_path(src)):
                    stayed.add(key)
            else:
                stayed.add(key)  # a plain link (or a toggle that stayed put): not bound to its page
        shown_at: dict[ElementKey, set[str]] = {}
        for obs in g.observations.values():
            for el in obs.elements:
                if el.visible and el.clickable:
                    shown_at.setdefault(element_key(el), set()).add(location_path(obs))
        self._page_bound = dependent - stayed
        # A control whose tap led below its own page but that once stayed on its page (a menu's "Add user" that
        # opened ``/users?template=item`` from ``/users``) is bound to no page; shown at three places or more it
        # is the frame's link, as the planner's detour check (``Planner._leads_to``) already reads it — when its
        # words name where it went (a footer's "Privacy policy" recorded as reloading a watchlist with other
        # options is a tap that hit something else) and no tap of it acted in place (a dialog's "Close" returns to
        # whatever page was under it).
        return {key: first[key] for key, to in dests.items()
                if len(to) == 1 and key not in self._page_bound
                and ((key not in dependent and len(sources[key]) >= 2)
                     or (len(shown_at.get(key, ())) >= 3
                         and (key not in dependent or (key not in in_place and self._names_where(first[key])))))}

    def _names_where(self, edge: Transition) -> bool:
        """Whether the words of the control ``edge`` tapped name the screen it opened (a word of three letters or
        more shared with that screen's heading or address)."""
        src, el = target_of(self.graph, edge)
        after = self.graph.observations.get(edge.to_observation_id)
        if src is None or el is None or after is None:
            return False
        said = set(re.findall(r"\w{3,}", el.label.casefold()))
        # The address names the page, query included (a tracker's ``issue?@template=search`` is its search page),
        # unless the tap showed the same page again — same path, same heading — with other options: a column
        # header "Title" that sorted a list by ``?ordering=-title`` does not name the list, and read so it became
        # a way to that list from every page with such a column.
        site = site_titles_of(self.graph)
        path, title = location_path(after), heading(after, site)
        same_page = path == location_path(src) and title == heading(src, site)
        shown = " ".join([title, unquote_plus(path if same_page else after.location)]).casefold()
        return not said.isdisjoint(re.findall(r"\w{3,}", shown))

    def page_bound(self, key: ElementKey) -> bool:
        """Whether every tap of the control ``key`` opened another page that belongs to the page it was on (its
        editor ``/notes/6/edit``, ``Special:WhatLinksHere/Garden``): where it led from one page says nothing
        about where it leads from another. A control that once stayed on its page (a menu it unfolds, a filter)
        or once went to a page of its own is not: it may well lead where it did from anywhere."""
        if self._link_map is None:
            self._link_map = self._links()
        return key in self._page_bound

    def ways_out(self, state: str) -> Iterator[Transition]:
        """The edges the crawl took from ``state``'s screen: its own first, then its screen mates' in crawl order."""
        for s in [state, *(m for m in self.members.get(self.groups.get(state, state), []) if m != state)]:
            yield from self.graph.out.get(s, [])

    def anchor_on(self, edge: Transition, state: str) -> Anchored | None:
        """``edge`` (taken from ``state`` or a state of its screen) on ``state``'s clean capture, or None."""
        here = self.clean_capture(state)
        return anchor(self.graph, edge, here) if here is not None else None

    def came_from(self, state: str) -> str | None:
        """The state a route to ``state`` passes last (None for the entry or a state no route reaches)."""
        hop = self._reached.get(state)
        return hop.prev if hop is not None else None

    def path_to(self, state: str) -> list[tuple[Transition, Anchored]] | None:
        """The shortest navigation path from the entry (edges with their anchored actions), or None."""
        return route_to(self._reached, state)

    def same_place(self, a: Observation, b: Observation) -> bool:
        return location_path(a) == location_path(b)


def _source_dependent(before: Observation, after: Observation, home: str = "") -> bool:
    """Whether where a tap went depends on the page it was on: the same page (another query: a tab, a history),
    a page below it (``/notes/6/edit``), or a page naming it (``Special:WhatLinksHere/Garden``).

    ``home`` is the path of the page the app starts on: every page of an app served under ``/admin/`` is below
    its dashboard there, so the dashboard's links to its sections (``/admin/images/``) belong to no page."""
    src, dst = location_path(before).rstrip("/"), location_path(after).rstrip("/")
    if (not src or (home and src == home.rstrip("/"))) and dst != src:
        return False  # the site's root, like the app's home, is no page the pages under it belong to
    if SCRIPT.search(src):
        # A front controller (``/index.php?title=Garden``) serves every page of the app, by query or by path
        # (``/index.php/Special:Preferences``): every page is at or below its path, and its name is in every URL.
        # The page it showed is named by its query's values; a tap whose page names one of them depended on it.
        names = [unquote_plus(v) for _, v in parse_qsl(urlparse(before.location).query)]
    else:
        if dst == src or dst.startswith(src + "/"):
            return True
        names = [unquote_plus(src.rsplit("/", 1)[-1])]
    # a page naming it names it in its route (``Special:WhatLinksHere/Garden``); a query value that only remembers
    # where the tap came from (``?returnTo=/gateway/budgets``) changes nothing the page shows
    where = unquote_plus(after.location if SCRIPT.search(dst) else location_path(after)).casefold()
    return any(len(name) >= 3 and name.casefold() in where for name in names)


def timeline(graph: AppGraph) -> list[Transition]:
    """The crawler's transitions in the order it made them."""
    return sorted(graph.transitions, key=lambda t: (t.timestamp, t.id))


def form_session(graph: AppGraph, commit: Transition, chain: list[Transition]) -> tuple[str, list[Transition]] | None:
    """What the crawler did on the form right before ``commit``: (state where it arrived, fills in order).

    Walks the timeline back from the commit while the previous transition ends on the capture the next one
    started from (one unbroken visit) and fills the form (typing, selecting, choosing an option) on the same
    page; the state the first fill started from is where a task's navigation must arrive. Fields typed twice
    keep their last value. None when the visit is broken (a restart in the middle) or a fill failed.
    """
    try:
        i = chain.index(commit)
    except ValueError:
        return None
    place = location_path(graph.observation(commit.from_observation_id))
    fills: list[Transition] = []
    start = commit.from_state
    j = i - 1
    expect = commit.from_observation_id
    while j >= 0:
        prev = chain[j]
        if prev.to_observation_id != expect:
            break  # the crawler restarted or jumped: the visit began at ``expect``
        prev_place = location_path(graph.observation(prev.from_observation_id))
        if prev_place != place or not is_fill(graph, prev):
            break  # ``prev`` brought the form up (a page load, a button opening a dialog): the visit starts after it
        if prev.error:
            return None  # a fill that failed: the crawler's form is not in the state the fills describe
        fills.append(prev)
        start = prev.from_state
        expect = prev.from_observation_id
        j -= 1
    fills.reverse()
    last: dict[object, Transition] = {}
    for f in fills:
        _, el = target_of(graph, f)
        last[element_key(el) if el is not None else f.id] = f
    keep = {t.id for t in last.values()}
    return start, [f for f in fills if f.id in keep]
