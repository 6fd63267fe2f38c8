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
from typing import Any

from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.backends.base import Backend, Completion, Result
from pipelines.synthesis.cache import CallCache
from pipelines.synthesis.calls import Call, step_call, task_call
from pipelines.synthesis.execute import CallExecutor
from pipelines.synthesis.graph_input import AppGraph, load_graphs
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


def synthesize_graph(graph: AppGraph, executor: CallExecutor, config: SynthConfig,
                     paths: list[GraphPath] | None = None) -> GraphOutput:
    """Synthesize every sampled path of one graph in every language; returns trajectories and rejects."""
    backend = executor.backend
    out = GraphOutput()
    paths = paths if paths is not None else sample_paths(graph, config.paths)
    out.paths = len(paths)
    edges = {e.id: e for p in paths for e in p.edges}
    for language in config.languages or crawl_languages(graph):
        ordered = sorted(edges)
        calls = {eid: step_call(graph, edges[eid], language) for eid in ordered}
        results = executor.run([calls[eid] for eid in ordered])
        steps: dict[str, StepText | Reject] = {}
        for eid, result in zip(ordered, results, strict=True):
            steps[eid] = _check_step(graph, calls[eid], result, edges[eid])
            if isinstance(steps[eid], Reject):
                steps[eid].record_id = f"{eid}:{language}"
                out.rejects.append(steps[eid])
        ready: list[tuple[GraphPath, list[StepText], Call]] = []
        for path in paths:
            path_id = stable_id("path", graph.app_id, *path.key)
            bad = [eid for eid in path.key if isinstance(steps[eid], Reject)]
            if bad:
                reasons = ", ".join(sorted({steps[b].reason for b in bad}))  # type: ignore[union-attr]
                out.rejects.append(_reject(f"{path_id}:{language}", STAGE_PATH, "contains_rejected_step",
                                           f"steps {bad} rejected ({reasons})", json.dumps(path.key)))
                continue
            texts = [steps[eid] for eid in path.key]
            tcall = task_call(graph, path.edges, [t.instruction for t in texts], language,  # type: ignore[union-attr]
                              [calls[eid].payload for eid in path.key])
            ready.append((path, texts, tcall))  # type: ignore[arg-type]
        task_results = executor.run([c for _, _, c in ready])
        for (path, texts, tcall), result in zip(ready, task_results, strict=True):
            traj_id = stable_id("traj", graph.app_id, language, backend.model_id, backend.prompt_version, *path.key)
            if not isinstance(result, Completion):
                out.rejects.append(_reject(traj_id, STAGE_TASK, f"backend_{result.reason}", result.detail,
                                           json.dumps(tcall.payload, ensure_ascii=False)))
                continue
            try:
                task, repairs = parse_task(result.text)
            except SynthParseError as exc:
                out.rejects.append(_reject(traj_id, STAGE_TASK, exc.reason, exc.detail, result.text))
                continue
            out.trajectories.append(build_trajectory(graph, path, texts, task, language, backend, traj_id,
                                                     len(repairs) + sum(len(t.repairs) for t in texts)))
    return out


def build_trajectory(graph: AppGraph, path: GraphPath, texts: list[StepText], task: str, language: str,
                     backend: Backend, traj_id: str, repairs: int) -> Trajectory:
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


def run_synthesis(graph_dir: str | Path, out_dir: str | Path, backend: Backend, config: SynthConfig | None = None,
                  cache_dir: str | Path | None = None, usage: Usage | None = None,
                  replay: Replayer | None = None,
                  extra: Callable[[AppGraph, list[Trajectory]], list[Trajectory]] | None = None,
                  progress: Callable[[str, int], Callable[[int], None]] | None = None) -> RunReport:
    """Synthesize every app under ``graph_dir`` into ``out_dir``; returns the records and the summary."""
    config = config or SynthConfig()
    usage = usage or Usage()
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
    cache = CallCache(cache_dir if cache_dir is not None else out / "cache")
    tick = progress("calls", 0) if progress else None
    executor = CallExecutor(backend, cache, usage, config.batch_size, tick)
    trajs: list[Trajectory] = []
    rejects = list(loaded.rejects)
    n_paths = 0
    for graph in loaded.graphs.values():
        if backend.needs_images:
            backend.image_source = BlobStore(graph.blob_root).get  # type: ignore[arg-type]
        result = synthesize_graph(graph, executor, config)
        trajs += result.trajectories
        rejects += result.rejects
        n_paths += result.paths
        if extra is not None:
            trajs += extra(graph, result.trajectories)
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
