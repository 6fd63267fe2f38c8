"""The curation stages as Beam transforms: thin adapters around the engine-free decisions in ``filters/``.

Elements are frozen values (facts, members, rejections); no transform mutates its input. What crosses a
shuffle is small by construction: split descriptors, ``TrajectoryFacts`` (hashes, ids, the task text),
dedupe ``Member``s, ``Rejection``s and ``ScreenFacts`` of distinct screenshots — never a record or an image.
The records themselves are read twice, in bounded splits: once by ``DescribeSplits`` (which spools their rows)
and once more, for reject payloads only, by ``WriteSplits``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import zlib
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics

from filters.dedupe import Member, Survivor, group_key, resolve, resolve_ids, step_members, trajectory_member
from filters.facts import TrajectoryFacts
from filters.item import ScreenFacts
from filters.quality import quality_rejections, screen_gates
from filters.screen_clusters import cluster_screens
from filters.screen_elements import Sketch
from filters.screenshot import inspect_blob
from filters.text_similarity import make_clusterer
from filters.verdicts import RecordOutcome, Rejection, Weights, merge
from pipelines.beam.staging import require_staging
from pipelines.curation.config import CurateConfig
from pipelines.curation.describe import DescribeSettings, SplitDescriber
from pipelines.curation.plan import Split, source_of
from pipelines.curation.progress import RECORDS_READ, SCREENS_INSPECTED, ProgressCounter
from pipelines.curation.quiet import no_hf_progress_bars
from pipelines.curation.write import SplitWriter
from schemas.blobstore import BlobStore

REJECTED = "rejected"
RECORDS = "records"
WORKERS_DIR = "_workers"  # <staging>/_workers/<host>-<pid>: an SDK worker ran the first stage (the driver waits)


@dataclass(frozen=True)
class ScreenTable:
    """What the quality and dedupe stages need to know about every distinct screenshot of the run."""

    facts: dict[str, ScreenFacts]  # sha → inspection result (hashes dropped)
    clusters: dict[str, str]  # sha → near-duplicate cluster id, for clustered screenshots only


def build_screen_table(facts: Iterable[ScreenFacts], phash_distance: int,
                       sketches: Mapping[str, tuple[str, Sketch]] | None = None) -> ScreenTable:
    """Near-duplicate clusters (``filters.screen_clusters``: by element tree where a step has one — ``sketches``,
    sha → (app, sketch) — else by pixels), then the facts without their hashes."""
    facts = list(facts)
    clusters = cluster_screens(facts, sketches or {}, phash_distance)
    return ScreenTable({f.sha256: replace(f, phash=0, dhash=b"", thumb=b"") for f in facts}, clusters)


def step_sketches(f: TrajectoryFacts) -> Iterator[tuple[str, tuple[str, Sketch]]]:
    """(screenshot sha, (app, sketch)) of every step recorded with its element tree."""
    for s in f.steps:
        if s.sketch is not None:
            yield s.screenshot, (f.app, s.sketch)


def min_sketch(sketches: Iterable[tuple[str, Sketch]]) -> tuple[str, Sketch]:
    """One sketch per screenshot (steps sharing a screenshot normally share its tree): the smallest, so the choice
    does not depend on the order records arrive in."""
    return min(sketches, key=repr)


class DescribeSplits(beam.DoFn):
    """Split → ``TrajectoryFacts`` (main), ``(key, Rejection)`` (``rejected``), record count (``records``)."""

    def __init__(self, settings: DescribeSettings, progress_dir: str | None = None):
        self.settings, self.progress_dir = settings, progress_dir

    def setup(self) -> None:
        self.progress = ProgressCounter(self.progress_dir)
        with contextlib.suppress(OSError):  # the driver only waits on it (portable runner): never fatal here
            marker = Path(self.settings.staging) / WORKERS_DIR / f"{socket.gethostname()}-{os.getpid()}"
            marker.parent.mkdir(exist_ok=True)  # (not parents: a removed staging folder stays removed)
            marker.touch()

    def finish_bundle(self) -> None:
        self.progress.flush()

    def process(self, split: Split) -> Iterator[Any]:
        require_staging(self.settings.staging)
        describer = SplitDescriber(self.settings)
        for out in describer.run(split):
            self.progress.inc(RECORDS_READ)
            if isinstance(out, TrajectoryFacts):
                yield out
            else:
                yield beam.pvalue.TaggedOutput(REJECTED, out)
        yield beam.pvalue.TaggedOutput(RECORDS, describer.records)


SCREEN_BUCKETS = 64  # distinct screenshots are inspected in this many batches (spread over workers)
INSPECT_THREADS = 4  # screenshots of one batch inspected at once (decoding and resizing release the GIL)


def screen_bucket(sha: str) -> tuple[int, str]:
    """(batch, sha): a stable batch number from the sha itself (the same on every worker and run)."""
    return zlib.crc32(sha.encode("utf-8")) % SCREEN_BUCKETS, sha


class InspectScreens(beam.DoFn):
    """(batch, shas) → ``ScreenFacts`` of each distinct sha: read once (hash-verified), decoded, hashed; bytes dropped.

    Why batches on threads: the image work is most of a run (see ``benchmarks/bench_curate.py``), and Pillow's
    decoder and resampler and numpy release the GIL, so a batch's screenshots decode side by side on the cores of
    one worker (the in-process runner has only one) instead of one after another. At most ``threads`` decoded
    images are alive at once."""

    def __init__(self, blobs: str, progress_dir: str | None = None, threads: int = INSPECT_THREADS):
        self.blobs, self.progress_dir, self.threads = blobs, progress_dir, threads

    def setup(self) -> None:
        self.store = BlobStore(self.blobs)
        self.progress = ProgressCounter(self.progress_dir)
        self.pool = ThreadPoolExecutor(max(1, self.threads), thread_name_prefix="inspect")

    def teardown(self) -> None:
        self.pool.shutdown(wait=True)

    def finish_bundle(self) -> None:
        self.progress.flush()

    def process(self, batch: tuple[int, Iterable[str]]) -> Iterator[ScreenFacts]:
        for facts in self.pool.map(self._inspect, sorted(set(batch[1]))):
            self.progress.inc(SCREENS_INSPECTED)
            yield facts

    def _inspect(self, sha: str) -> ScreenFacts:
        return inspect_blob(self.store, sha)


class Gate(beam.DoFn):
    """The quality stage's decision per trajectory, then its dedupe member(s) keyed by group."""

    def __init__(self, unit: str):
        self.unit = unit

    def setup(self) -> None:
        self.gates = screen_gates()

    def process(self, f: TrajectoryFacts, table: ScreenTable) -> Iterator[Any]:
        rejections = quality_rejections(f, table.facts, self.gates, self.unit)
        for r in rejections:
            yield beam.pvalue.TaggedOutput(REJECTED, (f.key, r))
        if self.unit == "trajectory":
            if not rejections:
                yield group_key(f), trajectory_member(f, table.clusters)
        else:
            yield from step_members(f, table.clusters, skip={r.step for r in rejections})


class DedupeGroups(beam.DoFn):
    """(group, members) → ``(key, Rejection)`` (``rejected``) and survivors keyed by their id (main)."""

    def __init__(self, names: list[str], backend: str, threshold: float | None, unit: str):
        self.names, self.backend, self.threshold, self.unit = names, backend, threshold, unit

    def setup(self) -> None:
        self.clusterer = make_clusterer(self.backend, self.threshold) if self.unit == "trajectory" else None

    def _source(self, key: int) -> str:
        return source_of(key, self.names)

    def process(self, group: tuple[str, Iterable[Member]]) -> Iterator[Any]:
        # The embedding model's "Loading weights" bar, drawn by each worker (quieting it imports transformers).
        quiet = no_hf_progress_bars() if self.backend == "minilm" else contextlib.nullcontext()
        with quiet:
            rejections, survivors = resolve(group[1], self._source, self.clusterer)
        for kr in rejections:
            yield beam.pvalue.TaggedOutput(REJECTED, kr)
        for s in survivors:
            yield s.id, s


class UniqueIdsFn(beam.DoFn):
    """(id, survivors) → one survivor per id (main), the others ``(key, Rejection)`` (``rejected``)."""

    def __init__(self, names: list[str]):
        self.names = names

    def process(self, group: tuple[str, Iterable[Survivor]]) -> Iterator[Any]:
        rejections, best = resolve_ids(group[1], lambda k: source_of(k, self.names))
        for kr in rejections:
            yield beam.pvalue.TaggedOutput(REJECTED, kr)
        if best is not None:
            yield best


def _weights(s: Survivor) -> Iterator[tuple[int, Weights]]:
    if s.weights:
        yield s.key, Weights(s.weights)


def _outcome(kv: tuple[int, Iterable[Rejection | Weights]]) -> tuple[int, RecordOutcome]:
    return kv[0], merge(kv[1])


class WriteSplits(beam.DoFn):
    """Split + every record's outcome (side input) → the split's data shard and reject shard."""

    def __init__(self, cfg: CurateConfig, staging: str, run_time: datetime, progress_dir: str | None = None):
        self.args = (staging, str(cfg.blobs), cfg.embed_images, cfg.redact_pii, cfg.row_group_rows, run_time)
        self.progress_dir = progress_dir
        self._keys: tuple[int, list[int]] | None = None

    def setup(self) -> None:
        self.progress = ProgressCounter(self.progress_dir)
        self.writer = SplitWriter(*self.args, progress=self.progress)
        self.blurred = Metrics.counter("curate.write", "pii_regions_blurred")

    def finish_bundle(self) -> None:
        self.progress.flush()

    def _sorted_keys(self, outcomes: Mapping[int, RecordOutcome]) -> list[int]:
        if self._keys is None or self._keys[0] != id(outcomes):
            self._keys = (id(outcomes), sorted(outcomes))
        return self._keys[1]

    def process(self, split: Split, outcomes: Mapping[int, RecordOutcome]) -> Iterator[dict]:
        require_staging(self.args[0])
        before = self.writer.blurred
        yield self.writer.write(split, outcomes, self._sorted_keys(outcomes))
        self.blurred.inc(self.writer.blurred - before)


# --- counting ----------------------------------------------------------------------------------------------------

def _size(what: str, samples: str = "") -> Any:
    """A function counting one element as 1 of ``what`` (and its rows as ``samples``, when named)."""

    def count(x: Any) -> list[tuple[str, int]]:
        n = len(x.steps) if isinstance(x, TrajectoryFacts) else x.samples if isinstance(x, Survivor) else 0
        return [(what, 1), (samples, n)] if samples else [(what, 1)]

    return count


def _rejection_count(kr: tuple[int, Rejection]) -> list[tuple[tuple[str, str, str, bool], int]]:
    r = kr[1]
    return [(("rejected", r.stage, r.reason, r.error), 1)]


def _tally_row(kv: tuple[Any, int]) -> dict:
    key, n = kv
    if isinstance(key, tuple):
        _, stage, reason, error = key
        return {"what": "rejected", "stage": stage, "reason": reason, "error": error, "n": int(n)}
    return {"what": key, "n": int(n)}


def _error_example(kr: tuple[int, Rejection]) -> tuple[str, str, str, str]:
    r = kr[1]
    return r.stage, r.reason, r.record_id, r.detail[:300]


@dataclass
class Counted:
    """The PCollections whose sizes the manifest reconciles."""

    tallies: beam.PCollection
    error_examples: beam.PCollection


def count_everything(records: beam.PCollection, facts: beam.PCollection, screens: beam.PCollection,
                     members: beam.PCollection, survivors: beam.PCollection, final: beam.PCollection,
                     rejections: beam.PCollection) -> Counted:
    """Stage sizes from independent PCollections — records read, facts, distinct screenshots, dedupe members,
    survivors, kept, and rejections per (stage, reason) — summed by one combine."""
    parts = [
        records | "CountRecords" >> beam.Map(lambda n: ("records", int(n))),
        facts | "CountFacts" >> beam.FlatMap(_size("facts", "facts_samples")),
        screens | "CountScreens" >> beam.FlatMap(_size("screens")),
        members | "CountMembers" >> beam.FlatMap(_size("members")),
        survivors | "CountSurvivors" >> beam.FlatMap(_size("survivors")),
        final | "CountFinal" >> beam.FlatMap(_size("final", "final_samples")),
        rejections | "CountRejections" >> beam.FlatMap(_rejection_count),
    ]
    tallies = (parts | "AllCounts" >> beam.Flatten() | "Sum" >> beam.CombinePerKey(sum)
               | "TallyRows" >> beam.Map(_tally_row))
    examples = (rejections | "Errors" >> beam.Filter(lambda kr: kr[1].error)
                | "ErrorExample" >> beam.Map(_error_example)
                | "FirstErrors" >> beam.combiners.Top.Smallest(5)
                | "ErrorRows" >> beam.FlatMap(lambda xs: [dict(zip(("stage", "reason", "record_id", "detail"), x,
                                                                    strict=True)) for x in xs]))
    return Counted(tallies, examples)


# --- the graph -----------------------------------------------------------------------------------------------------

@dataclass
class Graph:
    splits: beam.PCollection
    outcomes: beam.PCollection
    counted: Counted


def curation_graph(splits: beam.PCollection, cfg: CurateConfig, staging: str,
                   progress_dir: str | None = None) -> Graph:
    """Splits → per-record outcomes (and the counts), every decision made on facts."""
    names = [Path(p).name for p in cfg.inputs]
    settings = DescribeSettings(staging, cfg.judge_key, cfg.min_judge_score, cfg.max_reasoning_tokens,
                                cfg.redact_pii, cfg.row_group_rows, cfg.max_image_side)
    read = splits | "Describe" >> beam.ParDo(DescribeSplits(settings, progress_dir)).with_outputs(
        REJECTED, RECORDS, main="facts")
    facts = read["facts"]
    inspected = (facts | "Screenshots" >> beam.FlatMap(lambda f: sorted({s.screenshot for s in f.steps}))
                 | "DistinctScreens" >> beam.Distinct()
                 | "ScreenBatches" >> beam.Map(screen_bucket) | "GroupScreens" >> beam.GroupByKey()
                 | "Inspect" >> beam.ParDo(InspectScreens(str(cfg.blobs), progress_dir)))
    sketches = (facts | "Sketches" >> beam.FlatMap(step_sketches)
                | "SketchPerScreen" >> beam.CombinePerKey(min_sketch))
    table = (inspected
             | "AllScreens" >> beam.combiners.ToList()
             | "ScreenTable" >> beam.Map(build_screen_table, cfg.phash_distance,
                                         beam.pvalue.AsDict(sketches)))
    gated = facts | "Quality" >> beam.ParDo(Gate(cfg.unit), beam.pvalue.AsSingleton(table)).with_outputs(
        REJECTED, main="members")
    deduped = (gated["members"] | "GroupForDedupe" >> beam.GroupByKey()
               | "Dedupe" >> beam.ParDo(DedupeGroups(names, cfg.instruction_dedupe, cfg.instruction_threshold,
                                                     cfg.unit)).with_outputs(REJECTED, main="survivors"))
    unique = (deduped["survivors"] | "GroupById" >> beam.GroupByKey()
              | "UniqueIds" >> beam.ParDo(UniqueIdsFn(names)).with_outputs(REJECTED, main="kept"))
    rejections = ((read[REJECTED], gated[REJECTED], deduped[REJECTED], unique[REJECTED])
                  | "AllRejections" >> beam.Flatten())
    weights = unique["kept"] | "Weights" >> beam.FlatMap(_weights)
    outcomes = ((rejections, weights) | "Verdicts" >> beam.Flatten() | "ByRecord" >> beam.GroupByKey()
                | "Outcome" >> beam.Map(_outcome))
    counted = count_everything(read[RECORDS], facts, inspected, gated["members"], deduped["survivors"],
                               unique["kept"], rejections)
    return Graph(splits, outcomes, counted)
