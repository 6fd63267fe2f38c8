"""Exploration policies: what to do next on this screen.

``GreedyPolicy`` is DroidBot's dfs_greedy with the fixes its users ask for: untried actions of the current
state first (form fields before buttons, two rows per list, elements that did nothing elsewhere skipped);
when the state is exhausted, walk the shortest known path to the nearest state with untried actions; when
no path is known (or walks keep landing elsewhere), restart from the entry; stop when nothing anywhere is
left to try. ``RandomPolicy`` is the uniform-random baseline (OS-Genesis-style random walk). A policy sees
only candidates the safety guard allowed, and returns a reason with every decision for the audit log.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol

from explorers.candidates import PRIORITY, Candidate
from explorers.graph import Graph

MAX_WALK = 12  # consecutive walking steps without reaching a fresh action before a restart


@dataclass
class Decision:
    kind: str  # act | restart | stop
    reason: str
    candidate: Candidate | None = None


class Policy(Protocol):
    name: str

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision: ...


@dataclass
class GreedyPolicy:
    name: str = "greedy"
    max_walk: int = MAX_WALK
    _walking: int = 0
    _failed_hops: set[tuple[str, str]] = field(default_factory=set)
    _expected: tuple[str, str, str] | None = None  # (from, key, expected destination) of the last hop

    def choose(self, graph: Graph, state: str, cands: list[Candidate]) -> Decision:
        state = graph.canonical(state)
        if self._expected is not None:
            src, key, want = self._expected
            if graph.canonical(want) != state:
                self._failed_hops.add((graph.canonical(src), key))
            self._expected = None
        by_key = {c.key: c for c in cands}
        fresh = [c for c in cands if graph.is_fresh(state, c.key)]
        if fresh:
            # Elements never tried on any screen first (content), then ones seen elsewhere (navigation chrome,
            # the same form re-shown with an error). Novelty outranks the action type: typing into a field
            # already filled on another screen must not come before the first tap on a new button or link.
            # Among equally novel elements, fields are filled before buttons, so a form is submitted filled.
            def rank(c: Candidate) -> tuple[bool, int, int]:
                tries = graph.target_tries[c.target_key or c.key]
                return tries > 0, PRIORITY.get(c.type, 5), tries

            best = min(fresh, key=rank)
            self._walking = 0
            n = graph.target_tries[best.target_key or best.key]
            return Decision("act", "untried action in this state" + (", new element" if n == 0 else ""), best)
        if self._walking >= self.max_walk:
            self._walking = 0
            self._failed_hops.clear()
            return Decision("restart", f"{self.max_walk} walking steps without reaching an untried action")
        path = graph.path_to_unexplored(state, self._failed_hops)
        if path:
            src, key = path[0]
            c = by_key.get(key)
            if c is not None:
                self._walking += 1
                dests = graph.edges[(src, key)]
                self._expected = (src, key, dests.most_common(1)[0][0])
                return Decision("act", f"walk {len(path)} step(s) to the nearest state with untried actions", c)
            self._failed_hops.add((src, key))
        if graph.any_unexplored():
            self._walking = 0
            self._failed_hops.clear()
            return Decision("restart", "no known path from here to a state with untried actions")
        return Decision("stop", "every known state is fully explored")


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
