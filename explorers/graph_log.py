"""Rebuild the in-memory graph from a worker's step log: the crawler on resume, shortcut probing, the viewer.

The step log is the graph store's source of truth (``store.py``); ``Graph`` and ``StateTable`` are what a
crawl knows while it runs. One function turns the first into the second, so a resumed crawl, a probe run and
an offline look at "what is offered but untried" agree on every state, alias, offer and tried action.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from explorers.graph import Graph, screen_heading
from explorers.steps import LoggedObservation, StepRecord
from graph.abstraction import StateTable
from schemas import ActionType


@dataclass
class Replayed:
    steps: int = 0  # transitions committed
    restarts: int = 0  # restarts the crawl chose or needed (not the start of a run, nor a new browser session)
    errors: int = 0  # actions skipped because they raised
    opens: int = 0  # known URLs opened directly
    typed: list[str] = field(default_factory=list)  # texts the crawl typed, in order
    probe_steps: int = 0  # transitions a shortcut probe committed (in the graph, not in the crawl's counts)
    probe_spent: int = 0  # the probes' actions, restarts and opened URLs (not spent from ``budget.max_steps``)

    @property
    def budget_used(self) -> int:
        """What counts against ``budget.max_steps``: every action, restart and opened URL."""
        return self.steps + self.restarts + self.opens


# Restart reasons that are not the crawl's own navigation: the start of a run (first or resumed) and the session
# a dead browser was replaced with.
UNCOUNTED_RESTARTS = ("start", "resume", "new session after the previous one died")


def remember(graph: Graph, logged: LoggedObservation, step: int) -> None:
    """Record one observation of its state: its first capture's facts and the actions it offered."""
    info = graph.state(logged.state)
    info.visits += 1
    if not info.observation_id:
        info.observation_id, info.location, info.title = logged.observation_id, logged.location, logged.title
        info.screenshot_sha256 = logged.screenshot_sha256
        info.structural_hash, info.exact_hash = logged.structural_hash, logged.exact_hash
        info.first_step = step
        info.heading = screen_heading(logged.elements)
        info.error_page = logged.error_page
    for o in logged.offers:
        graph.offer(logged.state, o.key, o.group, o.target, o.action, dict(o.hints) or None)


def replay_log(steps: Iterable[StepRecord], table: StateTable, graph: Graph) -> Replayed:
    """Feed every committed step into ``table`` and ``graph``; returns what the log counted."""
    out = Replayed()
    for step in steps:
        table.mask.update(step.mask)
        for o in step.observations:
            table.restore(o.state, o.features)
            remember(graph, o, out.steps)
            if o.scripted:
                graph.abandoned.add(o.state)
        for a, b in step.merges:
            table.aliases[a] = b
            graph.merge(a, b)
        t = step.transition
        if t is not None:
            graph.record(t.from_state, step.action_key, t.to_state, step.memory_effective)
            if t.action.type == ActionType.TYPE and t.action.text and not t.error:
                out.typed.append(t.action.text)
        if step.failed is not None:
            graph.fail(step.failed.state, step.failed.key)
        restarted = step.restart and (step.reason or "") not in UNCOUNTED_RESTARTS
        if step.probe:
            out.probe_steps += t is not None
            out.probe_spent += (t is not None) + restarted + bool(step.opened)
            continue
        out.steps += t is not None
        out.errors += step.failed is not None
        out.restarts += restarted
        out.opens += bool(step.opened)
    return out
