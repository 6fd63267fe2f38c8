"""The synthesis run: graph → paths → step and task calls → parsed, checked trajectories and rejects.

``synthesize_graph`` is the whole algorithm for one app graph and returns records; ``run_synthesis`` loads a
graph directory, runs every app, optionally replays, and writes ``trajectories.parquet``,
``rejects.parquet`` and ``summary.json`` atomically (a rerun rewrites them with the same ids, so nothing is
duplicated; the call cache makes the rerun free).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.backends.base import Backend, Completion, Result
from pipelines.synthesis.cache import CallCache
from pipelines.synthesis.calls import Call, step_call, task_call
from pipelines.synthesis.execute import CallExecutor
from pipelines.synthesis.graph_input import AppGraph, GraphLoad, load_graphs
from pipelines.synthesis.parse import StepText, SynthParseError, parse_step, parse_task
from pipelines.synthesis.paths import GraphPath, PathConfig, sample_paths
from pipelines.synthesis.verify.accepted import accepted_actions
from pipelines.synthesis.verify.consistency import check_reasoning
from pipelines.synthesis.verify.replay import StateIndex
from schemas import BlobStore, Lineage, Reject, Step, Task, Trajectory, Transition, Verification
from schemas.base import stable_id
from schemas.recordio import write_parquet

STAGE_STEP = "synthesis.step"
STAGE_PATH = "synthesis.path"
STAGE_TASK = "synthesis.task"
CJK_RE = re.compile(r"[\u4e00-\u9fff]")
PIPELINE_VERSION = "synthesis-1"


@dataclass
class SynthConfig:
    paths: PathConfig = field(default_factory=PathConfig)
    languages: list[str] | None = None  # None: from the crawl locale (zh crawls get zh and en)
    batch_size: int = 16


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
    paths: int = 0


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


def _reject(record_id: str, stage: str, reason: str, detail: str, payload: str = "") -> Reject:
    return Reject(record_id=record_id, stage=stage, reason=reason, detail=detail[:2000], payload=payload)


def _check_step(graph: AppGraph, call: Call, result: Result, edge: Transition) -> StepText | Reject:
    edge_id = edge.id
    if not isinstance(result, Completion):
        return _reject(edge_id, STAGE_STEP, f"backend_{result.reason}", result.detail,
                       json.dumps(call.payload, ensure_ascii=False))
    obs = graph.observation(edge.from_observation_id)
    try:
        text = parse_step(result.text, edge.action, obs)
    except SynthParseError as exc:
        return _reject(edge_id, STAGE_STEP, exc.reason, exc.detail, result.text)
    target = obs.element(edge.action.target_element_id) if edge.action.target_element_id else None
    problem = check_reasoning(text.reasoning, edge.action, target)
    if problem:
        return _reject(edge_id, STAGE_STEP, problem, f"reasoning: {text.reasoning!r}", result.text)
    return text


def plan_steps(graph: AppGraph, paths: list[GraphPath], language: str) -> dict[str, Call]:
    """One step call per distinct edge of the paths, in edge-id order (the order results and rejects follow)."""
    edges = {e.id: e for p in paths for e in p.edges}
    return {eid: step_call(graph, edges[eid], language) for eid in sorted(edges)}


def check_steps(graph: AppGraph, paths: list[GraphPath], calls: dict[str, Call], results: dict[str, Result],
                language: str) -> tuple[dict[str, StepText | Reject], list[Reject]]:
    """Parse and check every step answer; a bad one becomes a reject whose id is ``edge:language``."""
    edges = {e.id: e for p in paths for e in p.edges}
    steps: dict[str, StepText | Reject] = {}
    rejects: list[Reject] = []
    for eid in calls:
        steps[eid] = _check_step(graph, calls[eid], results[eid], edges[eid])
        if isinstance(steps[eid], Reject):
            steps[eid].record_id = f"{eid}:{language}"
            rejects.append(steps[eid])
    return steps, rejects


ReadyPath = tuple[GraphPath, list[StepText], Call]


def plan_tasks(graph: AppGraph, paths: list[GraphPath], calls: dict[str, Call],
               steps: dict[str, StepText | Reject], language: str) -> tuple[list[ReadyPath], list[Reject]]:
    """A task call for every path whose steps all passed; a path with a rejected step is rejected whole."""
    ready: list[ReadyPath] = []
    rejects: list[Reject] = []
    for path in paths:
        path_id = stable_id("path", graph.app_id, *path.key)
        bad = [eid for eid in path.key if isinstance(steps[eid], Reject)]
        if bad:
            reasons = ", ".join(sorted({steps[b].reason for b in bad}))  # type: ignore[union-attr]
            rejects.append(_reject(f"{path_id}:{language}", STAGE_PATH, "contains_rejected_step",
                                   f"steps {bad} rejected ({reasons})", json.dumps(path.key)))
            continue
        texts = [steps[eid] for eid in path.key]
        tcall = task_call(graph, path.edges, [t.instruction for t in texts], language,  # type: ignore[union-attr]
                          [calls[eid].payload for eid in path.key])
        ready.append((path, texts, tcall))  # type: ignore[arg-type]
    return ready, rejects


def finish_tasks(graph: AppGraph, ready: list[ReadyPath], results: list[Result], language: str,
                 backend: BackendInfo) -> tuple[list[Trajectory], list[Reject]]:
    """Parse every task answer and build the trajectories (or task rejects), in path order."""
    trajs: list[Trajectory] = []
    rejects: list[Reject] = []
    for (path, texts, tcall), result in zip(ready, results, strict=True):
        traj_id = stable_id("traj", graph.app_id, language, backend.model_id, backend.prompt_version, *path.key)
        if not isinstance(result, Completion):
            rejects.append(_reject(traj_id, STAGE_TASK, f"backend_{result.reason}", result.detail,
                                   json.dumps(tcall.payload, ensure_ascii=False)))
            continue
        try:
            task, repairs = parse_task(result.text)
        except SynthParseError as exc:
            rejects.append(_reject(traj_id, STAGE_TASK, exc.reason, exc.detail, result.text))
            continue
        trajs.append(build_trajectory(graph, path, texts, task, language, backend, traj_id,
                                      len(repairs) + sum(len(t.repairs) for t in texts)))
    return trajs, rejects


def synthesize_graph(graph: AppGraph, executor: CallExecutor, config: SynthConfig,
                     paths: list[GraphPath] | None = None) -> GraphOutput:
    """Synthesize every sampled path of one graph in every language; returns trajectories and rejects.

    The phases (``plan_steps`` → ``check_steps`` → ``plan_tasks`` → ``finish_tasks``) are separate functions
    because the Beam pipeline (``beam_pipeline``) runs the very same phases around RunInference: one
    algorithm, two ways of answering calls, identical records.
    """
    backend = executor.backend
    out = GraphOutput()
    paths = paths if paths is not None else sample_paths(graph, config.paths)
    out.paths = len(paths)
    for language in languages_for(graph, config):
        calls = plan_steps(graph, paths, language)
        results = dict(zip(calls, executor.run(list(calls.values())), strict=True))
        steps, step_rejects = check_steps(graph, paths, calls, results, language)
        ready, path_rejects = plan_tasks(graph, paths, calls, steps, language)
        executor.on_progress(len(path_rejects))  # skipped paths count as done in the progress total
        trajs, task_rejects = finish_tasks(graph, ready, executor.run([c for _, _, c in ready]), language, backend)
        out.trajectories += trajs
        out.rejects += step_rejects + path_rejects + task_rejects
    return out


def languages_for(graph: AppGraph, config: SynthConfig) -> list[str]:
    return list(config.languages or crawl_languages(graph))


def planned_calls(graph: AppGraph, paths: list[GraphPath], config: SynthConfig) -> int:
    """How many call lookups synthesizing ``paths`` makes (steps plus tasks, per language): the progress total."""
    edges = {e.id for p in paths for e in p.edges}
    return (len(edges) + len(paths)) * len(languages_for(graph, config))


def build_trajectory(graph: AppGraph, path: GraphPath, texts: list[StepText], task: str, language: str,
                     backend: BackendInfo, traj_id: str, repairs: int) -> Trajectory:
    steps = []
    for i, (edge, text) in enumerate(zip(path.edges, texts, strict=True)):
        obs = graph.observation(edge.from_observation_id)
        steps.append(Step(index=i, observation=obs, action=edge.action, instruction=text.instruction,
                          reasoning=text.reasoning, accepted_actions=accepted_actions(graph, edge, obs),
                          next_observation_id=edge.to_observation_id))
    first = steps[0].observation
    return Trajectory(
        id=traj_id,
        task=Task(id=stable_id("task", traj_id), instruction=task, app_id=graph.app_id, language=language),
        steps=steps,
        app_id=graph.app_id,
        app_version=first.app_version,
        platform=str(first.platform),
        scores={"repairs": float(repairs), "path_" + path.kind: 1.0},
        lineage=Lineage(source="crawl", crawl_run=graph.crawl_run, device=first.device.name,
                        synthesizer_model=backend.model_id, prompt_version=backend.prompt_version,
                        pipeline_version=PIPELINE_VERSION, source_ids=list(path.key)),
    )


@dataclass
class RunReport:
    trajectories: list[Trajectory]
    rejects: list[Reject]
    summary: dict[str, Any]


def summarize(trajs: list[Trajectory], rejects: list[Reject], paths: int, usage: Usage) -> dict[str, Any]:
    by_app: dict[str, dict[str, Any]] = {}
    for t in trajs:
        app = by_app.setdefault(t.app_id, {"tasks": 0, "replayed": 0, "replay_failed": 0})
        app["tasks"] += 1
        if t.verification == Verification.REPLAYED:
            app["replayed"] += 1
        elif t.verification == Verification.REPLAY_FAILED:
            app["replay_failed"] += 1
    for app in by_app.values():
        tried = app["replayed"] + app["replay_failed"]
        app["executability"] = round(app["replayed"] / tried, 4) if tried else None
    return {
        "paths": paths,
        "tasks": len(trajs),
        "languages": dict(Counter(t.task.language for t in trajs)),
        "rejects": len(rejects),
        "rejects_by_reason": dict(Counter(f"{r.stage}:{r.reason}" for r in rejects).most_common()),
        "apps": by_app,
        "usage": usage.as_dict(),
    }


def _write_json(data: dict[str, Any], path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=2)
    os.replace(tmp, path)


Replayer = Callable[[list[Trajectory], StateIndex], list[Trajectory]]


def prepare_run(graph_dir: str | Path, out_dir: str | Path, backend: Backend) -> tuple[Path, GraphLoad]:
    """Check the backend, load the graphs and refuse what cannot work, before any call is paid for."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    backend.check()
    loaded = load_graphs(graph_dir)
    if not loaded.graphs:
        raise ValueError(f"{graph_dir}: no transitions found (is this a graph directory written by the crawler?)")
    if backend.needs_images:
        missing = [key for key, g in loaded.graphs.items() if g.blob_root is None]
        if missing:
            raise ValueError(f"{graph_dir}: no blob store (blobs/) with the screenshots of {', '.join(missing)}, "
                             f"which the {backend.name} backend needs")
    return out, loaded


def finish_run(out: Path, loaded: GraphLoad, backend: BackendInfo, trajs: list[Trajectory], rejects: list[Reject],
               n_paths: int, usage: Usage, replay: Replayer | None) -> RunReport:
    """Replay (optional), then write trajectories, rejects and the summary atomically."""
    if replay is not None and trajs:
        trajs = replay(trajs, StateIndex(loaded.graphs.values()))
    write_parquet(trajs, out / "trajectories.parquet", "trajectory")
    write_parquet(rejects, out / "rejects.parquet", "reject")
    summary = summarize(trajs, rejects, n_paths, usage)
    summary.update(backend=backend.model_id, prompt_version=backend.prompt_version)
    if replay is not None:
        summary["replay_failures"] = dict(getattr(replay, "failures", {}))
    _write_json(summary, out / "summary.json")
    return RunReport(trajs, rejects, summary)


def run_synthesis(graph_dir: str | Path, out_dir: str | Path, backend: Backend, config: SynthConfig | None = None,
                  cache_dir: str | Path | None = None, usage: Usage | None = None,
                  replay: Replayer | None = None,
                  extra: Callable[[AppGraph, list[Trajectory]], list[Trajectory]] | None = None,
                  progress: Callable[[str, int], Callable[[int], None]] | None = None) -> RunReport:
    """Synthesize every app under ``graph_dir`` into ``out_dir``; returns the records and the summary.

    ``progress(name, total)`` is called once with the number of call lookups the run will make (so a bar has
    a real total) and returns the function that is ticked as they complete.
    """
    config = config or SynthConfig()
    usage = usage or Usage()
    out, loaded = prepare_run(graph_dir, out_dir, backend)
    cache = CallCache(cache_dir if cache_dir is not None else out / "cache")
    paths = {key: sample_paths(g, config.paths) for key, g in loaded.graphs.items()}
    total = sum(planned_calls(loaded.graphs[key], p, config) for key, p in paths.items())
    tick = progress("calls", total) if progress else None
    executor = CallExecutor(backend, cache, usage, config.batch_size, tick)
    trajs: list[Trajectory] = []
    rejects = list(loaded.rejects)
    n_paths = 0
    for key, graph in loaded.graphs.items():
        if backend.needs_images:
            backend.image_source = BlobStore(graph.blob_root).get  # type: ignore[arg-type]
        result = synthesize_graph(graph, executor, config, paths[key])
        trajs += result.trajectories
        rejects += result.rejects
        n_paths += result.paths
        if extra is not None:
            trajs += extra(graph, result.trajectories)
    return finish_run(out, loaded, backend, trajs, rejects, n_paths, usage, replay)
