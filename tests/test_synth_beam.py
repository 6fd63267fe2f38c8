"""Synthesis through a Beam pipeline with RunInference equals the in-process runner, and reruns are free.

Everything here is real: Beam's FnApiRunner (the DirectRunner's engine, in-process and multi-process), real
Parquet, the on-disk call cache and the offline backend. The only addition is ``LoggingOffline``: the offline
backend plus a log file of every build and every batch it is sent (so a test can count model calls made in
Beam workers, which may be other processes), and deliberately malformed answers for a few calls — on every
attempt, so their re-asks fail too — so the rejects of all three stages (task, step, plan) are exercised.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.internal.cloudpickle import cloudpickle
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to
from test_synth_toygraph import write_graph
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.backends.base import Backend, Completion, Result
from pipelines.synthesis.backends.offline import OfflineBackend
from pipelines.synthesis.beam_inference import BackendModelHandler, CacheIdentity, ResolveCalls
from pipelines.synthesis.beam_pipeline import run_synthesis_beam
from pipelines.synthesis.calls import Call
from pipelines.synthesis.plan_parts import GoalFacts
from pipelines.synthesis.prompts import load_prompts
from pipelines.synthesis.runner import SynthConfig, run_synthesis

pytestmark = pytest.mark.e2e

CONFIG = SynthConfig(languages=["en", "zh"], batch_size=4)


def _log(path: str, event: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:  # O_APPEND: whole lines even from several worker processes
        f.write(json.dumps(event, ensure_ascii=False) + "\n")


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


class _LoggingBackend(OfflineBackend):
    def __init__(self, log: str, garble: bool):
        super().__init__(load_prompts())
        self.log, self.garble = log, garble

    def run(self, calls: Sequence[Call]) -> list[Result]:
        _log(self.log, {"event": "run", "pid": os.getpid(),
                        "calls": [[c.kind, c.payload["language"]] for c in calls]})
        results = super().run(calls)
        if self.garble:
            for i, c in enumerate(calls):
                title_step = c.kind == "step" and (c.payload.get("target") or {}).get("label") == "Title"
                settings_task = c.kind == "task" and c.payload["end"]["screen"] == "Settings"
                if title_step or settings_task:
                    results[i] = Completion("I think the answer is probably fine")  # unparseable: never cached
        return results


@dataclass(frozen=True)
class LoggingOffline:
    """A picklable backend factory (what ``BackendSpec`` is for real backends)."""

    log: str
    garble: bool = True

    def __call__(self) -> Backend:
        _log(self.log, {"event": "build", "pid": os.getpid()})
        return _LoggingBackend(self.log, self.garble)


# Beam's multi-process workers cannot import this test module: ship its classes inside the pickled pipeline.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def model_calls(log: Path) -> list[list[str]]:
    return [c for e in read_log(log) if e["event"] == "run" for c in e["calls"]]


def same_table(a: Path, b: Path) -> bool:
    """Same rows, columns, types and metadata. A reject's ``timestamp`` is the wall-clock time it was rejected,
    so it is left out of the comparison (two in-process runs differ there too)."""
    ta, tb = pq.read_table(a), pq.read_table(b)
    if (ta.schema.metadata or {}).get(b"trajforge.kind") == b"reject":
        ta, tb = ta.drop_columns(["timestamp"]), tb.drop_columns(["timestamp"])
    return ta.num_rows == tb.num_rows and ta.equals(tb) and ta.schema.metadata == tb.schema.metadata


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_graph(tmp_path_factory.mktemp("graph"))


def test_beam_equals_inprocess_with_rejects_of_every_stage_and_a_rerun_calls_no_model(graph: Path,
                                                                                       tmp_path: Path) -> None:
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    a = run_synthesis(graph, tmp_path / "a", LoggingOffline(str(log_a))(), CONFIG, usage=Usage())
    bar = {"total": -1, "done": 0}

    def progress(name: str, total: int):  # type: ignore[no-untyped-def]
        bar["total"] = total
        return lambda n: bar.update(done=bar["done"] + n)

    b = run_synthesis_beam(graph, tmp_path / "b", LoggingOffline(str(log_b)), CONFIG, usage=Usage(),
                           progress=progress)
    assert bar["done"] == bar["total"] > 0  # the Beam path's bar has the in-process total and completes

    assert a.trajectories and {r.stage for r in a.rejects} == {"synthesis.step", "synthesis.plan", "synthesis.task"}
    assert {t.task.language for t in a.trajectories} == {"en", "zh"}
    for name in ("trajectories.parquet", "rejects.parquet"):
        assert same_table(tmp_path / "a" / name, tmp_path / "b" / name), name
    assert [t.id for t in b.trajectories] == [t.id for t in a.trajectories]
    assert b.summary == a.summary  # plans, tasks, rejects by reason, and usage (counted by Beam metrics)
    assert a.summary.usage["reasks"] > 0

    # RunInference batched the misses (max batch 4) and sent each distinct call to the model exactly once.
    batches = [e["calls"] for e in read_log(log_b) if e["event"] == "run"]
    assert max(len(x) for x in batches) <= 4 and len(batches) >= a.summary.usage["calls"] / 4
    assert len(model_calls(log_b)) == len(model_calls(log_a)) == a.summary.usage["calls"]
    # One backend per worker process, shared by both RunInference steps (plus the driver's check copy).
    builds = [e for e in read_log(log_b) if e["event"] == "build"]
    assert len(builds) == 2, builds

    dead = tmp_path / "b" / f".synth-beam-{2**22 + 12345}-x"  # staging of a killed run (no such pid)
    dead.mkdir()
    again = run_synthesis_beam(graph, tmp_path / "b", LoggingOffline(str(log_b)), CONFIG, usage=Usage())
    # Valid answers come from the cache; only the calls that never got one are asked again (all attempts).
    never_good = sum(1 for r in a.rejects if r.stage in ("synthesis.step", "synthesis.task"))
    assert len(model_calls(log_b)) - len(model_calls(log_a)) == never_good * CONFIG.max_attempts
    assert again.summary.usage["calls"] == never_good * CONFIG.max_attempts
    assert again.summary.usage["cache_hits"] == a.summary.usage["calls"] - a.summary.usage["reasks"] \
        - never_good
    assert same_table(tmp_path / "a" / "trajectories.parquet", tmp_path / "b" / "trajectories.parquet")
    assert not list((tmp_path / "b").glob(".synth-beam-*"))  # this run's staging and the killed run's removed


def test_cache_hits_never_reach_the_model_and_multiprocess_workers_agree(graph: Path, tmp_path: Path) -> None:
    """Warm the cache with the English calls in-process; Beam on two worker processes then sends only zh calls."""
    cache = tmp_path / "cache"
    en = run_synthesis(graph, tmp_path / "en", LoggingOffline(str(tmp_path / "en.log"), garble=False)(),
                       SynthConfig(languages=["en"]), cache_dir=cache, usage=Usage())
    log = tmp_path / "beam.log"
    both = run_synthesis_beam(graph, tmp_path / "both", LoggingOffline(str(log), garble=False), CONFIG,
                              cache_dir=cache,
                              usage=Usage(), beam_args=["--direct_running_mode=multi_processing",
                                                        "--direct_num_workers=2"])
    sent = model_calls(log)
    assert sent and {lang for _, lang in sent} == {"zh"}
    builds = Counter(e["pid"] for e in read_log(log) if e["event"] == "build")
    assert set(builds.values()) == {1}, builds  # each process (driver, every worker) built the backend once
    assert both.summary.usage["cache_hits"] == en.summary.usage["calls"]
    assert both.summary.usage["calls"] == len(sent)
    reference = run_synthesis(graph, tmp_path / "ref", LoggingOffline(str(tmp_path / "ref.log"), garble=False)(),
                              CONFIG, usage=Usage())
    assert same_table(tmp_path / "ref" / "trajectories.parquet", tmp_path / "both" / "trajectories.parquet")
    assert same_table(tmp_path / "ref" / "rejects.parquet", tmp_path / "both" / "rejects.parquet")
    assert len(reference.trajectories) == len(both.trajectories) > 0


def test_resolve_calls_dedupes_by_cache_key_before_the_model(tmp_path: Path) -> None:
    log = tmp_path / "m.log"
    factory = LoggingOffline(str(log), garble=False)
    identity = CacheIdentity.of(factory())
    goal = {"kind": "screen", **GoalFacts().as_payload()}
    calls = [Call("task", {"language": "en", "goal": {**goal, "target": s}, "end": {"screen": s}, "variant": ""})
             for s in ("A", "B", "A", "A")]
    keyed = [(identity.key(c), c) for c in calls]
    handler = BackendModelHandler(factory, max_batch_size=8)
    with beam.Pipeline(runner=FnApiRunner()) as p:
        out = (p | beam.Create(keyed) | ResolveCalls(handler, tmp_path / "cache")
               | beam.MapTuple(lambda key, result: (key, result.text)))
        expected = sorted({(k, OfflineBackend(load_prompts()).run([c])[0].text) for k, c in keyed})
        assert_that(out, equal_to(expected))
    assert sorted(model_calls(log)) == [["task", "en"], ["task", "en"]]  # A and B once each


def test_cli_runner_beam_writes_the_same_records_and_rejects_bad_flags(graph: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["synth", "--graph", str(graph), "--languages", "en"]
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "b"), "--runner", "beam", "--batch-size", "2",
                            "--beam-arg=--direct_num_workers=1"])
    assert r.exit_code == 0, r.output
    assert "Beam pipeline:" in r.output and json.loads(r.output.strip().splitlines()[-1])["tasks"] > 0
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "i")])
    assert r.exit_code == 0, r.output
    assert same_table(tmp_path / "b" / "trajectories.parquet", tmp_path / "i" / "trajectories.parquet")

    bad = runner.invoke(app, [*base, "--out", str(tmp_path / "x"), "--beam-arg=--direct_num_workers=2"])
    assert bad.exit_code == 2 and "--beam-arg needs --runner beam" in bad.output
    bad = runner.invoke(app, [*base, "--out", str(tmp_path / "x"), "--runner", "spark"])
    assert bad.exit_code == 2 and "unknown runner" in bad.output


def test_inprocess_progress_has_a_total_that_the_ticks_reach(graph: Path, tmp_path: Path) -> None:
    seen: dict[str, int] = {"total": -1, "done": 0}

    def progress(name: str, total: int):  # type: ignore[no-untyped-def]
        seen["total"] = total

        def tick(n: int) -> None:
            seen["done"] += n
        return tick

    factory = LoggingOffline(str(tmp_path / "p.log"))
    run_synthesis(graph, tmp_path / "o", factory(), CONFIG, usage=Usage(), progress=progress)
    assert seen["total"] > 0 and seen["done"] == seen["total"]
    seen.update(total=-1, done=0)  # a rerun from the cache completes the same bar
    run_synthesis(graph, tmp_path / "o", factory(), CONFIG, usage=Usage(), progress=progress)
    assert seen["done"] == seen["total"] > 0
