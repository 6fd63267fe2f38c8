"""``curate``: the whole curation run — Beam pipeline, output contract, manifest, card, publish.

The pipeline reads like its diagram::

    read → schema → unique ids → flatten → exact dedupe → quality gates → near-dup screens
         → near-dup instructions → redact + difficulty → shards        (every stage's rejects → rejects/)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apache_beam as beam

from pipelines.curation import stages as st
from pipelines.curation.card import write_card
from pipelines.curation.config import CurateConfig
from pipelines.curation.dataset import clean_stale_staging, new_staging, publish
from pipelines.curation.expectations import validate_shards
from pipelines.curation.manifest import build_manifest
from pipelines.curation.progress import PROGRESS_DIR, ProgressPoller
from pipelines.curation.read import ReadTrajectories
from pipelines.curation.runners import quiet_beam, runner_and_options
from pipelines.curation.write import DATA_DIR, WriteRejects, WriteShards, WriteStats, atomic_parquet, shard_name
from schemas.arrow import SAMPLE_SCHEMA


@dataclasses.dataclass
class CurateResult:
    version_dir: Path
    manifest: dict[str, Any]
    seconds: float


def build(p: beam.Pipeline, cfg: CurateConfig, staging: Path, run_time: datetime,
          progress_dir: str | None = None) -> None:
    """Add the curation graph to pipeline ``p``, writing into ``staging`` (and progress counts to
    ``progress_dir`` when given)."""
    records = p | "Read" >> ReadTrajectories([str(x.resolve()) for x in cfg.inputs], progress_dir)
    schema = records | "Schema" >> st.ValidateSchema(run_time)
    ids = schema.kept | "UniqueIds" >> st.UniqueIds(run_time)
    flat = ids.kept | "Flatten" >> st.FlattenSteps(run_time)
    exact = flat.kept | "ExactDedupe" >> st.ExactDedupe(cfg, run_time)
    quality = exact.kept | "Quality" >> st.QualityGates(cfg, run_time, progress_dir)
    screens = quality.kept | "NearDupScreens" >> st.NearDuplicateScreens(cfg, run_time)
    tasks = screens.kept | "NearDupInstructions" >> st.NearDuplicateInstructions(cfg, run_time)
    final = tasks.kept | "Finish" >> st.Finish(cfg.redact_pii)

    outputs = (schema, ids, flat, exact, quality, screens, tasks)
    stage_dir = str(staging)
    _ = final | "Shards" >> WriteShards(stage_dir, cfg.blobs, cfg.embed_images, cfg.redact_pii, cfg.rows_per_shard,
                                        cfg.row_group_rows, progress_dir)
    rejects = [o.rejected for o in outputs] | "AllRejects" >> beam.Flatten()
    _ = rejects | "Rejects" >> WriteRejects(stage_dir, cfg.rows_per_shard, cfg.row_group_rows, progress_dir)
    tallies = [o.tally for o in outputs] | "AllTallies" >> beam.Flatten()
    _ = tallies | "Tallies" >> WriteStats(stage_dir, "tallies.json")


def _config_dict(cfg: CurateConfig) -> dict[str, Any]:
    d = dataclasses.asdict(cfg)
    d["inputs"] = [Path(x).name for x in cfg.inputs]
    d["out"] = None
    d.pop("beam_args")
    d.pop("job_endpoint")
    d.pop("worker_pool")
    return d


def _empty_shard(data_dir: Path) -> Path:
    path = data_dir / shard_name("shard", 0, 1)
    atomic_parquet(path, SAMPLE_SCHEMA, [], row_group_rows=1)
    return path


def curate(cfg: CurateConfig, status: Callable[[str], None] = lambda _: None,
           progress: Callable[[dict[str, int]], None] | None = None) -> CurateResult:
    """Run the pipeline into a private staging directory; validate, document and publish it as ``OUT/vNNNN``.

    ``status(message)`` hears each phase; ``progress(counts)``, when given, hears the workers' running counts
    (``pipelines.curation.progress``: records read, samples inspected, samples and rejects written) several
    times a second while the Beam pipeline runs. On any failure (pipeline error, failed expectations, counts
    that do not reconcile) nothing is published and the exception propagates; the staging directory is removed.
    """
    started = time.monotonic()
    run_time = datetime.now(UTC).replace(microsecond=0)
    clean_stale_staging(cfg.out)
    staging = new_staging(cfg.out)
    try:
        status(f"running the Beam pipeline ({cfg.runner})")
        runner, options = runner_and_options(cfg)
        progress_dir = staging / PROGRESS_DIR
        watch = ProgressPoller(progress_dir, progress) if progress else contextlib.nullcontext()
        with quiet_beam(), watch, beam.Pipeline(runner=runner, options=options) as p:
            build(p, cfg, staging, run_time, str(progress_dir) if progress else None)
        status("checking the output expectations")
        shards = sorted((staging / DATA_DIR).glob("*.parquet"))
        if not shards:
            # Everything was rejected: still publish a readable (empty) shard, so `data/` loads in every reader.
            shards = [_empty_shard(staging / DATA_DIR)]
        validate_shards(shards, staging / "expectations.json", cfg.max_image_side, cfg.embed_images)
        status("writing manifest and dataset card")
        run = {"started": run_time.isoformat(), "runner": cfg.runner}
        manifest = build_manifest(staging, cfg.inputs, _config_dict(cfg), run)

        def prepare(version: str) -> None:
            manifest["version"] = version
            (staging / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
            write_card(manifest, staging, version)

        shutil.rmtree(staging / "_stats", ignore_errors=True)
        shutil.rmtree(progress_dir, ignore_errors=True)
        version_dir = publish(staging, cfg.out, prepare)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return CurateResult(version_dir, manifest, time.monotonic() - started)
