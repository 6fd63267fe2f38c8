"""What synthesis asks the explorers' prober to try before it plans tasks: shortcuts and unopened list items.

A crawl budget is spent exploring, not on trying every navigation link from every screen, so the graph often
knows only a detour ("All notes → New note → Messages → Settings") where the app offers a direct tap (the
sidebar's "Settings" on the very first screen). A task planned on that graph teaches the detour. Before plans
are turned into tasks, synthesis asks for:

- **shortcuts** (``goals.ShortcutRequest``): controls that look like a shorter way to a screen of a plan (the
  same navigation link on an earlier screen, or a label naming the goal) but were never tried from there;
- **siblings**: list items the crawl did not open (the other notes of a list), a few per list, so there are
  item goals for more than the one or two items the crawler happened to open.

The device work is the explorers' (``explorers.probe.probe_shortcuts``: a targeted crawl with the crawl
config's login, reset and deny-list, recording what each tap did as ordinary crawl steps and re-exporting the
graph), so the graph store stays the single record of what the app does; this module only chooses the requests
(never a submit, never a log-out; a control whose label sounds like a submit — "Add a new bill" — only where the
crawl saw that very control open a screen and commit nothing) and hands them over.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.reader import AppGraph
from pipelines.synthesis.goals import PLAN_DEFAULT_MAX_STEPS, Planner
from pipelines.synthesis.navigation import COMMIT_WORDS, LEAVES_APP, Navigator, target_of
from pipelines.synthesis.plan_parts import GoalPlan
from pipelines.synthesis.screens import ElementKey, element_key, siblings
from schemas import Element

SIBLINGS_PER_LIST = 6
DEFAULT_MAX_PROBES = 40
ACTIONS_PER_PROBE = 6  # the explorers' budget counts every action and restart of the walk to each probe


@dataclass(frozen=True)
class Probe:
    """Tap ``element_id`` (a control with identity ``key``) on ``state``; ``expected_state`` is where it is
    thought to lead ("" when nobody knows: a sibling list item)."""

    state: str
    element_id: str
    key: ElementKey
    label: str
    expected_state: str
    why: str  # shortcut | sibling


def _tried_keys(graph: AppGraph) -> dict[str, set[ElementKey]]:
    tried: dict[str, set[ElementKey]] = {}
    for t in graph.transitions:
        obs = graph.observations.get(t.from_observation_id)
        el = obs.element(t.action.target_element_id) if obs is not None and t.action.target_element_id else None
        if el is not None:
            tried.setdefault(t.from_state, set()).add(element_key(el))
    return tried


def _navigational(label: str) -> bool:
    """A probe only ever taps navigation: never a submit, never a log-out."""
    return bool(label.strip()) and not COMMIT_WORDS.search(label) and not LEAVES_APP.search(label)


def _openers(graph: AppGraph, nav: Navigator) -> set[ElementKey]:
    """Controls the crawl tapped somewhere and saw only move to another screen: "Add a new bill" says "add" but
    opened the bill form, so trying it from an earlier screen submits nothing either."""
    out: set[ElementKey] = set()
    for t in graph.transitions:
        _, el = target_of(graph, t)
        if el is not None and nav.is_navigation(t):
            out.add(element_key(el))
    return out


def plan_probes(graph: AppGraph, plans: list[GoalPlan], siblings_per_list: int = SIBLINGS_PER_LIST,
                list_depth: int = 2) -> list[Probe]:
    """What to try, most useful first: shortcuts from the screens nearest the entry (one tried there shortens
    every plan that passes), then unopened items of the lists within ``list_depth`` taps of the entry."""
    nav = Navigator(graph)
    far = len(nav.order) + 1
    openers = _openers(graph, nav)
    shortcuts: dict[tuple[str, ElementKey], tuple[int, int, Probe]] = {}
    for plan in plans:
        for req in plan.unprobed:
            el = graph.observation(req.observation_id).element(req.element_id)
            if el is None or not (_navigational(el.label) or req.key in openers):
                continue
            rank = (nav.dist.get(req.state, far), -len(plan.steps))
            probe = Probe(req.state, req.element_id, req.key, req.label, req.expected_state, "shortcut")
            if (req.state, req.key) not in shortcuts or rank < shortcuts[(req.state, req.key)][:2]:
                shortcuts[(req.state, req.key)] = (*rank, probe)
    ordered = [p for *_, p in sorted(shortcuts.values(), key=lambda t: (t[0], t[1]))]
    tried = _tried_keys(graph)
    seen = set(shortcuts)
    for state in nav.order:
        if nav.dist[state] > list_depth:
            break
        obs = nav.clean_capture(state)
        if obs is None:
            continue
        groups: dict[tuple[str, str], list[Element]] = {}
        for el in obs.elements:
            if not (el.clickable and el.visible and el.label) or not _navigational(el.label):
                continue
            peers = siblings(obs, el)
            if len(peers) >= 2:  # a list of at least three items
                groups.setdefault(min(element_key(x) for x in [el, *peers])[:2], []).append(el)
        for items in groups.values():
            added = 0
            for el in items:
                key = element_key(el)
                if added >= siblings_per_list or key in tried.get(state, set()) or (state, key) in seen:
                    continue
                seen.add((state, key))
                ordered.append(Probe(state, el.id, key, el.label, "", "sibling"))
                added += 1
    return ordered


def probe_plans(graph: AppGraph, max_steps: int = PLAN_DEFAULT_MAX_STEPS) -> list[GoalPlan]:
    """The plans whose shortcuts are worth probing: every plan, and the detours the planner refused — their
    untried shortcuts are exactly what probing is for (a probed shortcut turns the detour into a plan)."""
    planner = Planner(graph, max_steps)
    plans = planner.plans()
    return plans + [p for p, reason, _ in planner.refused if reason == "detour_plan"]


class CrawlProber:
    """Synthesis's prober: requests from the plans, run by ``explorers.probe`` with the crawl's own config."""

    def __init__(self, config: Any, max_probes: int = DEFAULT_MAX_PROBES, max_steps: int = PLAN_DEFAULT_MAX_STEPS):
        self.config = config
        self.max_probes = max_probes
        self.max_steps = max_steps  # the synthesis step limit: plans the runner would refuse are not probed for

    def __call__(self, graph: AppGraph, graph_dir: Path) -> dict[str, Any]:
        from explorers.probe import ProbeRequest, probe_shortcuts

        everything = plan_probes(graph, probe_plans(graph, self.max_steps))
        shortcuts = [p for p in everything if p.why == "shortcut"]
        items = [p for p in everything if p.why == "sibling"]
        # Both kinds every round: shortcuts make plans minimal, list items make new goals; a long tail of
        # one must not starve the other.
        n_items = min(len(items), max(self.max_probes // 3, self.max_probes - len(shortcuts)))
        probes = shortcuts[: self.max_probes - n_items] + items[:n_items]
        if not probes:
            return {"tried": 0, "edges": 0, "new_states": 0}
        requests = [ProbeRequest(p.state, p.element_id, expect=(p.expected_state,) if p.expected_state else (),
                                 why=p.why, label=p.label) for p in probes]
        report = probe_shortcuts(self.config, app_id=graph.app_id, profile=graph.device or None,
                                 budget=ACTIONS_PER_PROBE * len(requests), requests=requests, graph_dir=graph_dir)
        statuses: dict[str, int] = {}
        for r in report.results:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        return {"tried": len(requests), "edges": report.new_edges, "new_states": report.new_states,
                "hits": report.hits, "spent": report.spent, "statuses": statuses}
