"""Shortcut and sibling probing: a short, targeted crawl that makes the graph good enough to plan tasks on.

A crawl budget is spent exploring, not on trying every navigation link from every screen, so the graph often
knows only a detour ("All notes → New note → Messages → Settings") where the app offers a direct tap (the
sidebar's "Settings" on the very first screen). A task planned on that graph teaches the detour. Before plans
are turned into tasks, the prober tries on a real device, from a fresh start:

- **shortcuts** (``goals.ShortcutRequest``): controls on a plan's screens that look like they lead to a later
  screen of the plan (the same navigation link, or a label naming the goal) but were never tried from there;
- **siblings**: list items the crawl did not open (the other notes of a list), a few per list, so there are
  item goals for more than the one or two items the crawler happened to open.

Each probe walks the plan's own route to the screen (actions re-grounded by element identity, every screen
checked), taps the control — only if the crawl's safety guard allows it — and records what happened as graph
records next to the crawl's (``<graph>/<app>/probes/<device>.{observations,transitions}.jsonl``, which
``graph_input`` loads with the rest): an edge to the known state it reached, a new state (its screenshot in the
app's blob store) for a new screen, or an edge with an ``error`` (blocked, left the app, diverged) so it is
never probed again. The planner then simply sees a richer graph.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pipelines.synthesis.goals import GoalPlan, Planner
from pipelines.synthesis.graph_input import AppGraph
from pipelines.synthesis.navigation import COMMIT_WORDS, LEAVES_APP, Navigator
from pipelines.synthesis.screens import ElementKey, element_key, find_element, occurrence, siblings
from pipelines.synthesis.verify.replay import StateIndex, fresh_start, ground_action, profile_for, screen_features
from schemas import Action, ActionType, BlobStore, Observation, Transition
from schemas.base import stable_id
from schemas.recordio import iter_records, write_jsonl

PROBE_DIR = "probes"
RUN_ID = "probe"
DEFAULT_MAX_PROBES = 40
SIBLINGS_PER_LIST = 6


@dataclass(frozen=True)
class Probe:
    """Tap the control ``key`` (its ``nth`` occurrence) on ``observation_id`` of ``state``, reached by ``route``."""

    state: str
    observation_id: str
    key: ElementKey
    nth: int
    label: str
    expected_state: str  # "" when nobody knows where it leads (a sibling list item)
    route: tuple[tuple[Action, str, str | None], ...]  # (action, capture it is recorded on, capture expected after)
    why: str  # shortcut | sibling


@dataclass
class ProbeReport:
    tried: int = 0
    edges: int = 0  # to a known state
    new_states: int = 0
    failed: dict[str, int] = field(default_factory=dict)

    def count_failure(self, reason: str) -> None:
        self.failed[reason] = self.failed.get(reason, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {"tried": self.tried, "edges": self.edges, "new_states": self.new_states, "failed": self.failed}


def _route(nav: Navigator, state: str) -> tuple[tuple[Action, str, str | None], ...] | None:
    """The shortest navigation from the entry to ``state``: (action, its capture, the capture expected after)."""
    hops = nav.path_to(state)
    if hops is None:
        return None
    out = []
    for i, (_edge, a) in enumerate(hops):
        nxt = hops[i + 1][1].observation_id if i + 1 < len(hops) else None
        out.append((a.action, a.observation_id, nxt))
    return tuple(out)


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


def plan_probes(graph: AppGraph, plans: list[GoalPlan], siblings_per_list: int = SIBLINGS_PER_LIST) -> list[Probe]:
    """Shortcut probes for every plan's unprobed shortcuts, then sibling probes for the lists plans pass."""
    nav = Navigator(graph)
    probes: dict[tuple[str, ElementKey], Probe] = {}
    for plan in sorted(plans, key=lambda p: -len(p.steps)):  # the longest detours first
        for req in plan.unprobed:
            route = _route(nav, req.state)
            obs = graph.observation(req.observation_id)
            el = obs.element(req.element_id)
            if route is None or el is None or not _navigational(el.label):
                continue
            probes.setdefault((req.state, req.key), Probe(req.state, req.observation_id, req.key,
                                                          occurrence(obs, el), req.label, req.expected_state,
                                                          route, "shortcut"))
    tried = _tried_keys(graph)
    by_id = {t.id: t for t in graph.transitions}
    for plan in plans:
        if plan.kind != "item":
            continue
        step = plan.steps[-2]  # the tap that opened the item
        edge = by_id.get(step.edge_id or "")
        if edge is None:
            continue
        obs = graph.observation(step.observation_id)
        el = obs.element(step.action.target_element_id) if step.action.target_element_id else None
        if el is None:
            continue
        added = 0
        for sib in siblings(obs, el):
            key = element_key(sib)
            if added >= siblings_per_list or key in tried.get(edge.from_state, set()):
                continue
            if (edge.from_state, key) in probes or not sib.clickable or not _navigational(sib.label):
                continue
            route = _route(nav, edge.from_state)
            if route is None:
                continue
            probes[(edge.from_state, key)] = Probe(edge.from_state, obs.id, key, occurrence(obs, sib), sib.label, "",
                                                   route, "sibling")
            added += 1
    return list(probes.values())


class Prober:
    """Runs probes on a real WebDriver endpoint (chromedriver / Appium) and writes what they found."""

    def __init__(self, endpoint_url: str, kind: str = "chromedriver", apps: dict[str, Any] | None = None,
                 max_probes: int = DEFAULT_MAX_PROBES, on_done: Callable[[int], None] | None = None):
        self.endpoint_url = endpoint_url
        self.kind = kind
        self.apps = apps or {}
        self.max_probes = max_probes
        self.on_done = on_done or (lambda _n: None)

    def _guard(self, app: Any) -> Any:
        from explorers.crawler import guard_for

        return guard_for(app) if app is not None else None

    def run(self, graph: AppGraph, probes: list[Probe], app_dir: Path) -> ProbeReport:
        from explorers.sessions import EndpointSpec, open_device

        report = ProbeReport()
        probes = probes[: self.max_probes]
        if not probes:
            return report
        entry = graph.representative(graph.entry)
        assert entry is not None
        profile = profile_for(entry.device)
        app = self.apps.get(graph.app_id)
        start = fresh_start(app, entry.location, str(entry.platform), profile)
        index = StateIndex([graph])
        nav = Navigator(graph)
        guard = self._guard(app)
        store = BlobStore(graph.blob_root) if graph.blob_root is not None else None
        new_obs: list[Observation] = []
        new_edges: list[Transition] = []
        device = open_device(EndpointSpec("probe", self.endpoint_url, self.kind), profile)
        try:
            for probe in probes:
                report.tried += 1
                outcome = self._one(device, start, graph, nav, index, guard, store, probe)
                if isinstance(outcome, str):
                    report.count_failure(outcome)
                    new_edges.append(self._failed_edge(graph, probe, outcome))
                else:
                    edge, obs = outcome
                    new_edges.append(edge)
                    if obs is not None:
                        new_obs.append(obs)
                        report.new_states += 1
                    else:
                        report.edges += 1
                self.on_done(1)
        finally:
            with contextlib.suppress(Exception):
                device.quit()
        self._write(app_dir, entry.device.name, new_obs, new_edges)
        return report

    def _one(self, device: Any, start: Any, graph: AppGraph, nav: Navigator, index: StateIndex, guard: Any,
             store: BlobStore | None, probe: Probe) -> tuple[Transition, Observation | None] | str:
        try:
            start(device)
            screen = device.capture()
            for action, recorded, expect in probe.route:
                grounded = ground_action(action, graph.observation(recorded), screen)
                if grounded is None:
                    return "route_target_missing"
                device.perform(grounded)
                device.settle()
                screen = device.capture()
                if expect and not index.matches(expect, screen_features(screen)):
                    return "route_diverged"
            if not index.matches(probe.observation_id, screen_features(screen)):
                return "route_diverged"
            live = [w for w in screen.widgets if element_key(w.element) == probe.key]
            if probe.nth >= len(live):
                return "target_missing"
            widget = live[probe.nth]
            if guard is not None and guard.blocked(widget) is not None:
                return "blocked"
            x, y = widget.element.bbox.center
            device.perform(Action(type=ActionType.CLICK, x=x, y=y, image_width=screen.width,
                                  image_height=screen.height))
            device.settle()
            after = device.capture()
        except Exception as exc:  # a session hiccup or a script error: this probe only
            return f"error:{type(exc).__name__}"
        entry = graph.representative(graph.entry)
        assert entry is not None
        if urlsplit(after.location).netloc and urlsplit(after.location).netloc != urlsplit(entry.location).netloc:
            return "left_app"
        feats = screen_features(after)
        ordered = ([probe.expected_state] if probe.expected_state else []) + [s for s in graph.states
                                                                              if s != probe.expected_state]
        for state in ordered:
            rep = nav.clean_capture(state) or graph.representative(state)
            if rep is not None and index.matches(rep.id, feats):
                if state == probe.state:
                    return "no_change"
                return self._edge(graph, probe, state, rep.id), None
        if store is None:
            return "no_blob_store"
        obs = Observation(
            id=stable_id(RUN_ID, graph.app_id, probe.state, *probe.key, "obs"),
            screenshot_sha256=store.put(after.screenshot), width=after.width, height=after.height,
            device=entry.device, platform=after.platform, app_id=graph.app_id, app_version=entry.app_version,
            location=after.location, elements=after.elements, structural_hash=feats.structural_hash,
            exact_hash=stable_id("probe-exact", feats.structural_hash, *sorted(feats.content.items())),
        )
        state = "p" + stable_id(RUN_ID, graph.app_id, obs.structural_hash, obs.exact_hash)[:15]
        return self._edge(graph, probe, state, obs.id), obs

    def _action(self, graph: AppGraph, probe: Probe) -> Action:
        obs = graph.observation(probe.observation_id)
        el = find_element(obs, probe.key, probe.nth)
        assert el is not None
        x, y = el.bbox.center
        return Action(type=ActionType.CLICK, x=x, y=y, image_width=obs.width, image_height=obs.height,
                      target_element_id=el.id, target_bbox=el.bbox)

    def _edge(self, graph: AppGraph, probe: Probe, to_state: str, to_obs: str) -> Transition:
        return Transition(id=stable_id(RUN_ID, graph.app_id, probe.state, *probe.key), run_id=RUN_ID,
                          app_id=graph.app_id, from_state=probe.state, to_state=to_state,
                          from_observation_id=probe.observation_id, to_observation_id=to_obs,
                          action=self._action(graph, probe), effective=True, timestamp=datetime.now(UTC))

    def _failed_edge(self, graph: AppGraph, probe: Probe, reason: str) -> Transition:
        edge = self._edge(graph, probe, probe.state, probe.observation_id)
        return edge.model_copy(update={"effective": False, "error": f"probe: {reason}"})

    def _write(self, app_dir: Path, device: str, observations: list[Observation],
               transitions: list[Transition]) -> None:
        """Add to the app's probe files (rewritten atomically, earlier probes kept, ids never duplicated)."""
        folder = app_dir / PROBE_DIR
        for records, name, kind in ((observations, "observations", "observation"),
                                    (transitions, "transitions", "transition")):
            path = folder / f"{device}.{name}.jsonl"
            old = [p.record for p in iter_records(path, kind) if p.ok] if path.exists() else []
            merged = {r.id: r for r in [*old, *records]}  # type: ignore[union-attr]
            if merged:
                write_jsonl(list(merged.values()), path)

    def __call__(self, graph: AppGraph, app_dir: Path) -> dict[str, Any]:
        """Plan, probe what the plans need, and say what was found (the caller reloads the graph)."""
        return self.run(graph, plan_probes(graph, Planner(graph).plans()), app_dir).as_dict()
