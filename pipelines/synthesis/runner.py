"""The synthesis run: graph → goal plans → task calls → step calls → checked trajectories and rejects.

``synthesize_graph`` is the whole algorithm for one app graph and returns records; ``run_synthesis`` loads a
graph directory, optionally probes shortcuts and replays, and writes ``trajectories.parquet``,
``rejects.parquet`` and ``summary.json`` atomically (a rerun rewrites them with the same ids, so nothing is
duplicated; the call cache makes the rerun free).

Per plan and language there is one task call, then one step call per step (conditioned on the accepted task),
so a bad answer costs only its own plan: an earlier goal on the same route has its own plan and its own calls.
A bad answer is re-asked (``execute``) before the plan is rejected.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from graph.identity import StateIndex
from graph.reader import AppGraph, GraphLoad, load_graphs
from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.answers import step_answer, task_answer
from pipelines.synthesis.backends.base import Backend, Completion, Result
from pipelines.synthesis.cache import CallCache
from pipelines.synthesis.calls import Call, step_call, task_call
from pipelines.synthesis.execute import DEFAULT_MAX_ATTEMPTS, CallExecutor
from pipelines.synthesis.goals import Planner
from pipelines.synthesis.navigation import Navigator
from pipelines.synthesis.parse import StepText
from pipelines.synthesis.plan_parts import GoalPlan
from pipelines.synthesis.settings import PlanConfig
from pipelines.synthesis.verify.accepted import accepted_actions
from schemas import BlobStore, Lineage, Reject, Step, Task, Trajectory, Verification
from schemas.base import stable_id
from schemas.errors import EmptyInput
from schemas.fileio import ensure_writable_dir, read_json, write_json_atomic
from schemas.recordio import write_parquet

STAGE_STEP = "synthesis.step"
STAGE_PLAN = "synthesis.plan"
STAGE_TASK = "synthesis.task"
CJK_RE = re.compile(r"[\u4e00-\u9fff]")
PIPELINE_VERSION = "synthesis-2"


@dataclass
class SynthConfig:
    plans: PlanConfig = field(default_factory=PlanConfig)
    languages: list[str] | None = None  # None: from the crawl locale (zh crawls get zh and en)
    batch_size: int = 16
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    allow_empty: bool = False  # a graph directory without any record writes empty outputs instead of failing


class BackendInfo(Protocol):
    """What a record's lineage needs of a backend (a live ``Backend`` or, in Beam workers, its description)."""

    @property
    def model_id(self) -> str: ...

    @property
    def prompt_version(self) -> str: ...


@dataclass
class GraphOutput:
    trajectories: list[Trajectory] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    plans: int = 0


def crawl_languages(graph: AppGraph) -> list[str]:
    """``["zh", "en"]`` for a zh-locale crawl, else ``["en"]``.

    The locale is the device profile's when the observations record one (an app switched to Chinese from its
    own settings during an English crawl is still an English crawl); otherwise it is guessed from the text.
    """
    entry = graph.representative(graph.entry)
    locale = getattr(entry.device, "locale", "") if entry is not None else ""
    if locale:
        return ["zh", "en"] if locale.lower().startswith("zh") else ["en"]
    text = "".join(e.text for o in graph.observations.values() for e in o.elements)
    letters = sum(ch.isalpha() for ch in text)
    return ["zh", "en"] if letters and len(CJK_RE.findall(text)) / letters > 0.3 else ["en"]


def languages_for(graph: AppGraph, config: SynthConfig) -> list[str]:
    return list(config.languages or crawl_languages(graph))


def select_plans(graph: AppGraph, config: SynthConfig) -> tuple[list[GoalPlan], list[Reject]]:
    """The goal plans of a graph that the config asks for, in a stable order, and a reject for every plan the
    planner or the config refused (a detour, too many steps): nothing leaves synthesis without a trace. Kinds
    the config did not ask for and plans past ``max_plans`` are a choice, not a fault, and are not rejects."""
    cfg = config.plans
    planner = Planner(graph, max_steps=cfg.max_steps)
    plans, rejects = [], []
    for p in planner.plans():
        if p.kind not in cfg.kinds:
            continue
        if len(p.steps) > cfg.max_steps:
            rejects.append(_plan_reject(graph, p, "plan_too_long", f"{len(p.steps)} steps > max_steps {cfg.max_steps}"))
            continue
        plans.append(p)
    rejects += [_plan_reject(graph, p, reason, detail) for p, reason, detail in planner.refused
                if p.kind in cfg.kinds]
    return plans[: cfg.max_plans], rejects


def _plan_reject(graph: AppGraph, plan: GoalPlan, reason: str, detail: str) -> Reject:
    """A refused plan as a reject: its goal and route, so a reader sees which task was not written and why."""
    route = [f"{s.action.type}:{s.target_label}" if s.target_label else str(s.action.type) for s in plan.steps]
    payload = json.dumps({"app_id": graph.app_id, "device": graph.device, "goal": plan.goal.summary,
                          "route": route}, ensure_ascii=False)
    return _reject(f"plan:{plan.plan_id}", STAGE_PLAN, reason, f"{plan.goal.summary}: {detail}", payload)


def _reject(record_id: str, stage: str, reason: str, detail: str, payload: str = "") -> Reject:
    return Reject(record_id=record_id, stage=stage, reason=reason, detail=detail[:2000], payload=payload)


def variant_of(graph: AppGraph, language: str) -> str:
    return f"{graph.device}:{language}"


def traj_id(graph: AppGraph, plan: GoalPlan, language: str, backend: BackendInfo) -> str:
    return stable_id("traj", graph.app_id, language, backend.model_id, backend.prompt_version, *plan.key)


def plan_task_calls(graph: AppGraph, plans: list[GoalPlan], language: str) -> dict[str, Call]:
    """One task call per plan, keyed by plan id (the order results and rejects follow)."""
    variant = variant_of(graph, language)
    return {p.plan_id: task_call(graph, p, language, variant) for p in plans}


def finish_tasks(graph: AppGraph, plans: list[GoalPlan], calls: dict[str, Call], results: dict[str, Result],
                 language: str, backend: BackendInfo) -> tuple[dict[str, tuple[str, int]], list[Reject]]:
    """Accepted task texts per plan id (with their repair count), and a reject for every plan without one."""
    tasks: dict[str, tuple[str, int]] = {}
    rejects: list[Reject] = []
    for plan in plans:
        result = results[plan.plan_id]
        tid = traj_id(graph, plan, language, backend)
        if not isinstance(result, Completion):
            rejects.append(_reject(tid, STAGE_TASK, result.reason, result.detail,
                                   json.dumps(calls[plan.plan_id].payload, ensure_ascii=False)))
            continue
        task, repairs = task_answer(calls[plan.plan_id].payload, result.text)
        tasks[plan.plan_id] = (task, len(repairs))
    return tasks, rejects


def step_key(plan: GoalPlan, index: int) -> str:
    return f"{plan.plan_id}:{index}"


def plan_step_calls(graph: AppGraph, plans: list[GoalPlan], tasks: dict[str, tuple[str, int]],
                    language: str) -> dict[str, Call]:
    """Step calls of every plan with an accepted task, keyed ``plan_id:index``."""
    variant = variant_of(graph, language)
    calls: dict[str, Call] = {}
    for plan in plans:
        if plan.plan_id not in tasks:
            continue
        task = tasks[plan.plan_id][0]
        for i in range(len(plan.steps)):
            calls[step_key(plan, i)] = step_call(graph, plan, i, task, language, variant)
    return calls


def finish_plans(graph: AppGraph, plans: list[GoalPlan], tasks: dict[str, tuple[str, int]],
                 calls: dict[str, Call], results: dict[str, Result], language: str,
                 backend: BackendInfo) -> tuple[list[Trajectory], list[Reject]]:
    """Trajectories of the plans whose steps all have accepted answers; a reject per failed step and plan."""
    nav = Navigator(graph)
    trajs: list[Trajectory] = []
    rejects: list[Reject] = []
    for plan in plans:
        if plan.plan_id not in tasks:
            continue
        tid = traj_id(graph, plan, language, backend)
        texts: list[StepText] = []
        bad: list[int] = []
        for i in range(len(plan.steps)):
            key = step_key(plan, i)
            result = results[key]
            if not isinstance(result, Completion):
                bad.append(i)
                rejects.append(_reject(f"{tid}:{i}", STAGE_STEP, result.reason, result.detail,
                                       json.dumps(calls[key].payload, ensure_ascii=False)))
                continue
            texts.append(step_answer(calls[key].payload, result.text))
        if bad:
            reasons = sorted({r.reason for r in rejects if r.record_id.startswith(tid + ":")})
            rejects.append(_reject(tid, STAGE_PLAN, "contains_rejected_step",
                                   f"steps {bad} of {len(plan.steps)} rejected ({', '.join(reasons)})",
                                   json.dumps(list(plan.key))))
            continue
        task, task_repairs = tasks[plan.plan_id]
        trajs.append(build_trajectory(graph, nav, plan, texts, task, language, backend, tid,
                                      task_repairs + sum(len(t.repairs) for t in texts)))
    return trajs, rejects


def synthesize_graph(graph: AppGraph, executor: CallExecutor, config: SynthConfig,
                     plans: list[GoalPlan] | None = None) -> GraphOutput:
    """Synthesize every goal plan of one graph in every language; returns trajectories and rejects.

    The phases (``plan_task_calls`` → ``finish_tasks`` → ``plan_step_calls`` → ``finish_plans``) are separate
    functions because the Beam pipeline (``beam_pipeline``) runs the very same phases around RunInference: one
    algorithm, two ways of answering calls, identical records.
    """
    backend = executor.backend
    out = GraphOutput()
    if plans is None:
        plans, refused = select_plans(graph, config)
        out.rejects += refused
    out.plans = len(plans)
    for language in languages_for(graph, config):
        tcalls = plan_task_calls(graph, plans, language)
        tresults = dict(zip(tcalls, executor.run(list(tcalls.values())), strict=True))
        tasks, task_rejects = finish_tasks(graph, plans, tcalls, tresults, language, backend)
        scalls = plan_step_calls(graph, plans, tasks, language)
        executor.on_progress(sum(len(p.steps) for p in plans if p.plan_id not in tasks))
        sresults = dict(zip(scalls, executor.run(list(scalls.values())), strict=True))
        trajs, step_rejects = finish_plans(graph, plans, tasks, scalls, sresults, language, backend)
        out.trajectories += trajs
        out.rejects += task_rejects + step_rejects
    return out


def planned_calls(graph: AppGraph, plans: list[GoalPlan], config: SynthConfig) -> int:
    """How many call lookups synthesizing ``plans`` makes (tasks plus steps, per language): the progress total."""
    return sum(1 + len(p.steps) for p in plans) * len(languages_for(graph, config))


def build_trajectory(graph: AppGraph, nav: Navigator, plan: GoalPlan, texts: list[StepText], task: str,
                     language: str, backend: BackendInfo, tid: str, repairs: int) -> Trajectory:
    by_id = {t.id: t for t in graph.transitions}
    steps = []
    for i, (ps, text) in enumerate(zip(plan.steps, texts, strict=True)):
        obs = graph.observation(ps.observation_id)
        edge = by_id.get(ps.edge_id or "")
        accepted = accepted_actions(nav, graph, edge, obs, ps.action) if edge is not None else []
        steps.append(Step(index=i, observation=obs, action=ps.action, instruction=text.instruction,
                          reasoning=text.reasoning, accepted_actions=accepted,
                          next_observation_id=ps.next_observation_id))
    first = steps[0].observation
    scores = {"repairs": float(repairs), f"goal_{plan.kind}": 1.0,
              "unprobed_shortcuts": float(len(plan.unprobed))}
    return Trajectory(
        id=tid,
        task=Task(id=stable_id("task", tid), instruction=task, app_id=graph.app_id, language=language,
                  goal=plan.goal),
        steps=steps,
        app_id=graph.app_id,
        app_version=first.app_version,
        platform=str(first.platform),
        scores=scores,
        lineage=Lineage(source="crawl", crawl_run=graph.crawl_run, device=first.device.name,
                        synthesizer_model=backend.model_id, prompt_version=backend.prompt_version,
                        pipeline_version=PIPELINE_VERSION, source_ids=list(plan.edge_ids)),
    )


@dataclass
class AppSummary:
    tasks: int = 0
    replayed: int = 0
    replay_failed: int = 0
    executability: float | None = None  # replayed / tried, None when none was replayed


@dataclass
class RunSummary:
    """What one synthesis run did (``summary.json``): read by the CLI, the nightly stage, the demo and the
    benchmarks. ``to_json`` writes the file's long-standing form; the optional parts only when they happened."""

    plans: int
    tasks: int
    goal_kinds: dict[str, int]
    languages: dict[str, int]
    rejects: int
    rejects_by_reason: dict[str, int]
    apps: dict[str, AppSummary]
    usage: dict[str, float | int]  # ``Usage.as_dict()``: calls, cache hits, failures, re-asks, tokens, cost
    backend: str | None = None  # the backend's model id
    prompt_version: str | None = None
    replay_failures: dict[str, int] | None = None  # by reason, when trajectories were replayed
    probes: dict[str, Any] | None = None  # the prober's reports per graph, when shortcuts were probed

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("replay_failures", "probes")}
        d.update({k: v for k, v in (("replay_failures", self.replay_failures), ("probes", self.probes))
                  if v is not None})
        return d


@dataclass
class RunReport:
    trajectories: list[Trajectory]
    rejects: list[Reject]
    summary: RunSummary
    blob_roots: dict[str, Path] = field(default_factory=dict)  # app id → its screenshots (noise writes there)


def summarize(trajs: list[Trajectory], rejects: list[Reject], plans: int, usage: Usage) -> RunSummary:
    by_app: dict[str, AppSummary] = {}
    for t in trajs:
        app = by_app.setdefault(t.app_id, AppSummary())
        app.tasks += 1
        if t.verification == Verification.REPLAYED:
            app.replayed += 1
        elif t.verification == Verification.REPLAY_FAILED:
            app.replay_failed += 1
    for app in by_app.values():
        tried = app.replayed + app.replay_failed
        app.executability = round(app.replayed / tried, 4) if tried else None
    return RunSummary(
        plans=plans,
        tasks=len(trajs),
        goal_kinds=dict(Counter(str(t.task.goal.kind) for t in trajs if t.task.goal is not None)),
        languages=dict(Counter(t.task.language for t in trajs)),
        rejects=len(rejects),
        rejects_by_reason=dict(Counter(f"{r.stage}:{r.reason}" for r in rejects).most_common()),
        apps=by_app,
        usage=usage.as_dict(),
    )


Replayer = Callable[[list[Trajectory], StateIndex], list[Trajectory]]


def prepare_run(graph_dir: str | Path, out_dir: str | Path, backend: Backend,
                allow_empty: bool = False) -> tuple[Path, GraphLoad]:
    """Check the output, the backend, load the graphs and refuse what cannot work, before any call is paid for.

    A directory without any graph record raises ``EmptyInput`` (unless ``allow_empty``); one whose records
    were all rejected goes on, so its rejects are written.
    """
    out = ensure_writable_dir(out_dir)
    backend.check()
    loaded = load_graphs(graph_dir)
    if not loaded.graphs and not loaded.rejects and not allow_empty:
        raise EmptyInput(f"{graph_dir}: no graph records found (is this a graph directory written by the crawler? "
                         "pass --allow-empty to accept it)")
    if backend.needs_images:
        missing = [key for key, g in loaded.graphs.items() if g.blob_root is None]
        if missing:
            raise ValueError(f"{graph_dir}: no blob store (blobs/) with the screenshots of {', '.join(missing)}, "
                             f"which the {backend.name} backend needs")
    return out, loaded


def finish_run(out: Path, loaded: GraphLoad, backend: BackendInfo, trajs: list[Trajectory], rejects: list[Reject],
               n_plans: int, usage: Usage, replay: Replayer | None) -> RunReport:
    """Replay (optional), then write trajectories, rejects and the summary atomically."""
    seen: set[str] = set()
    unique: list[Trajectory] = []
    for t in trajs:  # two plans that collapse to one id would overwrite each other downstream: say so instead
        if t.id in seen:
            rejects.append(_reject(t.id, STAGE_PLAN, "duplicate_trajectory_id",
                                   f"another trajectory of this run has id {t.id} ({t.task.instruction!r})"))
            continue
        seen.add(t.id)
        unique.append(t)
    trajs = unique
    if replay is not None and trajs:
        trajs = replay(trajs, StateIndex(loaded.graphs.values()))
    write_parquet(trajs, out / "trajectories.parquet", "trajectory")
    write_parquet(rejects, out / "rejects.parquet", "reject")
    summary = summarize(trajs, rejects, n_plans, usage)
    summary.backend, summary.prompt_version = backend.model_id, backend.prompt_version
    if replay is not None:
        summary.replay_failures = dict(getattr(replay, "failures", {}))
    write_json_atomic(out / "summary.json", summary.to_json())
    roots = {g.app_id: g.blob_root for g in loaded.graphs.values() if g.blob_root is not None}
    return RunReport(trajs, rejects, summary, roots)


# (graph, the graph directory holding <app_id>/) -> what was found: {"edges": n, "new_states": n, ...}
Prober = Callable[[AppGraph, Path], dict[str, Any]]


def probe_graphs(graph_dir: str | Path, loaded: GraphLoad, prober: Prober, rounds: int = 3,
                 journal: str | Path | None = None) -> tuple[GraphLoad, dict[str, Any]]:
    """Probe every graph's shortcuts and list siblings (``probe``), reloading until nothing new is found.

    Each round re-plans on the graph the previous round grew, so a probed shortcut can reveal the next one. With
    ``journal`` (a JSON file) the reports are saved after every round, and a rerun after a kill resumes at the
    next round instead of spending another ``rounds`` on the device; a finished journal is adopted as it is.
    """
    root = Path(graph_dir)
    state = read_json(journal, None) if journal is not None else None
    state = state if isinstance(state, dict) else {}
    reports: dict[str, Any] = dict(state.get("reports") or {})
    done = int(state.get("rounds") or 0)
    if state.get("finished"):
        return (load_graphs(root) if done else loaded), reports
    if done:
        loaded = load_graphs(root)  # an earlier attempt's rounds grew the graphs
    finished = False
    for n in range(done, rounds):
        found = 0
        for key, graph in loaded.graphs.items():
            report = prober(graph, root)
            reports.setdefault(key, []).append(report)
            found += int(report.get("edges", 0)) + int(report.get("new_states", 0))
        finished = not found or n + 1 == rounds
        if journal is not None:
            write_json_atomic(journal, {"reports": reports, "rounds": n + 1, "finished": finished})
        if not found:
            break
        loaded = load_graphs(root)
    if journal is not None and not finished:
        write_json_atomic(journal, {"reports": reports, "rounds": done, "finished": True})
    return loaded, reports


def run_synthesis(graph_dir: str | Path, out_dir: str | Path, backend: Backend, config: SynthConfig | None = None,
                  cache_dir: str | Path | None = None, usage: Usage | None = None,
                  replay: Replayer | None = None,
                  extra: Callable[[AppGraph, list[Trajectory]], list[Trajectory]] | None = None,
                  progress: Callable[[str, int], Callable[[int], None]] | None = None,
                  prober: Prober | None = None) -> RunReport:
    """Synthesize every app under ``graph_dir`` into ``out_dir``; returns the records and the summary.

    ``prober`` (``probe.CrawlProber``, on a device) first tries the plans' unprobed shortcuts and unopened list
    items and adds what it finds to the graph directory, so plans are built on the richer graph.
    ``progress(name, total)`` is called once with the number of call lookups the run will make (so a bar has
    a real total) and returns the function that is ticked as they complete.
    """
    config = config or SynthConfig()
    usage = usage or Usage()
    out, loaded = prepare_run(graph_dir, out_dir, backend, config.allow_empty)
    probes: dict[str, Any] = {}
    if prober is not None:
        loaded, probes = probe_graphs(graph_dir, loaded, prober)
    cache = CallCache(cache_dir if cache_dir is not None else out / "cache")
    plans: dict[str, list[GoalPlan]] = {}
    rejects = list(loaded.rejects)
    for key, g in loaded.graphs.items():
        plans[key], refused = select_plans(g, config)
        rejects += refused
    total = sum(planned_calls(loaded.graphs[key], p, config) for key, p in plans.items())
    tick = progress("calls", total) if progress else None
    executor = CallExecutor(backend, cache, usage, config.batch_size, tick, config.max_attempts)
    trajs: list[Trajectory] = []
    n_plans = 0
    for key, graph in loaded.graphs.items():
        if backend.needs_images:
            backend.image_source = BlobStore(graph.blob_root).get  # type: ignore[arg-type]
        result = synthesize_graph(graph, executor, config, plans[key])
        trajs += result.trajectories
        rejects += result.rejects
        n_plans += result.plans
        if extra is not None:
            trajs += extra(graph, result.trajectories)
    report = finish_run(out, loaded, backend, trajs, rejects, n_plans, usage, replay)
    if probes:
        report.summary.probes = probes
        write_json_atomic(out / "summary.json", report.summary.to_json())
    return report
