"""The in-memory UI transition graph the policy plans on: states, offered actions, what was tried, edges.

It knows nothing about devices or files: the crawler feeds it, the graph store persists what it learns, and
the policy reads it. State ids go through ``canonical`` everywhere, so a merge (learned dynamic region) is
one alias, not a rewrite.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from graph.paths import breadth_first, first_hops
from graph.user_screens import screen_name
from schemas import Action

GROUP_LIMIT = 2  # rows of one list tried per state
INEFFECTIVE_LIMIT = 2  # an element that did nothing this many times is not tried on new screens


def screen_heading(elements: list[dict[str, Any]]) -> str:
    """A logged observation's screen name to a person (``graph.user_screens.screen_name``: the main content's
    heading, not the navigation's or a user menu's)."""
    return screen_name(elements)


@dataclass
class StateInfo:
    id: str
    location: str = ""
    title: str = ""
    observation_id: str = ""
    screenshot_sha256: str = ""
    structural_hash: str = ""
    exact_hash: str = ""
    first_step: int = 0
    heading: str = ""  # the screen's top heading, what a person would call it ("Settings", "History of …")
    visits: int = 0
    offered: dict[str, str] = field(default_factory=dict)  # action key -> group
    targets: dict[str, str] = field(default_factory=dict)  # action key -> element identity
    actions: dict[str, Action] = field(default_factory=dict)
    hints: dict[str, dict[str, str]] = field(default_factory=dict)  # action key -> label / href / form it names
    error_page: str = ""  # why the state is the app's error page (``explorers.error_pages``), "" when it is not


@dataclass
class Graph:
    canonical: Callable[[str], str] = lambda s: s
    group_limit: int = GROUP_LIMIT
    states: dict[str, StateInfo] = field(default_factory=dict)
    tried: dict[str, set[str]] = field(default_factory=dict)
    group_tries: dict[str, Counter[str]] = field(default_factory=dict)
    edges: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)  # (from, key) -> to counts
    ineffective: Counter[str] = field(default_factory=Counter)
    target_tries: Counter[str] = field(default_factory=Counter)  # element identity -> tries in any state
    abandoned: set[str] = field(default_factory=set)
    failed: set[tuple[str, str]] = field(default_factory=set)  # (state, key) whose execution raised: never again
    transitions: int = 0

    def state(self, sid: str) -> StateInfo:
        sid = self.canonical(sid)
        if sid not in self.states:
            self.states[sid] = StateInfo(sid)
        return self.states[sid]

    def offer(self, sid: str, key: str, group: str, target: str, action: Action,
              hints: dict[str, str] | None = None) -> None:
        info = self.state(sid)
        info.offered.setdefault(key, group)
        info.targets.setdefault(key, target)
        info.actions.setdefault(key, action)
        if hints:
            info.hints.setdefault(key, hints)

    def record(self, src: str, key: str, dst: str, effective: bool) -> None:
        src, dst = self.canonical(src), self.canonical(dst)
        self.transitions += 1
        self.tried.setdefault(src, set()).add(key)
        info = self.state(src)
        group = info.offered.get(key, key)
        self.group_tries.setdefault(src, Counter())[group] += 1
        self.edges.setdefault((src, key), Counter())[dst] += 1
        target = info.targets.get(key, "")
        self.target_tries[target or key] += 1
        if not effective and target:
            self.ineffective[target] += 1

    def fail(self, sid: str, key: str) -> None:
        """An action that raised while it was performed or its result was read: skipped from now on."""
        self.failed.add((self.canonical(sid), key))

    def merge(self, absorbed: str, survivor: str) -> None:
        """Fold an absorbed state into its survivor (called after the state table aliased it)."""
        if absorbed == survivor or absorbed not in self.states:
            return
        a = self.states.pop(absorbed)
        s = self.state(survivor)
        s.visits += a.visits
        for k, g in a.offered.items():
            s.offered.setdefault(k, g)
        for k, t in a.targets.items():
            s.targets.setdefault(k, t)
        for k, act in a.actions.items():
            s.actions.setdefault(k, act)
        for k, h in a.hints.items():
            s.hints.setdefault(k, h)
        self.tried.setdefault(survivor, set()).update(self.tried.pop(absorbed, set()))
        self.group_tries.setdefault(survivor, Counter()).update(self.group_tries.pop(absorbed, Counter()))
        self.failed |= {(survivor, k) for s_, k in self.failed if s_ == absorbed}
        for (src, key), tos in list(self.edges.items()):
            if src == absorbed or absorbed in tos:
                del self.edges[(src, key)]
                new = Counter({self.canonical(t): n for t, n in tos.items()})
                self.edges.setdefault((self.canonical(src), key), Counter()).update(new)

    def routes(self, start: str | Iterable[str], hop: Callable[[str, str, Counter[str]], str | None],
               ordered: bool = False) -> dict[str, tuple[int, tuple[str, str] | None]]:
        """Known states reachable from ``start`` over recorded edges: distance, and the first hop (state, action key)
        towards each. ``hop(src, key, destinations)`` names where the (canonical) edge leads now, or None to leave
        it out (an edge that stopped leading where it did); ``ordered`` tries a state's edges by action key instead
        of in recorded order. The crawler's policy walks back to unexplored states and the probe to its targets
        with this one search. Several starts (the screens known URLs open): distances from the nearest, and a
        first hop leaves that start (None for a start itself)."""
        adj: dict[str, list[tuple[str, str]]] = {}
        for (src, key), tos in self.edges.items():
            s = self.canonical(src)
            d = hop(s, key, tos)
            if d is not None and d != s:
                adj.setdefault(s, []).append((key, d))
        if ordered:
            for edges in adj.values():
                edges.sort()
        starts = [start] if isinstance(start, str) else list(start)
        reached = breadth_first(starts, lambda cur: adj.get(cur, []))
        first = first_hops(reached)
        return {state: (hop.dist, first[state]) for state, hop in reached.items()}

    # --- questions the policy asks ----------------------------------------------------------------
    def is_fresh(self, sid: str, key: str) -> bool:
        sid = self.canonical(sid)
        info = self.states.get(sid)
        if info is None or key not in info.offered or key in self.tried.get(sid, ()) or (sid, key) in self.failed:
            return False
        group = info.offered[key]
        if group != key and self.group_tries.get(sid, Counter())[group] >= self.group_limit:
            return False
        target = info.targets.get(key, "")
        return not (target and self.ineffective[target] >= INEFFECTIVE_LIMIT)

    def fresh_keys(self, sid: str) -> list[str]:
        info = self.states.get(self.canonical(sid))
        return [k for k in info.offered if self.is_fresh(sid, k)] if info else []

    def has_unexplored(self, sid: str) -> bool:
        sid = self.canonical(sid)
        return sid not in self.abandoned and bool(self.fresh_keys(sid))

