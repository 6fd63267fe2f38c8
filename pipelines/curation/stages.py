"""The curation stages as composite Beam transforms; each reads like one box of the pipeline diagram.

Every stage returns ``StageOutput(kept, rejected, tally)`` where ``tally`` holds the stage's input, kept and
rejected counts computed from the three PCollections independently — the manifest checks
input = kept + rejected for every stage from these numbers, so an accounting bug cannot hide.
Grouping stages (dedupe) shuffle only ids, hashes and record metadata: screenshot bytes are read by
``InspectScreens`` (hashes kept, bytes dropped) and again only by the shard writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import apache_beam as beam

from filters.action_filters import ActionValidForPlatform, CoordsInImage, PointInTarget
from filters.base import KEPT, REJECTED, apply_filters
from filters.image_filters import ImageSizeMatches, ImageUsable
from filters.item import Item
from filters.record_filters import Flattenable, SchemaValid, UniqueId
from filters.screenshot import inspect_blob
from filters.text_filters import InstructionPresent, LanguageMatches, ReasoningConsistent, ReasoningLength
from filters.verdict_filters import JudgeScoreAtLeast, NotDuplicate, ReplaySucceeded
from pipelines.curation import functions as fn
from pipelines.curation.config import CurateConfig
from pipelines.curation.progress import SAMPLES_INSPECTED, ProgressCounter
from schemas.blobstore import BlobStore


@dataclass
class StageOutput:
    kept: beam.PCollection
    rejected: beam.PCollection
    tally: beam.PCollection


def _count(label: str, pcoll: beam.PCollection, stage: str, unit: str, what: str) -> beam.PCollection:
    return (pcoll | f"{label}Count{what}" >> beam.combiners.Count.Globally()
            | f"{label}Tag{what}" >> beam.Map(lambda n, s=stage, u=unit, w=what: {"stage": s, "unit": u,
                                                                                  "what": w, "n": int(n)}))


def tally(label: str, stage: str, unit: str, inp, kept, rejected) -> beam.PCollection:
    return (
        (_count(label, inp, stage, unit, "in"), _count(label, kept, stage, unit, "kept"),
         _count(label, rejected, stage, unit, "rejected"))
        | f"{label}Tally" >> beam.Flatten()
    )


def _filter_stage(label: str, stage: str, unit: str, pcoll, filters, record_id, payload,
                  run_time: datetime) -> StageOutput:
    out = pcoll | f"{label}Filter" >> apply_filters(stage, filters, record_id, payload, run_time)
    kept, rejected = out[KEPT], out[REJECTED]
    return StageOutput(kept, rejected, tally(label, stage, unit, pcoll, kept, rejected))


class ValidateSchema(beam.PTransform):
    """Parsed input → valid trajectories; anything the schema refused is rejected with a reason code."""

    def __init__(self, run_time: datetime):
        super().__init__()
        self.run_time = run_time

    def expand(self, records):
        return _filter_stage("Schema", "schema", "record", records, [SchemaValid()], fn.source_id,
                             fn.source_payload, self.run_time)


class UniqueIds(beam.PTransform):
    """One trajectory per id: the same record ingested twice, or two records claiming one id."""

    def __init__(self, run_time: datetime):
        super().__init__()
        self.run_time = run_time

    def expand(self, trajs):
        marked = (trajs | "KeyById" >> beam.Map(lambda r: (r.record.id, r)) | "GroupById" >> beam.GroupByKey()
                  | "MarkIds" >> beam.FlatMap(fn.mark_unique_ids))
        out = marked | "IdsFilter" >> apply_filters("unique_ids", [UniqueId()], fn.source_id, fn.source_payload,
                                                    self.run_time)
        return StageOutput(out[KEPT], out[REJECTED],
                           tally("Ids", "unique_ids", "record", trajs, out[KEPT], out[REJECTED]))


class FlattenSteps(beam.PTransform):
    """Trajectories → one Item per step (the unit of every later stage and of the shards)."""

    def __init__(self, run_time: datetime):
        super().__init__()
        self.run_time = run_time

    def expand(self, trajs):
        out = _filter_stage("Flatten", "flatten", "record", trajs, [Flattenable()], fn.source_id,
                            fn.source_payload, self.run_time)
        return StageOutput(out.kept | "Steps" >> beam.FlatMap(fn.flatten), out.rejected, out.tally)


class ExactDedupe(beam.PTransform):
    """Same screenshot, same action, same words (``Sample.content_hash``) → keep the best one."""

    def __init__(self, cfg: CurateConfig, run_time: datetime):
        super().__init__()
        self.cfg, self.run_time = cfg, run_time

    def expand(self, items):
        marked = (items | "KeyByContent" >> beam.Map(fn.by_content) | "GroupByContent" >> beam.GroupByKey()
                  | "MarkExact" >> beam.FlatMap(fn.mark_group("exact_duplicate", self.cfg.judge_key)))
        out = marked | "ExactFilter" >> apply_filters("exact_dedupe", [NotDuplicate()], fn.item_id,
                                                      fn.item_payload, self.run_time)
        return StageOutput(out[KEPT], out[REJECTED],
                           tally("Exact", "exact_dedupe", "sample", items, out[KEPT], out[REJECTED]))


class InspectScreens(beam.DoFn):
    """Attach ``ScreenFacts`` to each item: read the blob once per worker and screenshot, keep only hashes."""

    def __init__(self, blobs: str, cache_size: int = 4096, progress_dir: str | None = None):
        self.blobs = blobs
        self.cache_size = cache_size
        self.progress_dir = progress_dir

    def setup(self):
        self.store = BlobStore(self.blobs)
        self.cache = {}
        self.progress = ProgressCounter(self.progress_dir)

    def finish_bundle(self):
        self.progress.flush()

    def process(self, it: Item):
        sha = it.sample.screenshot_sha256
        facts = self.cache.get(sha)
        if facts is None:
            facts = inspect_blob(self.store, sha)
            if len(self.cache) >= self.cache_size:
                self.cache.pop(next(iter(self.cache)))
            self.cache[sha] = facts
        it.screen = facts
        self.progress.inc(SAMPLES_INSPECTED)
        yield it


class QualityGates(beam.PTransform):
    """Cheap text/geometry checks, then the screenshot checks; first failing gate names the reason."""

    def __init__(self, cfg: CurateConfig, run_time: datetime, progress_dir: str | None = None):
        super().__init__()
        self.cfg, self.run_time, self.progress_dir = cfg, run_time, progress_dir

    def expand(self, items):
        cfg = self.cfg
        gates = [
            InstructionPresent(), LanguageMatches(), ReasoningLength(cfg.max_reasoning_tokens),
            ReasoningConsistent(), ActionValidForPlatform(), CoordsInImage(), PointInTarget(),
            ReplaySucceeded(), JudgeScoreAtLeast(cfg.judge_key, cfg.min_judge_score),
            ImageUsable(), ImageSizeMatches(),
        ]
        inspected = items | "InspectScreens" >> beam.ParDo(InspectScreens(cfg.blobs, progress_dir=self.progress_dir))
        return _filter_stage("Quality", "quality", "sample", inspected, gates, fn.item_id, fn.item_payload,
                             self.run_time)


class NearDuplicateScreens(beam.PTransform):
    """Same action on near-identical screens (pHash candidates, 1024-bit dHash verify, union-find).

    Clustering runs in one worker over every distinct screenshot's hashes (see ``filters.hash_clusters`` for
    the measured limit: 1M hashes in ~14 s; memory, ~0.4 KB per distinct screen, is what bounds it)."""

    def __init__(self, cfg: CurateConfig, run_time: datetime):
        super().__init__()
        self.cfg, self.run_time = cfg, run_time

    def expand(self, items):
        cfg = self.cfg
        clusters = (
            items
            | "ScreenHashes" >> beam.Map(fn.screen_entry)
            | "DistinctScreens" >> beam.CombinePerKey(fn.first)
            | "AllScreens" >> beam.combiners.ToList()
            | "Cluster" >> beam.Map(fn.cluster_screens, cfg.phash_distance, cfg.detail_distance)
        )
        marked = (
            items
            | "KeyByCluster" >> beam.Map(fn.by_screen_cluster, beam.pvalue.AsSingleton(clusters))
            | "GroupByCluster" >> beam.GroupByKey()
            | "MarkNearScreens" >> beam.FlatMap(fn.mark_group("near_duplicate_screen", cfg.judge_key))
        )
        out = marked | "ScreensFilter" >> apply_filters("near_dup_screens", [NotDuplicate()], fn.item_id,
                                                        fn.item_payload, self.run_time)
        return StageOutput(out[KEPT], out[REJECTED],
                           tally("Screens", "near_dup_screens", "sample", items, out[KEPT], out[REJECTED]))


class NearDuplicateInstructions(beam.PTransform):
    """Per app, trajectories whose tasks say the same thing: keep the best trajectory of each cluster."""

    def __init__(self, cfg: CurateConfig, run_time: datetime):
        super().__init__()
        self.cfg, self.run_time = cfg, run_time

    def expand(self, items):
        cfg = self.cfg
        reps = (
            items
            | "TaskEntries" >> beam.Map(fn.trajectory_entry, cfg.judge_key)
            | "DistinctTrajectories" >> beam.CombinePerKey(fn.first)
            | "ByApp" >> beam.Map(fn.to_app_key)
            | "GroupByApp" >> beam.GroupByKey()
            | "ClusterTasks" >> beam.FlatMap(fn.near_duplicate_tasks, cfg.instruction_dedupe,
                                             cfg.instruction_threshold)
        )
        marked = (items | "ClearMarks" >> beam.Map(fn.clear_duplicate)
                  | "MarkNearTasks" >> beam.Map(fn.mark_task_duplicate, beam.pvalue.AsDict(reps)))
        out = marked | "TasksFilter" >> apply_filters("near_dup_instructions", [NotDuplicate()], fn.item_id,
                                                      fn.item_payload, self.run_time)
        return StageOutput(out[KEPT], out[REJECTED],
                           tally("Tasks", "near_dup_instructions", "sample", items, out[KEPT], out[REJECTED]))


class Finish(beam.PTransform):
    """Kept samples → PII-redacted text and difficulty columns (screens are blurred by the writer)."""

    def __init__(self, redact: bool):
        super().__init__()
        self.redact = redact

    def expand(self, items):
        if self.redact:
            items = items | "RedactText" >> beam.Map(fn.redact)
        return items | "Difficulty" >> beam.Map(fn.add_difficulty)
