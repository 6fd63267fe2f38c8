"""Synthesis calls answered through Beam's RunInference: a ``ModelHandler`` over any trajforge ``Backend``.

Why RunInference and not a hand-rolled pool: Beam batches the calls (``BatchElements``, sized from the
synthesis config), loads the model once per worker process through its shared handle and reports inference
metrics, on every runner. ``BackendModelHandler`` is the adapter: ``load_model`` builds the backend from a
picklable factory (a ``BackendSpec``), ``run_inference`` hands a batch to ``Backend.run``. The handler also
keeps its own ``Shared`` token, whose key survives pickling, so the two RunInference steps of a synthesis
pipeline (step calls, then task calls) share one backend per process instead of loading a VLM twice.

``ResolveCalls`` is the composite around it: dedupe calls by cache key, answer what the content-addressed
cache already holds (hits never reach the model), run RunInference on the misses only, judge every answer with
``answers.check_answer`` (the same judgement as the in-process executor), re-ask rejected answers through
further RunInference rounds (bounded), and write each *valid* answer to the cache as soon as it is judged, so a
killed pipeline keeps what it paid for and a malformed answer is never cached. Counters in the
``trajforge.synth`` namespace give the run's ``Usage`` (calls, cache hits, failures, re-asks, tokens).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import KeyedModelHandler, ModelHandler, PredictionResult, RunInference
from apache_beam.utils import shared

from pipelines.curation.progress import ProgressCounter
from pipelines.synthesis.backends.base import Backend, Completion, Result
from pipelines.synthesis.cache import CallCache, cache_key
from pipelines.synthesis.calls import Call
from pipelines.synthesis.execute import DEFAULT_MAX_ATTEMPTS, judge
from schemas import BlobStore

METRICS_NAMESPACE = "trajforge.synth"
USAGE_COUNTERS = ("calls", "cache_hits", "failures", "reasks", "prompt_tokens", "completion_tokens")
PROGRESS_CALLS = "calls_resolved"


@dataclass(frozen=True)
class CacheIdentity:
    """What besides the call itself goes into a cache key (and into every record's lineage)."""

    backend: str
    model: str
    prompt_version: str
    revision: str = ""

    @property
    def model_id(self) -> str:
        return f"{self.backend}:{self.model}"

    @classmethod
    def of(cls, backend: Backend) -> CacheIdentity:
        return cls(backend.name, backend.model, backend.prompt_version, backend.revision)

    def key(self, call: Call) -> str:
        return cache_key(self.backend, self.model, self.prompt_version, call, self.revision)


class BlobSource:
    """Screenshots by sha256 from several blob stores (one per graph directory); the first that has it wins.

    Content addressing makes the order irrelevant to the bytes returned; several roots only exist because
    one Beam run may mix calls of graphs whose screenshots live in different stores.
    """

    def __init__(self, roots: Sequence[str]):
        self.stores = [BlobStore(r) for r in roots]

    def __call__(self, sha: str) -> bytes:
        for store in self.stores[:-1]:
            if store.exists(sha):
                return store.get(sha)
        if not self.stores:
            raise FileNotFoundError("no blob store attached")
        return self.stores[-1].get(sha)  # raises BlobNotFound naming the digest


class BackendModelHandler(ModelHandler[Call, PredictionResult, Backend]):
    """RunInference adapter: the "model" is a trajforge backend, an example is a ``Call``, a prediction a ``Result``.

    ``factory`` must be picklable (a ``BackendSpec``); it runs on the worker. ``large_model`` asks Beam to
    keep one backend per machine, shared across worker processes, which is what an in-process VLM on a GPU
    wants; an OpenAI-compatible client is cheap and is best left per process.
    """

    def __init__(self, factory: Callable[[], Backend], *, blob_roots: Sequence[str | Path] = (),
                 min_batch_size: int = 1, max_batch_size: int = 16, max_batch_duration_secs: int | None = None,
                 large_model: bool = False, model_copies: int | None = None):
        super().__init__(min_batch_size=min_batch_size, max_batch_size=max(min_batch_size, max_batch_size),
                         max_batch_duration_secs=max_batch_duration_secs, large_model=large_model,
                         model_copies=model_copies)
        self.factory = factory
        self.blob_roots = tuple(str(r) for r in blob_roots)
        self._backend_handle = shared.Shared()

    def _build(self) -> Backend:
        backend = self.factory()
        backend.check()
        if backend.needs_images:
            backend.image_source = BlobSource(self.blob_roots)
        return backend

    def load_model(self) -> Backend:
        return self._backend_handle.acquire(self._build, tag="backend")

    def run_inference(self, batch: Sequence[Call], model: Backend,
                      inference_args: dict[str, Any] | None = None) -> Iterable[PredictionResult]:
        results = model.run(list(batch))
        return [PredictionResult(call, result) for call, result in zip(batch, results, strict=True)]

    def get_num_bytes(self, batch: Sequence[Call]) -> int:
        return sum(len(json.dumps(c.payload, ensure_ascii=False).encode("utf-8")) for c in batch)

    def get_metrics_namespace(self) -> str:
        return METRICS_NAMESPACE


class _CountingDoFn(beam.DoFn):
    """Live progress: calls resolved so far go to a count file the driver polls (Beam metrics arrive only at
    the end on the local runners); see ``pipelines.curation.progress``."""

    def __init__(self, cache_dir: str, progress_dir: str | None):
        self.cache_dir = cache_dir
        self.progress_dir = progress_dir

    def setup(self) -> None:
        self.cache = CallCache(self.cache_dir)
        self.progress = ProgressCounter(self.progress_dir)

    def finish_bundle(self) -> None:
        self.progress.flush()


class _LookupCache(_CountingDoFn):
    """``(key, call)`` → main output ``(key, cached Completion)`` on a hit, ``miss`` output ``(key, call)``."""

    MISS = "miss"

    def __init__(self, cache_dir: str, progress_dir: str | None):
        super().__init__(cache_dir, progress_dir)
        self.hits = Metrics.counter(METRICS_NAMESPACE, "cache_hits")

    def process(self, element: tuple[str, Call]):
        key, call = element
        hit = self.cache.get(key)
        if hit is None or judge(call, hit) is not None:  # an entry today's checks reject is a miss
            yield beam.pvalue.TaggedOutput(self.MISS, (key, call))
        else:
            self.hits.inc()
            self.progress.inc(PROGRESS_CALLS)
            yield key, hit


class _JudgeAnswer(_CountingDoFn):
    """Judge a new answer: a valid one is cached right away and emitted; a rejected one is re-asked (tagged
    ``retry``) while attempts remain, else emitted as the ``Failure`` it amounts to (never cached)."""

    RETRY = "retry"

    def __init__(self, cache_dir: str, progress_dir: str | None, last_attempt: bool):
        super().__init__(cache_dir, progress_dir)
        self.last_attempt = last_attempt
        self.counters = {name: Metrics.counter(METRICS_NAMESPACE, name) for name in USAGE_COUNTERS}

    def process(self, element: tuple[str, PredictionResult]):
        key, prediction = element
        # Beam's PredictionResult is a NamedTuple of unbound TypeVars; BackendModelHandler fills it with a
        # Call and its Result.
        call = cast(Call, prediction.example)
        result = cast(Result, prediction.inference)
        if isinstance(result, Completion):
            self.counters["calls"].inc()
            self.counters["prompt_tokens"].inc(result.prompt_tokens)
            self.counters["completion_tokens"].inc(result.completion_tokens)
        else:
            self.counters["failures"].inc()
        bad = judge(call, result)
        if bad is None:
            self.cache.put(key, result)  # type: ignore[arg-type]  # judge() passes Completions only
        elif isinstance(result, Completion) and not self.last_attempt:
            self.counters["reasks"].inc()
            yield beam.pvalue.TaggedOutput(self.RETRY, (key, call.reask(bad.reason)))
            return
        self.progress.inc(PROGRESS_CALLS)
        yield key, (result if bad is None else bad)


def _any_one(calls: Iterable[Call]) -> Call:
    return next(iter(calls))  # equal keys mean equal content: any representative will do


class ResolveCalls(beam.PTransform):
    """``(cache key, Call)`` pairs, repeats allowed → one ``(cache key, Result)`` per distinct key."""

    def __init__(self, handler: BackendModelHandler, cache_dir: str | Path, model_identifier: str | None = None,
                 progress_dir: str | Path | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS):
        super().__init__()
        self.handler = handler
        self.cache_dir = str(cache_dir)
        self.model_identifier = model_identifier
        self.progress_dir = str(progress_dir) if progress_dir is not None else None
        self.max_attempts = max(1, max_attempts)

    def expand(self, calls):
        unique = calls | "DedupeByKey" >> beam.CombinePerKey(_any_one)
        looked = unique | "LookupCache" >> beam.ParDo(_LookupCache(self.cache_dir, self.progress_dir)).with_outputs(
            _LookupCache.MISS, main="hit")
        outputs = [looked["hit"]]
        pending = looked[_LookupCache.MISS]
        for attempt in range(self.max_attempts):  # re-asks unrolled: a fixed, small number of rounds
            last = attempt + 1 == self.max_attempts
            judged = (
                pending
                | f"RunInference{attempt}" >> RunInference(KeyedModelHandler(self.handler),
                                                           model_identifier=self.model_identifier)
                | f"Judge{attempt}" >> beam.ParDo(_JudgeAnswer(self.cache_dir, self.progress_dir, last)).with_outputs(
                    _JudgeAnswer.RETRY, main="answer")
            )
            outputs.append(judged["answer"])
            pending = judged[_JudgeAnswer.RETRY]
        return outputs | "HitsAndAnswers" >> beam.Flatten()
