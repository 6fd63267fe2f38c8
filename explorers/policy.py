"""Exploration policies: what to do next on this screen.

``GreedyPolicy`` is DroidBot's dfs_greedy with the fixes its users ask for, steered by an estimate of which
action is likely to reach a *new* state. Every untried action belongs to a novelty class — a link to a URL no
state has yet, a link to the page itself, an element never tried anywhere, one tried on another screen, typing,
a submit button whose form still has empty required fields, scrolling, back — whose chance of reaching a new
state starts at a prior and is learned from what this crawl's actions of that class did (typing into a field
rarely makes a new screen; in an app whose search box opens a popup it does). The policy takes the action with
the best chance per step spent: an action here, or one in another known state reached by walking the shortest
known path, or by restarting from the entry (one step, like any action) and walking from there. Rows of a list
count as one choice (two rows tried per screen, and a family of rows, pages or menu entries tried a few times
anywhere is explored enough), elements that did nothing elsewhere are skipped, and it stops when nothing
anywhere is left to try.

What an element did is remembered per (identity, label): when the app switches language or account, the same
navigation link says something else and is "relabelled" — a new context worth exploring, not a link already
followed (for two contexts: the thirtieth language of a language menu is not a new context). Filling a
required field is worth the submit it unblocks (only when the safety guard lets that submit be pressed); a
submit pressed before is worth pressing again when its form holds something else (where it leads depends on the
form, not the button); re-choosing the radio option a form came with undoes the choice just
made. Walks follow where an action led the last time (apps change their own data: a settle page after a
settlement), a hop that missed twice in a row is no longer walked, and an action a state stopped offering is
given up after two visits. A label whose elements changed nothing three times (settings toggles that re-render
the same screen, an edit button whose confirm dialog is cancelled) is not worth another try.

``RandomPolicy`` is the uniform-random baseline (OS-Genesis-style random walk), ``DepthFirstPolicy`` DroidBot's
naive depth-first one (first untried action, else back). A policy sees only candidates
the safety guard allowed, and returns a reason with every decision for the audit log.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from explorers.abstraction import normalize_location, normalize_text
from explorers.candidates import PRIORITY, Candidate
from explorers.graph import Graph
from schemas import ActionType

MAX_WALK = 12  # consecutive walking steps without reaching a fresh action before a restart

# Prior chance that an action of each class reaches a state never seen before, and how many observations the
# prior is worth against the crawl's own counts.
NOVELTY_PRIORS = {
    "link-new-url": 0.9, "relabelled": 0.8, "element-new": 0.6, "scroll": 0.4, "submit-again": 0.4, "other": 0.3,
    "type": 0.25, "link-known-url": 0.25, "element-seen": 0.2, "back": 0.1, "repeat-known": 0.1,
    "radio-revert": 0.1, "link-self": 0.05, "dead-label": 0.03, "submit-blocked": 0.05, "link-external": 0.02,
    "family-seen": 0.1,
}
PRIOR_WEIGHT = 3.0
# Below this chance an untried action is only taken when no state within reach offers a better one: the
# actions of the current state come first (leaving means coming back later), unless they are all unpromising.
MIN_NOVELTY = 0.2
FILL_DISCOUNT = 0.8  # a required field is worth this share of the submit it unblocks
HOP_MISS_LIMIT = 2  # consecutive times a known hop led elsewhere before walks stop using it
DEAD_LABEL_TRIES = 3  # elements with one label that changed nothing this often are not worth another try
ABSENT_LIMIT = 2  # visits to a state without an action it once offered before that action is given up
SUBMIT_TYPES = ("submit", "image", "")
# A family of look-alike actions (rows of a list, pages of a pager, the entries of a language menu) tried this often
# across all screens is explored enough: each screen's group limit alone lets a 40-language menu, where every
# entry makes a new screen with a fresh menu, take the whole budget.
FAMILY_LIMIT = 4
# Labels an element may be tried with before a further relabelling (another language, another account) is no longer
# a new context worth exploring: the first switch shows the app in another context, the thirtieth shows it again.
RELABEL_LIMIT = 2


@dataclass
class Decision:
    kind: str  # act | restart | open (a known URL, web) | stop
    reason: str
    candidate: Candidate | None = None
    url: str = ""


class Policy(Protocol):
    name: str

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision: ...


def _strip_fragment(url: str) -> str:
    return url.split("#", 1)[0]


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

    @property
    def identity(self) -> tuple[str, str]:
        return self.target, self.label


@dataclass
class GreedyPolicy:
    name: str = "greedy"
    max_walk: int = MAX_WALK
    priors: dict[str, float] = field(default_factory=lambda: dict(NOVELTY_PRIORS))
    _walking: int = 0
    _failed_hops: set[tuple[str, str]] = field(default_factory=set)  # hops that missed since the last restart
    _hop_misses: Counter[tuple[str, str]] = field(default_factory=Counter)  # consecutive misses of a hop
    _last_hop: tuple[str, str] | None = None  # (state, key) of the action just taken
    _latest: dict[tuple[str, str], str] = field(default_factory=dict)  # (state, key) -> where it led last time
    _absent: Counter[tuple[str, str]] = field(default_factory=Counter)  # (state, key) not offered when there
    _expected: tuple[str, str, str] | None = None  # (from, key, expected destination) of the last hop
    _entry: str | None = None  # where a restart lands
    _restarting: bool = True  # the next state seen is the landing of a restart
    _visited: set[str] = field(default_factory=set)
    _last_class: str | None = None
    _tries: dict[str, int] = field(default_factory=dict)  # class -> actions taken
    _hits: dict[str, int] = field(default_factory=dict)  # class -> of those, reached a new state
    _seen: dict[tuple[str, str], _Seen] = field(default_factory=dict)  # (state, key) -> candidate facts
    _known: set[str] = field(default_factory=set)  # normalized locations of known states (this decision)
    _last_target: tuple[str, str] | None = None
    _label_tries: Counter[tuple[str, str]] = field(default_factory=Counter)  # (identity, label) -> actions taken
    _labels_tried: dict[str, set[str]] = field(default_factory=dict)  # identity -> labels it was used with
    _radios: set[tuple[str, str]] = field(default_factory=set)  # radio options ever offered
    _radio_defaults: set[tuple[str, str]] = field(default_factory=set)  # options a form came with
    _radio_chosen: bool = False  # the last action chose a radio option
    _target_dests: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (identity, label) -> states
    _label_effect: dict[str, tuple[int, int]] = field(default_factory=dict)  # label -> (actions, screen changed)
    _family_tries: Counter[str] = field(default_factory=Counter)  # action family -> actions taken, in any state
    _last_group: str = ""

    # --- learning ----------------------------------------------------------------------------------
    def restarted(self) -> None:
        """The crawler restarted on its own (after an error or leaving the app): the next state is a landing,
        and nothing in flight (a walk, the class of the last action) carries over to it."""
        self._walking = 0
        self._failed_hops.clear()
        self._restarting = True
        self._expected = None
        self._last_hop = None
        self._last_class = self._last_target = None
        self._last_group = ""
        self._radio_chosen = False

    def _observe(self, graph: Graph, state: str) -> None:
        new = state not in self._visited
        self._visited.add(state)
        cls = self._last_class
        if cls is not None and cls != "type-required":
            self._tries[cls] = self._tries.get(cls, 0) + 1
            self._hits[cls] = self._hits.get(cls, 0) + int(new)
        if self._last_target is not None:
            if self._last_target[1] and self._last_hop is not None:
                tries, changed = self._label_effect.get(self._last_target[1], (0, 0))
                changed += graph.canonical(self._last_hop[0]) != state
                self._label_effect[self._last_target[1]] = (tries + 1, changed)
            self._label_tries[self._last_target] += 1
            self._labels_tried.setdefault(self._last_target[0], set()).add(self._last_target[1])
            self._target_dests.setdefault(self._last_target, set()).add(state)
        if self._last_group:
            self._family_tries[self._last_group] += 1
        self._last_class = self._last_target = None
        self._last_group = ""
        if self._restarting:
            self._entry = state
            self._restarting = False

    def novelty(self, cls: str) -> float:
        """Estimated chance that an action of ``cls`` reaches a new state (prior blended with this crawl)."""
        if cls == "type-required":
            # Filling a required field never changes the screen by itself; it is worth what the submit it unblocks
            # is worth, one step later.
            return FILL_DISCOUNT * self.novelty("element-new")
        prior = self.priors.get(cls, 0.3)
        return (self._hits.get(cls, 0) + prior * PRIOR_WEIGHT) / (self._tries.get(cls, 0) + PRIOR_WEIGHT)

    # --- classifying ---------------------------------------------------------------------------------
    def _remember(self, state: str, cands: list[Candidate]) -> None:
        radio_just_chosen, self._radio_chosen = self._radio_chosen, False
        empty_required = {w.form_action for c in cands if (w := c.widget) is not None
                          and w.element.editable and w.required and not w.value and w.form_action}
        # Forms whose submit button is on offer (the safety guard may have withheld it, e.g. "Send"): only for
        # those is filling a required field a step towards a new screen.
        submittable = {w.form_action for c in cands if (w := c.widget) is not None and c.type is ActionType.CLICK
                       and w.form_action and w.tag in ("button", "input") and w.input_type in SUBMIT_TYPES}
        for c in cands:
            w = c.widget
            t = c.type
            if t in (ActionType.TYPE, ActionType.SELECT):
                needed = w is not None and w.required and not w.value and w.form_action in empty_required \
                    and w.form_action in submittable
                hint = "type-required" if needed else "type"
            elif t is ActionType.NAVIGATE_BACK:
                hint = "back"
            elif t in (ActionType.SCROLL, ActionType.SWIPE):
                hint = "scroll"
            elif t is not ActionType.CLICK or w is None:
                hint = "other"
            elif w.href and urlsplit(w.href).scheme in ("http", "https"):
                hint = "link"
            elif w.form_action in empty_required and w.tag in ("button", "input") and w.input_type in SUBMIT_TYPES:
                hint = "submit-blocked"
            elif w.form_action and w.tag in ("button", "input") and w.input_type in SUBMIT_TYPES:
                hint = "submit"
            else:
                hint = "element"
            label = normalize_text(w.label) if w else ""
            seen = _Seen(hint, w.href if w else "", c.target_key or c.key, label, c.group if c.group != c.key else "")
            if w is not None and w.element.role == "radio" and seen.identity not in self._radios:
                # A checked radio offers no action; one that first shows up right after choosing another option
                # of its group is the option the form came with, and choosing it again undoes that choice.
                self._radios.add(seen.identity)
                if radio_just_chosen:
                    self._radio_defaults.add(seen.identity)
            self._seen[(state, c.key)] = seen

    def _class(self, graph: Graph, state: str, key: str) -> str:
        seen = self._seen.get((state, key))
        if seen is None:  # offered in a state this policy never stood in (resumed crawl): judge by the graph
            info = graph.states.get(state)
            target = info.targets.get(key, "") if info else ""
            return "element-seen" if graph.target_tries[target or key] else "element-new"
        # Element memory is keyed by identity *and* label: after a language or account switch the same navigation
        # link says something else and leads to screens never seen, so what it did before predicts nothing.
        tried = self._label_tries[seen.identity] > 0
        if seen.cls_hint == "type-required" and tried:
            return "type"  # this field was filled (and its form submitted) elsewhere already
        if seen.identity in self._radio_defaults:
            return "radio-revert"  # re-choosing the option the form came with undoes the choice just made
        if seen.group and not tried and self._family_tries[seen.group] >= FAMILY_LIMIT:
            return "family-seen"  # a few rows of this list (entries of this menu) were tried already, elsewhere
        if seen.label and seen.cls_hint in ("link", "element", "submit"):
            tries, changed = self._label_effect.get(seen.label, (0, 0))
            if tries >= DEAD_LABEL_TRIES and not changed:
                return "dead-label"  # elements saying this never changed the screen (a toggle, a cancelled confirm)
        if seen.cls_hint == "submit":
            # Where a submit leads depends on what the form holds, and this state's form holds something else
            # than where it was pressed before (another option chosen, another field filled).
            return "submit-again" if tried else "element-new"
        others = self._labels_tried.get(seen.target, set())
        if not tried and seen.label and seen.cls_hint in ("link", "element") and len(others) < RELABEL_LIMIT \
                and any(label != seen.label for label in others):
            return "relabelled"  # an element already used now says something else: the app's context changed
        if seen.cls_hint in ("link", "element", "submit-blocked"):
            dests = self._target_dests.get(seen.identity)
            if dests and all(graph.canonical(d) in self._visited for d in dests):
                return "repeat-known"  # this element led only to screens already seen, wherever it was tried
        if seen.cls_hint == "link":
            here = graph.states.get(state)
            if here is not None and urlsplit(seen.href).netloc != urlsplit(here.location).netloc:
                return "link-external"  # leaving the app costs the step and the way back
            if here is not None and _strip_fragment(seen.href) == _strip_fragment(here.location):
                return "link-self"
            if normalize_location(seen.href) not in self._known:
                return "link-new-url"
            return "element-seen" if tried else "link-known-url"
        if seen.cls_hint == "element":
            return "element-seen" if tried else "element-new"
        return seen.cls_hint

    def _best_in(self, graph: Graph, state: str, offered: set[str] | None = None) -> tuple[float, str, str] | None:
        """(novelty, key, class) of the most promising untried action of ``state``.

        ``offered``: the keys on screen now (the current state); elsewhere, actions that were missing the last
        ABSENT_LIMIT times the crawl stood in that state (a variant merged into it offered them) are not counted.
        """
        best = None
        for key in graph.fresh_keys(state):
            if (key not in offered) if offered is not None else self._absent[(state, key)] >= ABSENT_LIMIT:
                continue
            score, cls = self._score(graph, state, key)
            if best is None or score > best[0]:
                best = (score, key, cls)
        return best

    def _score(self, graph: Graph, state: str, key: str) -> tuple[float, str]:
        """Chance that this action reaches a new state (its class's learned rate), and the class."""
        cls = self._class(graph, state, key)
        return self.novelty(cls), cls

    # --- planning --------------------------------------------------------------------------------------
    def _bfs(self, graph: Graph, start: str) -> dict[str, tuple[int, tuple[str, str] | None]]:
        """Known states reachable from ``start``: distance and the first hop (state, action key) towards them."""
        adj: dict[str, list[tuple[str, str]]] = {}
        for (src, key), tos in graph.edges.items():
            s = graph.canonical(src)
            if (s, key) in self._failed_hops or self._hop_misses[(s, key)] >= HOP_MISS_LIMIT:
                continue
            d = graph.canonical(self._destination(s, key, tos))
            if d != s:
                adj.setdefault(s, []).append((key, d))
        out: dict[str, tuple[int, tuple[str, str] | None]] = {start: (0, None)}
        queue = deque([start])
        while queue:
            cur = queue.popleft()
            dist, first = out[cur]
            for key, nxt in adj.get(cur, []):
                if nxt not in out:
                    out[nxt] = (dist + 1, first or (cur, key))
                    queue.append(nxt)
        return out

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision:
        state = graph.canonical(state)
        self._observe(graph, state)
        self._remember(state, cands)
        self._known = {normalize_location(s.location) for s in graph.states.values() if s.location}
        if self._expected is not None:
            src, key, want = self._expected
            hop = (graph.canonical(src), key)
            if graph.canonical(want) != state:
                self._failed_hops.add(hop)
                self._hop_misses[hop] += 1
            else:
                self._hop_misses[hop] = 0
            self._expected = None
        if self._last_hop is not None:
            tos: Counter[str] = graph.edges.get(self._last_hop) or Counter()
            if any(graph.canonical(t) == state for t in tos):  # the graph recorded the same landing
                self._latest[self._last_hop] = state  # apps change their data: the latest outcome predicts best
            self._last_hop = None
        by_key = {c.key: c for c in cands}
        for key in graph.fresh_keys(state):
            if key not in by_key:
                self._absent[(state, key)] += 1
        # The best action here; if it is unpromising, the best elsewhere per step spent reaching it (walking, or
        # restarting from the entry and walking from there).
        here = self._best_in(graph, state, set(by_key))
        plan: tuple[str, tuple[str, str] | None, int, str] | None = None  # (target, first hop, distance, how)
        if here is None or here[0] < MIN_NOVELTY:
            plan = self._plan(graph, state, here[0] if here else 0.0)
        if plan is None and here is not None:
            score, key, _cls = here
            best = self._pick(graph, state, cands, key, score)
            self._walking = 0
            n = graph.target_tries[best.target_key or best.key]
            return Decision("act", f"untried action in this state ({self._last_class}, novelty "
                            f"{score:.2f})" + (", new element" if n == 0 else ""), best)
        if plan is not None and plan[3] == "walk" and plan[1] is not None:
            src, key = plan[1]
            c = by_key.get(key)
            if c is not None:
                self._walking += 1
                self._last_target = self._identity(state, c)
                self._last_group = self._group_of(state, c)
                self._radio_chosen = _is_radio(c)
                self._last_hop = (state, key)
                self._expected = (src, key, self._destination(src, key, graph.edges[(src, key)]))
                return Decision("act", f"walk {plan[2]} step(s) to a state with a more promising untried action", c)
            self._failed_hops.add((src, key))
        if plan is not None or self._anything_left(graph):
            self._walking = 0
            self._failed_hops.clear()
            self._restarting = True
            why = "restart: the nearest promising untried action is closer from the entry" if plan is not None \
                else "no known path from here to a state with untried actions"
            return Decision("restart", why)
        return Decision("stop", "every known state is fully explored")

    def _plan(self, graph: Graph, state: str, floor: float) -> tuple[str, tuple[str, str] | None, int, str] | None:
        """The known state whose best untried action is worth most per step spent getting there."""
        best_value, plan = floor, None
        walks = self._bfs(graph, state) if self._walking < self.max_walk else {state: (0, None)}
        from_entry = self._bfs(graph, graph.canonical(self._entry)) if self._entry is not None else {}
        for s in set(walks) | set(from_entry):
            if s == state or not graph.has_unexplored(s):
                continue
            got = self._best_in(graph, s)
            if got is None:
                continue
            d_walk = walks[s][0] if s in walks else None
            d_restart = 1 + from_entry[s][0] if s in from_entry else None
            if d_walk is not None and (d_restart is None or d_walk <= d_restart):
                dist, how = d_walk, "walk"
            elif d_restart is not None:
                dist, how = d_restart, "restart"
            else:
                continue
            value = got[0] / (dist + 1)
            if value > best_value or (plan is not None and value == best_value and dist < plan[2]):
                best_value = value
                plan = (s, walks[s][1] if how == "walk" else None, dist, how)
        return plan

    def _pick(self, graph: Graph, state: str, cands: list[Candidate], key: str, score: float) -> Candidate:
        """Among this state's fresh candidates of the best novelty, the one the old order ranks first."""
        tied = [c for c in cands if graph.is_fresh(state, c.key)
                and self._score(graph, state, c.key)[0] >= score - 1e-9]

        def rank(c: Candidate) -> tuple[bool, int, int]:
            tries = self._label_tries[self._identity(state, c)]
            return tries > 0, PRIORITY.get(c.type, 5), tries

        best = min(tied, key=rank) if tied else next(c for c in cands if c.key == key)
        self._last_class = self._class(graph, state, best.key)
        self._last_target = self._identity(state, best)
        self._last_group = self._group_of(state, best)
        self._radio_chosen = _is_radio(best)
        self._last_hop = (state, best.key)
        return best

    def _destination(self, src: str, key: str, tos: Counter[str]) -> str:
        """Where taking ``key`` in ``src`` is expected to lead: where it led last time, else most often."""
        return self._latest.get((src, key)) or tos.most_common(1)[0][0]

    def _group_of(self, state: str, c: Candidate) -> str:
        seen = self._seen.get((state, c.key))
        return seen.group if seen is not None else ""

    def _identity(self, state: str, c: Candidate) -> tuple[str, str]:
        seen = self._seen.get((state, c.key))
        return seen.identity if seen is not None else (c.target_key or c.key, "")

    def _anything_left(self, graph: Graph) -> bool:
        """Whether any known state still has an untried action that was on screen the last time it was there."""
        return any(self._best_in(graph, s) is not None for s in graph.states if graph.has_unexplored(s))


@dataclass
class RandomPolicy:
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
class DepthFirstPolicy:
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
