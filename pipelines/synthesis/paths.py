"""Sample candidate trajectories (paths of graph edges) from an app's state-transition graph.

Three samplers, because each covers what the others miss:

- **shortest** paths from the entry to every reachable state: the canonical way to reach each screen;
- **goal-directed** paths to *meaningful* states, those reached by committing something (a form submission,
  a saved edit, a created item);
- bounded **random walks** (seeded, cycle-free), for diverse, less canonical routes.

Every path gets the form-filling self-loops (typing into fields) put back in front of each commit, so the
task is complete and replayable. Length and diversity controls: paths shorter than ``min_len`` or longer
than ``max_len`` are dropped, duplicate edge sequences are merged (first sampler wins), and at most
``max_per_end_state`` paths may end in the same state so one hub screen cannot dominate a dataset.
"""

from __future__ import annotations

import random
import re
from collections import deque
from dataclasses import dataclass

from pipelines.synthesis.graph_input import AppGraph
from schemas import ActionType, Transition
from schemas.observation import Observation

# Labels of controls that commit something; en and zh, matched on whole words / substrings.
COMMIT_WORDS = re.compile(
    r"\b(save|submit|create|add|send|log ?in|sign ?in|sign ?up|register|apply|confirm|update|post|done|ok)\b"
    r"|保存|提交|创建|添加|发送|登录|注册|应用|确认|更新|完成",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class PathConfig:
    min_len: int = 1
    max_len: int = 8
    walks: int = 20
    walk_len: int = 6
    max_per_end_state: int = 3
    max_paths: int = 500
    seed: int = 0
    shortest: bool = True
    goals: bool = True


@dataclass(frozen=True)
class GraphPath:
    """A candidate trajectory: an ordered tuple of edges, with how it was sampled."""

    app_id: str
    edges: tuple[Transition, ...]
    kind: str  # shortest | goal | walk

    @property
    def start_state(self) -> str:
        return self.edges[0].from_state

    @property
    def end_state(self) -> str:
        return self.edges[-1].to_state

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.edges)


def _target_label(obs: Observation | None, edge: Transition) -> str:
    if obs is None or edge.action.target_element_id is None:
        return ""
    el = obs.element(edge.action.target_element_id)
    return el.label if el else ""


def is_commit(graph: AppGraph, edge: Transition) -> bool:
    """Whether an edge commits something: a click on a control labelled save / submit / create / log in…"""
    if ActionType(edge.action.type) not in (ActionType.CLICK, ActionType.KEY):
        return False
    if ActionType(edge.action.type) is ActionType.KEY:
        return (edge.action.key or "").lower() == "enter"
    label = _target_label(graph.observations.get(edge.from_observation_id), edge)
    return bool(COMMIT_WORDS.search(label))


# Where these lead depends on how the screen was reached (the browser's or the activity stack's history), not
# on the screen: "back" from Settings went to the edit form in the crawl, but goes to the notes list at the end
# of a synthesized path that reached Settings another way. Sampled paths never use them (a back that returns
# to the previous screen would be a cycle, which no sampler builds); recovery samples add back steps
# deliberately, where the history is known.
HISTORY_DEPENDENT = {ActionType.NAVIGATE_BACK}


def path_edge(e: Transition) -> bool:
    """Whether an edge means the same thing wherever it appears in a path."""
    return ActionType(e.action.type) not in HISTORY_DEPENDENT


def shortest_tree(graph: AppGraph, source: str) -> dict[str, Transition]:
    """BFS predecessor edges from ``source`` (edges visited in id order, so ties break deterministically)."""
    pred: dict[str, Transition] = {}
    seen = {source}
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for e in graph.out.get(u, []):
            if e.to_state not in seen and path_edge(e):
                seen.add(e.to_state)
                pred[e.to_state] = e
                queue.append(e.to_state)
    return pred


def path_to(pred: dict[str, Transition], source: str, target: str) -> list[Transition] | None:
    if target == source:
        return []
    if target not in pred:
        return None
    out: list[Transition] = []
    node = target
    while node != source:
        e = pred[node]
        out.append(e)
        node = e.from_state
    return out[::-1]


def form_fill(graph: AppGraph, state: str) -> list[Transition]:
    """Self-loop edges at ``state`` that type into distinct fields (one per field, first by id)."""
    chosen: dict[str, Transition] = {}
    for e in graph.loops.get(state, []):
        if ActionType(e.action.type) is ActionType.TYPE and e.action.target_element_id not in chosen:
            chosen[e.action.target_element_id or e.id] = e
    return list(chosen.values())


def complete_forms(graph: AppGraph, edges: list[Transition] | tuple[Transition, ...]) -> tuple[Transition, ...]:
    """Put the typing self-loops of a state back in front of every commit edge leaving it.

    A crawler records "tap Log in" as the edge from the login screen to the notes list, but that tap only works
    after the fields were filled; without the fill steps a path would teach (and replay) an impossible step.
    """
    out: list[Transition] = []
    for e in edges:
        if is_commit(graph, e):
            done = {x.id for x in out}
            out += [f for f in form_fill(graph, e.from_state) if f.id not in done]
        out.append(e)
    return tuple(out)


def shortest_paths(graph: AppGraph) -> list[GraphPath]:
    pred = shortest_tree(graph, graph.entry)
    paths = []
    for state in sorted(pred):
        edges = path_to(pred, graph.entry, state)
        if edges:
            paths.append(GraphPath(graph.app_id, tuple(edges), "shortest"))
    return paths


def goal_paths(graph: AppGraph) -> list[GraphPath]:
    """Entry → the commit edge's state, with typing self-loops there, then the commit edge."""
    pred = shortest_tree(graph, graph.entry)
    paths = []
    for state in sorted(graph.out):
        prefix = path_to(pred, graph.entry, state)
        if prefix is None:
            continue
        for e in graph.out[state]:
            if is_commit(graph, e) and path_edge(e):
                paths.append(GraphPath(graph.app_id, (*prefix, e), "goal"))
    return paths


def random_walks(graph: AppGraph, n: int, length: int, seed: int) -> list[GraphPath]:
    """Cycle-free walks from the entry; a walk stops early at a dead end."""
    rng = random.Random(seed)
    paths = []
    for _ in range(n):
        node, visited, edges = graph.entry, {graph.entry}, []
        for _ in range(length):
            options = [e for e in graph.out.get(node, []) if e.to_state not in visited and path_edge(e)]
            if not options:
                break
            e = rng.choice(options)
            edges.append(e)
            visited.add(e.to_state)
            node = e.to_state
        if edges:
            paths.append(GraphPath(graph.app_id, tuple(edges), "walk"))
    return paths


def sample_paths(graph: AppGraph, config: PathConfig | None = None) -> list[GraphPath]:
    """All samplers, then length filter, de-duplication and the per-end-state cap, in a stable order."""
    cfg = config or PathConfig()
    if not graph.entry:
        return []
    candidates: list[GraphPath] = []
    if cfg.shortest:
        candidates += shortest_paths(graph)
    if cfg.goals:
        candidates += goal_paths(graph)
    if cfg.walks:
        candidates += random_walks(graph, cfg.walks, cfg.walk_len, cfg.seed)
    seen: set[tuple[str, ...]] = set()
    per_end: dict[str, int] = {}
    out: list[GraphPath] = []
    for p in candidates:
        p = GraphPath(p.app_id, complete_forms(graph, p.edges), p.kind)
        if not (cfg.min_len <= len(p.edges) <= cfg.max_len) or p.key in seen:
            continue
        if per_end.get(p.end_state, 0) >= cfg.max_per_end_state:
            continue
        seen.add(p.key)
        per_end[p.end_state] = per_end.get(p.end_state, 0) + 1
        out.append(p)
        if len(out) >= cfg.max_paths:
            break
    return out
