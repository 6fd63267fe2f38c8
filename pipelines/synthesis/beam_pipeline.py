"""Synthesis at scale: the in-process algorithm as a Beam pipeline whose model calls go through RunInference.

The driver loads the graphs and plans the goals (cheap, and it must see the whole graph); each (graph,
language) pair becomes a *unit*. The pipeline then reads like the in-process runner:

    units ─PlanTasks─▶ task calls ─ResolveCalls─▶ answers ─CheckTasks─▶ step calls ─ResolveCalls─▶ answers
          ─FinishUnit─▶ trajectories + rejects per unit (staged as JSONL)

``ResolveCalls`` (``beam_inference``) dedupes by cache key, serves cache hits, sends only misses to the model and
judges and re-asks exactly like the in-process executor. The per-unit phases are ``runner``'s own functions
(``plan_task_calls``, ``finish_tasks``, ``plan_step_calls``, ``finish_plans``), so the records are the same
records; the driver then reads the staged units back in unit order, adds recovery trajectories and replay
exactly where the in-process runner does, and writes ``trajectories.parquet``, ``rejects.parquet`` and
``summary.json`` with the same ``finish_run``.

Runner choice: without a ``--runner=…`` among the Beam args the pipeline runs on Beam's in-process
FnApiRunner (what the DirectRunner delegates to, minus its offline Prism probe); ``--direct_num_workers`` and
``--direct_running_mode=multi_processing`` work with it. Any other ``--runner`` (Dataflow, Flink, Spark) is
passed to Beam; there the graph directory, cache and output must be on storage the workers share.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter

from graph.reader import AppGraph
from pipelines.beam.runner import RunnerSpec, quiet_beam, runner_and_options
from pipelines.beam.staging import clean_stale_staging, new_staging
from pipelines.curation.progress import PROGRESS_DIR, ProgressPoller
from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.backends.base import Backend, Result
from pipelines.synthesis.beam_inference import (
    METRICS_NAMESPACE,
    PROGRESS_CALLS,
    USAGE_COUNTERS,
    BackendModelHandler,
    CacheIdentity,
    ResolveCalls,
)
from pipelines.synthesis.plan_parts import GoalPlan
from pipelines.synthesis.runner import (
    Replayer,
    RunReport,
    SynthConfig,
    finish_plans,
    finish_run,
    finish_tasks,
    languages_for,
    plan_step_calls,
    plan_task_calls,
    planned_calls,
    prepare_run,
    select_plans,
)
from schemas import Reject, Trajectory
from schemas.recordio import iter_records, write_jsonl

STAGING_PREFIX = ".synth-beam-"
CHECK_REQUESTS = "requests"
CHECK_CALLS = "calls"


@dataclass
class Unit:
    """One graph in one language: the in-process runner's inner loop body, as a pipeline element."""

    index: int
    app_key: str
    language: str
    plans: list[GoalPlan]


@dataclass
class PendingUnit:
    """A unit after its task answers were checked: the accepted tasks and the rejects so far."""

    unit: Unit
    tasks: dict[str, tuple[str, int]]
    rejects: list[Reject]


def _staged(staging: Path, index: int, kind: str) -> Path:
    return staging / f"unit-{index:06d}.{kind}.jsonl"


class _PlanTasks(beam.DoFn):
    """Unit → its task calls ``(key, call)`` and, tagged, who asked: ``(key, (unit index, plan id))``."""

    def __init__(self, identity: CacheIdentity):
        self.identity = identity

    def process(self, unit: Unit, graphs: dict[str, AppGraph]):
        calls = plan_task_calls(graphs[unit.app_key], unit.plans, unit.language)
        for pid, call in calls.items():
            key = self.identity.key(call)
            yield key, call
            yield beam.pvalue.TaggedOutput(CHECK_REQUESTS, (key, (unit.index, pid)))


class _CheckTasks(beam.DoFn):
    """Unit + its task answers → a ``PendingUnit``; tagged: its step calls and who asked for them."""

    def __init__(self, identity: CacheIdentity):
        self.identity = identity

    def process(self, element: tuple[int, dict[str, list[Any]]], graphs: dict[str, AppGraph]):
        _, grouped = element
        unit: Unit = grouped["unit"][0]
        graph = graphs[unit.app_key]
        answers: dict[str, Result] = dict(grouped["answers"])
        calls = plan_task_calls(graph, unit.plans, unit.language)
        tasks, rejects = finish_tasks(graph, unit.plans, calls, answers, unit.language, self.identity)
        for skey, scall in plan_step_calls(graph, unit.plans, tasks, unit.language).items():
            key = self.identity.key(scall)
            yield beam.pvalue.TaggedOutput(CHECK_CALLS, (key, scall))
            yield beam.pvalue.TaggedOutput(CHECK_REQUESTS, (key, (unit.index, skey)))
        yield unit.index, PendingUnit(unit, tasks, rejects)


class _FinishUnit(beam.DoFn):
    """Pending unit + step answers → trajectories and rejects, staged as one pair of JSONL files per unit."""

    def __init__(self, identity: CacheIdentity, staging: str):
        self.identity = identity
        self.staging = staging

    def process(self, element: tuple[int, dict[str, list[Any]]], graphs: dict[str, AppGraph]):
        index, grouped = element
        pending: PendingUnit = grouped["pending"][0]
        unit = pending.unit
        graph = graphs[unit.app_key]
        answers = dict(grouped["answers"])
        calls = plan_step_calls(graph, unit.plans, pending.tasks, unit.language)
        trajs, step_rejects = finish_plans(graph, unit.plans, pending.tasks, calls, answers, unit.language,
                                           self.identity)
        staging = Path(self.staging)
        write_jsonl(trajs, _staged(staging, index, "trajectories"))
        write_jsonl(pending.rejects + step_rejects, _staged(staging, index, "rejects"))
        yield index


def _route(element: tuple[str, dict[str, list[Any]]]) -> Iterable[tuple[int, tuple[Any, Result]]]:
    """Join of requests and answers on the cache key: every asker gets the answer, ``(unit, (slot, result))``."""
    _, grouped = element
    (result,) = grouped["result"]
    for index, slot in grouped["request"]:
        yield index, (slot, result)


def _answers_per_unit(label: str, requests, results):
    return ({"request": requests, "result": results}
            | f"{label}JoinOnKey" >> beam.CoGroupByKey()
            | f"{label}Route" >> beam.FlatMap(_route))


def build_pipeline(p: beam.Pipeline, graphs: dict[str, AppGraph], units: list[Unit], handler: BackendModelHandler,
                   identity: CacheIdentity, cache_dir: Path, staging: Path, progress_dir: Path | None = None,
                   max_attempts: int = 3) -> None:
    """The synthesis pipeline on ``p``; it writes one staged pair of files per unit under ``staging``."""
    graph_side = beam.pvalue.AsDict(p | "Graphs" >> beam.Create(sorted(graphs.items())))
    unit_pc = p | "Units" >> beam.Create(units)
    keyed_units = unit_pc | "KeyUnits" >> beam.Map(lambda u: (u.index, u))
    model_id = f"trajforge-synth-{identity.model_id}-{identity.prompt_version}"

    planned = unit_pc | "PlanTasks" >> beam.ParDo(_PlanTasks(identity), graph_side).with_outputs(
        CHECK_REQUESTS, main="calls")
    task_results = planned["calls"] | "ResolveTasks" >> ResolveCalls(handler, cache_dir, model_id, progress_dir,
                                                                     max_attempts)
    task_answers = _answers_per_unit("Tasks", planned[CHECK_REQUESTS], task_results)

    checked = ({"unit": keyed_units, "answers": task_answers}
               | "GroupTaskAnswers" >> beam.CoGroupByKey()
               | "CheckTasks" >> beam.ParDo(_CheckTasks(identity), graph_side).with_outputs(
                   CHECK_CALLS, CHECK_REQUESTS, main="pending"))
    step_results = checked[CHECK_CALLS] | "ResolveSteps" >> ResolveCalls(handler, cache_dir, model_id, progress_dir,
                                                                         max_attempts)
    step_answers = _answers_per_unit("Steps", checked[CHECK_REQUESTS], step_results)

    _ = ({"pending": checked["pending"], "answers": step_answers}
         | "GroupStepAnswers" >> beam.CoGroupByKey()
         | "FinishUnit" >> beam.ParDo(_FinishUnit(identity, str(staging)), graph_side))


def usage_from_metrics(result: Any, usage: Usage) -> Usage:
    """Add the pipeline's ``trajforge.synth`` counters to ``usage`` (committed values where the runner has them)."""
    counters = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))["counters"]
    for c in counters:
        name = c.key.metric.name
        if name in USAGE_COUNTERS:
            value = c.committed if c.committed is not None else c.attempted
            setattr(usage, name, getattr(usage, name) + int(value or 0))
    return usage


def _read_staged(path: Path, kind: str) -> list[Any]:
    records = []
    for parsed in iter_records(path, kind):
        if not parsed.ok:
            raise RuntimeError(f"{path} line {parsed.line}: staged {kind} does not validate: {parsed.errors[0]}")
        records.append(parsed.record)
    return records


def run_synthesis_beam(graph_dir: str | Path, out_dir: str | Path, factory: Callable[[], Backend],
                       config: SynthConfig | None = None, cache_dir: str | Path | None = None,
                       usage: Usage | None = None, replay: Replayer | None = None,
                       extra: Callable[[AppGraph, list[Trajectory]], list[Trajectory]] | None = None,
                       beam_args: list[str] | None = None, large_model: bool = False,
                       status: Callable[[str], None] | None = None,
                       progress: Callable[[str, int], Callable[[int], None]] | None = None) -> RunReport:
    """``run_synthesis`` with the calls answered by a Beam pipeline; same outputs for the same inputs.

    ``factory`` builds the backend (a ``BackendSpec``): once here, to check it and to learn its identity,
    and once per Beam worker process, inside RunInference. ``status`` receives phase messages; ``progress``
    is ``run_synthesis``'s (total: the planned call lookups), ticked live from the workers' count files and
    completed at the end (calls shared by several units and paths skipped for a rejected step are counted
    there, not live).
    """
    config = config or SynthConfig()
    usage = usage or Usage()
    say = status or (lambda _msg: None)
    backend = factory()
    try:
        out, loaded = prepare_run(graph_dir, out_dir, backend, config.allow_empty)
        identity = CacheIdentity.of(backend)
    finally:
        backend.close()
    cache = Path(cache_dir if cache_dir is not None else out / "cache").resolve()
    cache.mkdir(parents=True, exist_ok=True)
    units: list[Unit] = []
    per_graph: dict[str, list[int]] = {}
    n_plans = planned = 0
    refused: list[Reject] = []
    for key, graph in loaded.graphs.items():
        plans, graph_refused = select_plans(graph, config)
        refused += graph_refused
        n_plans += len(plans)
        planned += planned_calls(graph, plans, config)
        for language in languages_for(graph, config):
            per_graph.setdefault(key, []).append(len(units))
            units.append(Unit(len(units), key, language, plans))
    roots = sorted({str(g.blob_root.resolve()) for g in loaded.graphs.values() if g.blob_root is not None})
    handler = BackendModelHandler(factory, blob_roots=roots, max_batch_size=config.batch_size,
                                  large_model=large_model)
    clean_stale_staging(out, STAGING_PREFIX)
    staging = new_staging(out, STAGING_PREFIX, "write the synthesis output folder")
    try:
        runner, options = runner_and_options(RunnerSpec.from_beam_args(beam_args or []))
        say(f"Beam pipeline: {len(units)} units, {n_plans} goal plans, up to {planned} call lookups")
        tick = progress("calls", planned) if progress else (lambda _n: None)
        done = [0]

        def advance(counts: dict[str, int]) -> None:
            n = min(counts.get(PROGRESS_CALLS, 0), planned)
            if n > done[0]:
                tick(n - done[0])
                done[0] = n

        with quiet_beam(), ProgressPoller(staging / PROGRESS_DIR, advance):
            p = beam.Pipeline(runner=runner, options=options)
            build_pipeline(p, loaded.graphs, units, handler, identity, cache, staging, staging / PROGRESS_DIR,
                           config.max_attempts)
            result = p.run()
            result.wait_until_finish()
        tick(planned - done[0])
        usage_from_metrics(result, usage)
        say("assembling trajectories")
        trajs: list[Trajectory] = []
        rejects: list[Reject] = list(loaded.rejects) + refused
        for key, graph in loaded.graphs.items():
            graph_trajs: list[Trajectory] = []
            for index in per_graph.get(key, []):
                graph_trajs += _read_staged(_staged(staging, index, "trajectories"), "trajectory")
                rejects += _read_staged(_staged(staging, index, "rejects"), "reject")
            trajs += graph_trajs
            if extra is not None:
                trajs += extra(graph, graph_trajs)
        return finish_run(out, loaded, identity, trajs, rejects, n_plans, usage, replay)
    finally:
        shutil.rmtree(staging, ignore_errors=True)

