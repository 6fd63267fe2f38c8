"""Exploration policies: what to do next on this screen.

``GreedyPolicy`` is DroidBot's dfs_greedy with the fixes its users ask for, steered by an estimate of which
action is likely to reach a *new* state. Every untried action belongs to a novelty class — a link to a URL no
state has yet, a link to the page itself, an element never tried anywhere, one tried on another screen, typing,
a submit button whose form still has empty required fields, scrolling, back — whose chance of reaching a new
state starts at a prior and is learned from what this crawl's actions of that class did (typing into a field
rarely makes a new screen; in an app whose search box opens a popup it does). The policy takes the action with
the best chance per step spent: an action here, or one in another known state reached by walking the shortest
known path, or by restarting from the entry (one step, like any action) and walking from there. Rows of a list
count as one choice (two rows tried), elements that did nothing elsewhere are skipped, and it stops when
nothing anywhere is left to try. ``RandomPolicy`` is the uniform-random baseline (OS-Genesis-style random
walk). A policy sees only candidates the safety guard allowed, and returns a reason with every decision for
the audit log.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from explorers.abstraction import normalize_location
from explorers.candidates import PRIORITY, Candidate
from explorers.graph import Graph
from schemas import ActionType

MAX_WALK = 12  # consecutive walking steps without reaching a fresh action before a restart

# Prior chance that an action of each class reaches a state never seen before, and how many observations the
# prior is worth against the crawl's own counts.
NOVELTY_PRIORS = {
    "link-new-url": 0.9, "element-new": 0.6, "scroll": 0.4, "other": 0.3, "type": 0.25, "link-known-url": 0.25,
    "element-seen": 0.2, "back": 0.1, "repeat-known": 0.1, "link-self": 0.05, "submit-blocked": 0.05,
    "link-external": 0.02,
}
PRIOR_WEIGHT = 3.0
# Below this chance an untried action is only taken when no state within reach offers a better one: the
# actions of the current state come first (leaving means coming back later), unless they are all unpromising.
MIN_NOVELTY = 0.2
SUBMIT_TYPES = ("submit", "image", "")


@dataclass
class Decision:
    kind: str  # act | restart | stop
    reason: str
    candidate: Candidate | None = None


class Policy(Protocol):
    name: str

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision: ...


def _strip_fragment(url: str) -> str:
    return url.split("#", 1)[0]


@dataclass
class _Seen:
    """What the policy remembers of a candidate from when it was on screen (other states are planned on this)."""

    cls_hint: str  # type / back / scroll / other / link / submit-blocked / element
    href: str = ""
    target: str = ""


@dataclass
class GreedyPolicy:
    name: str = "greedy"
    max_walk: int = MAX_WALK
    priors: dict[str, float] = field(default_factory=lambda: dict(NOVELTY_PRIORS))
    _walking: int = 0
    _failed_hops: set[tuple[str, str]] = field(default_factory=set)
    _expected: tuple[str, str, str] | None = None  # (from, key, expected destination) of the last hop
    _entry: str | None = None  # where a restart lands
    _restarting: bool = True  # the next state seen is the landing of a restart
    _visited: set[str] = field(default_factory=set)
    _last_class: str | None = None
    _tries: dict[str, int] = field(default_factory=dict)  # class -> actions taken
    _hits: dict[str, int] = field(default_factory=dict)  # class -> of those, reached a new state
    _seen: dict[tuple[str, str], _Seen] = field(default_factory=dict)  # (state, key) -> candidate facts
    _known: set[str] = field(default_factory=set)  # normalized locations of known states (this decision)
    _last_target: str | None = None
    _target_dests: dict[str, set[str]] = field(default_factory=dict)  # element identity -> states it led to

    # --- learning ----------------------------------------------------------------------------------
    def _observe(self, graph: Graph, state: str) -> None:
        new = state not in self._visited
        self._visited.add(state)
        if self._last_class is not None:
            self._tries[self._last_class] = self._tries.get(self._last_class, 0) + 1
            self._hits[self._last_class] = self._hits.get(self._last_class, 0) + int(new)
        if self._last_target is not None:
            self._target_dests.setdefault(self._last_target, set()).add(state)
        self._last_class = self._last_target = None
        if self._restarting:
            self._entry = state
            self._restarting = False

    def novelty(self, cls: str) -> float:
        """Estimated chance that an action of ``cls`` reaches a new state (prior blended with this crawl)."""
        prior = self.priors.get(cls, 0.3)
        return (self._hits.get(cls, 0) + prior * PRIOR_WEIGHT) / (self._tries.get(cls, 0) + PRIOR_WEIGHT)

    # --- classifying ---------------------------------------------------------------------------------
    def _remember(self, state: str, cands: list[Candidate]) -> None:
        empty_required = {w.form_action for c in cands if (w := c.widget) is not None
                          and w.element.editable and w.required and not w.value and w.form_action}
        for c in cands:
            w = c.widget
            t = c.type
            if t in (ActionType.TYPE, ActionType.SELECT):
                hint = "type"
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
            else:
                hint = "element"
            self._seen[(state, c.key)] = _Seen(hint, w.href if w else "", c.target_key or c.key)

    def _class(self, graph: Graph, state: str, key: str) -> str:
        seen = self._seen.get((state, key))
        if seen is None:  # offered in a state this policy never stood in (resumed crawl): judge by the graph
            info = graph.states.get(state)
            target = info.targets.get(key, "") if info else ""
            return "element-seen" if graph.target_tries[target or key] else "element-new"
        if seen.cls_hint in ("link", "element", "submit-blocked"):
            dests = self._target_dests.get(seen.target)
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
            return "element-seen" if graph.target_tries[seen.target] else "link-known-url"
        if seen.cls_hint == "element":
            return "element-seen" if graph.target_tries[seen.target] else "element-new"
        return seen.cls_hint

    def _best_in(self, graph: Graph, state: str) -> tuple[float, str, str] | None:
        """(novelty, key, class) of the most promising untried action of ``state``."""
        best = None
        for key in graph.fresh_keys(state):
            cls = self._class(graph, state, key)
            score = self.novelty(cls)
            if best is None or score > best[0]:
                best = (score, key, cls)
        return best

    # --- planning --------------------------------------------------------------------------------------
    def _bfs(self, graph: Graph, start: str) -> dict[str, tuple[int, tuple[str, str] | None]]:
        """Known states reachable from ``start``: distance and the first hop (state, action key) towards them."""
        adj: dict[str, list[tuple[str, str]]] = {}
        for (src, key), tos in graph.edges.items():
            s = graph.canonical(src)
            if (s, key) in self._failed_hops:
                continue
            d = graph.canonical(tos.most_common(1)[0][0])
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
            if graph.canonical(want) != state:
                self._failed_hops.add((graph.canonical(src), key))
            self._expected = None
        by_key = {c.key: c for c in cands}
        # The best action here; if it is unpromising, the best elsewhere per step spent reaching it (walking, or
        # restarting from the entry and walking from there).
        here = self._best_in(graph, state) if any(graph.is_fresh(state, c.key) for c in cands) else None
        plan: tuple[str, tuple[str, str] | None, int, str] | None = None  # (target, first hop, distance, how)
        if here is None or here[0] < MIN_NOVELTY:
            plan = self._plan(graph, state, here[0] if here else 0.0)
        if plan is None and here is not None:
            _score, key, cls = here
            best = self._pick(graph, state, cands, key, cls)
            self._walking = 0
            n = graph.target_tries[best.target_key or best.key]
            return Decision("act", f"untried action in this state ({self._last_class}, novelty "
                            f"{self.novelty(cls):.2f})" + (", new element" if n == 0 else ""), best)
        if plan is not None and plan[3] == "walk" and plan[1] is not None:
            src, key = plan[1]
            c = by_key.get(key)
            if c is not None:
                self._walking += 1
                self._last_target = c.target_key or c.key
                dests = graph.edges[(src, key)]
                self._expected = (src, key, dests.most_common(1)[0][0])
                return Decision("act", f"walk {plan[2]} step(s) to a state with a more promising untried action", c)
            self._failed_hops.add((src, key))
        if plan is not None or graph.any_unexplored():
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

    def _pick(self, graph: Graph, state: str, cands: list[Candidate], key: str, cls: str) -> Candidate:
        """Among this state's fresh candidates of the best novelty, the one the old order ranks first."""
        score = self.novelty(cls)
        tied = [c for c in cands if graph.is_fresh(state, c.key)
                and self.novelty(self._class(graph, state, c.key)) >= score - 1e-9]

        def rank(c: Candidate) -> tuple[bool, int, int]:
            tries = graph.target_tries[c.target_key or c.key]
            return tries > 0, PRIORITY.get(c.type, 5), tries

        best = min(tied, key=rank) if tied else next(c for c in cands if c.key == key)
        self._last_class = self._class(graph, state, best.key)
        self._last_target = best.target_key or best.key
        return best


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


def make_policy(name: str, seed: int = 0) -> Policy:
    if name == "greedy":
        return GreedyPolicy()
    if name == "random":
        return RandomPolicy(seed=seed)
    raise ValueError(f"policy: unknown policy {name!r} (known: greedy, random)")
