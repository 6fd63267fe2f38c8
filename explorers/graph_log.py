"""Rebuild the in-memory graph from a worker's step log: the crawler on resume, shortcut probing, the viewer.

The step log is the graph store's source of truth (``store.py``); ``Graph`` and ``StateTable`` are what a
crawl knows while it runs. One function turns the first into the second, so a resumed crawl, a probe run and
an offline look at "what is offered but untried" agree on every state, alias, offer and tried action.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from explorers.abstraction import Features, StateTable
from explorers.graph import Graph, screen_heading
from schemas import Action


@dataclass
class Replayed:
    steps: int = 0  # transitions committed
    restarts: int = 0  # restarts after the first start of each run
    errors: int = 0  # actions skipped because they raised


def remember(graph: Graph, sid: str, obs: dict[str, Any], title: str, offers: list[list[Any]], step: int) -> None:
    """Record one observation of ``sid``: its first capture's facts and the actions it offered."""
    info = graph.state(sid)
    info.visits += 1
    if not info.observation_id:
        info.observation_id, info.location, info.title = obs["id"], obs["location"], title
        info.screenshot_sha256 = obs["screenshot_sha256"]
        info.structural_hash, info.exact_hash = obs["structural_hash"], obs["exact_hash"]
        info.first_step = step
        info.heading = screen_heading(obs.get("elements") or [])
    for key, group, target, action, *hints in offers:
        graph.offer(sid, key, group, target, Action.model_validate(action), hints[0] if hints else None)


def replay_log(records: Iterable[dict[str, Any]], table: StateTable, graph: Graph) -> Replayed:
    """Feed every committed record into ``table`` and ``graph``; returns what the log counted."""
    out = Replayed()
    starts = 0
    for rec in records:
        table.mask.update(rec.get("mask", []))
        for o in rec.get("observations", []):
            table.restore(o["state"], Features(**o["features"]))
            remember(graph, o["state"], o["observation"], o.get("title", ""), o.get("offers", []), out.steps)
            if o.get("scripted"):
                graph.abandoned.add(o["state"])
        for a, b in rec.get("merges", []):
            table.aliases[a] = b
            graph.merge(a, b)
        t = rec.get("transition")
        if t:
            graph.record(t["from_state"], rec["action_key"], t["to_state"], rec.get("memory_effective", True))
            out.steps += 1
        failed = rec.get("failed")
        if failed:
            graph.fail(failed["state"], failed["key"])
            out.errors += 1
        if rec.get("restart"):
            starts += 1
    out.restarts = max(0, starts - 1)  # the first start of a run is not a restart
    return out
