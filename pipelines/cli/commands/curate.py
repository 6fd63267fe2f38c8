"""``trajforge curate``: trajectories → a versioned dataset of curated Parquet shards, rejects and manifest."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from pipelines.cli.commands.exits import DATA, EMPTY, OUTPUT, say
from pipelines.cli.commands.plain import PlainConsole

RUNNERS = "direct (in-process), multiprocess (--workers N), portable (--job-endpoint, --worker-pool), dask " \
          "(--dask-address), or a Beam runner name such as DataflowRunner / FlinkRunner / SparkRunner with " \
          "--beam-arg flags"


def funnel_table(manifest: dict) -> Table:
    table = Table("stage", "unit", "in", "kept", "rejected", "top reasons", title="Curation funnel")
    for s in manifest["stages"]:
        reasons = sorted(s["reasons"].items(), key=lambda kv: -kv[1])
        top = ", ".join(f"{r}={n}" for r, n in reasons[:4]) + (" …" if len(reasons) > 4 else "")
        table.add_row(s["stage"], s["unit"], str(s["in"]), str(s["kept"]), str(s["rejected"]), top or "—")
    return table


class CurateProgress:
    """Rich progress for a run: the phase, records read (of the total in the inputs), samples inspected,
    samples and rejects written — fed by ``curate``'s ``status`` and ``progress`` callbacks."""

    ROWS = (("records_read", "read records"), ("screens_inspected", "inspected screenshots"),
            ("samples_written", "wrote samples"), ("rejects_written", "wrote rejects"))

    def __init__(self, console: PlainConsole, records_total: int):
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description:<24}", markup=False), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False)
        self.phase_task = self.bar.add_task("starting", total=None)
        self.tasks = {key: self.bar.add_task(label, total=records_total if key == "records_read" else None)
                      for key, label in self.ROWS}

    def __enter__(self) -> CurateProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.update(self.phase_task, description="done" if exc[0] is None else "failed", total=1,
                        completed=1 if exc[0] is None else 0)
        final = {t.id: t.completed for t in self.bar.tasks}
        for task in self.tasks.values():  # the counts are final now: show them as complete
            self.bar.update(task, total=max(final[task], 1), completed=final[task])
        self.bar.stop()

    def phase(self, message: str) -> None:
        self.bar.update(self.phase_task, description=message)

    def counts(self, counts: dict[str, int]) -> None:
        for key, task in self.tasks.items():
            self.bar.update(task, completed=counts.get(key, 0))


def register(app: typer.Typer) -> None:
    @app.command("curate")
    def curate_cmd(
        inputs: list[Path] = typer.Option(..., "--in", exists=True, dir_okay=False,
                                          help="Trajectory files (.jsonl, .json, .parquet); repeat for several."),
        out: Path = typer.Option(..., "--out", help="Dataset directory; the run is published as OUT/vNNNN."),
        blobs: str | None = typer.Option(None, help="Screenshot blob store (dir or fsspec URL); default "
                                                    "<dir of the first input>/blobs."),
        runner: str = typer.Option("direct", help=f"Beam runner: {RUNNERS}."),
        workers: int = typer.Option(2, help="Worker processes for --runner multiprocess."),
        job_endpoint: str | None = typer.Option(None, help="Job API endpoint host:port (--runner portable)."),
        worker_pool: str | None = typer.Option(None, help="External SDK worker pool host:port (--runner portable); "
                                                          "default: loopback workers in this process."),
        dask_address: str | None = typer.Option(None, help="dask.distributed scheduler host:port (--runner dask)."),
        beam_arg: list[str] = typer.Option([], "--beam-arg", help="Extra Beam pipeline option, repeatable, e.g. "
                                                                  "--beam-arg=--project=P."),
        embed_images: bool = typer.Option(True, "--embed-images/--no-embed-images",
                                          help="Embed PNG bytes in the shards, or keep only sha256 references."),
        rows_per_shard: int = typer.Option(5000, help="Target rows per data shard."),
        row_group_rows: int = typer.Option(256, help="Rows per Parquet row group (bounds reader memory)."),
        phash_distance: int = typer.Option(6, help="Max 64-bit pHash Hamming distance for near-dup candidates."),
        detail_distance: int | None = typer.Option(None, hidden=True, help="Removed (refused with the reason)."),
        instruction_dedupe: str = typer.Option("minilm", help="Near-duplicate task backend: minilm | minhash | off."),
        instruction_threshold: float | None = typer.Option(None, help="Similarity threshold (default 0.9 cosine "
                                                                      "for minilm, 0.8 Jaccard for minhash)."),
        max_reasoning_tokens: int = typer.Option(256, help="Reasoning length cap in tokens."),
        judge_key: str = typer.Option("judge", help="Score name holding the judge score."),
        min_judge_score: float = typer.Option(3.0, help="Minimum judge score, when a record has one."),
        max_image_side: int = typer.Option(8192, help="Output expectation: image sides within 1..this."),
        redact_pii: bool = typer.Option(True, "--redact-pii/--no-redact-pii",
                                        help="Redact emails/phones/cards in text and blur them on screenshots."),
        unit: str = typer.Option("trajectory", help="What is kept or rejected: 'trajectory' (whole trajectories; "
                                                    "a failing step rejects its trajectory, repeats are weighted) "
                                                    "or 'step' (rows one by one, for grounding-only datasets)."),
        max_filter_errors: int = typer.Option(0, help="Filter exceptions tolerated before the run fails (each "
                                                      "affected record is kept as a <filter>_error reject)."),
        allow_empty: bool = typer.Option(False, "--allow-empty", help="Publish an empty version when the inputs "
                                                                      "hold no record (otherwise exit 4) or every "
                                                                      "record was rejected (otherwise exit 1)."),
    ) -> None:
        """Validate, dedupe, quality-gate and redact trajectories into versioned Parquet shards.

        Every refused record goes to OUT/vNNNN/rejects with its stage and reason (a file that cannot be read is
        one reject naming it); the run fails (exit 1, nothing published) if a filter raised (past
        --max-filter-errors), every record was rejected (unless --allow-empty), the output expectations fail or
        the counts do not reconcile. Exit 3: the dataset folder or the blob store cannot be used; exit 4: the
        inputs hold no record at all (unless --allow-empty).
        """
        if detail_distance is not None:  # an old command line: refused, never silently ignored
            from pipelines.curation.config import REMOVED_SETTINGS

            raise typer.BadParameter(REMOVED_SETTINGS["detail_distance"], param_hint="--detail-distance")
        from pipelines.curation.quiet import import_beam_quietly

        import_beam_quietly()  # before anything imports Beam: its import-time warning would reach the console
        from pipelines.beam.errors import RunnerUnavailable
        from pipelines.curation.config import CurateConfig
        from pipelines.curation.expectations import ExpectationsFailed
        from pipelines.curation.manifest import AccountingError
        from pipelines.curation.pipeline import CurationFailed, curate
        from pipelines.curation.progress import count_input_records
        from schemas.blobstore import BlobStore
        from schemas.errors import EmptyInput
        from schemas.fileio import OutputError

        console = PlainConsole()
        try:
            cfg = CurateConfig(
                inputs=inputs, out=out, blobs=blobs, embed_images=embed_images, rows_per_shard=rows_per_shard,
                row_group_rows=row_group_rows, phash_distance=phash_distance,
                instruction_dedupe=instruction_dedupe, instruction_threshold=instruction_threshold,
                max_reasoning_tokens=max_reasoning_tokens, judge_key=judge_key, min_judge_score=min_judge_score,
                max_image_side=max_image_side, runner=runner, workers=workers, job_endpoint=job_endpoint,
                worker_pool=worker_pool, dask_address=dask_address, beam_args=list(beam_arg), redact_pii=redact_pii,
                unit=unit, max_filter_errors=max_filter_errors, allow_empty=allow_empty)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        try:
            BlobStore(cfg.blobs or "")  # a missing, looping or unusable store fails now, in one line, not in a worker
            with CurateProgress(console, count_input_records(cfg.inputs)) as bar:
                result = curate(cfg, status=bar.phase, progress=bar.counts)
        except RunnerUnavailable as exc:  # one line, never wrapped: the endpoint and the likely cause
            console.print(f"curation failed, nothing published: {exc}", style="red", soft_wrap=True)
            raise typer.Exit(DATA) from None
        except (ExpectationsFailed, AccountingError, CurationFailed, OutputError, EmptyInput) as exc:
            say(f"trajforge: curation failed, nothing published: {exc}")  # one line, never wrapped
            code = OUTPUT if isinstance(exc, OutputError) else EMPTY if isinstance(exc, EmptyInput) else DATA
            raise typer.Exit(code) from None
        m = result.manifest
        console.print(funnel_table(m))
        t = m["totals"]
        console.print(f"{t['trajectories_kept']} trajectories ({t['trajectories_whole']} whole) and "
                      f"{t['samples_kept']} samples kept of {t['samples_in']} ({t['records_in']} records read) in "
                      f"{len(m['shards'])} shard(s), {result.seconds:.1f} s → {result.version_dir}")
