"""Every knob of a curation run, in one validated place (the CLI flags map onto these fields 1:1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

UNITS = ("trajectory", "step")


def _parquet_kind(p: Path) -> str | None:
    """The record kind a Parquet input declares (``trajforge.kind``), None when it declares none or its footer
    cannot be read (a damaged file is the reader's to reject, as one record naming it)."""
    if p.suffix.lower() not in (".parquet", ".parq"):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    from schemas.arrow import kind_of

    try:
        return kind_of(pq.read_schema(p))
    except (OSError, ValueError, pa.ArrowException):
        return None


# Settings that once existed and now do nothing: a config or command line that still sets one is refused with this
# reason (by the CLI and the nightly config), rather than accepted and silently ignored.
REMOVED_SETTINGS = {
    "detail_distance": "removed: the 1024-bit dHash verification it bounded no longer exists; near-duplicate screens "
                       "are verified by their element trees (filters/screen_elements.py) or, without one, by "
                       "scroll-aligned thumbnail blocks (filters/pixel_blocks.py), chosen by measurement "
                       "(benchmarks/bench_dedupe.py). Remove the setting; --phash-distance still bounds the candidates",
}


@dataclass
class CurateConfig:
    inputs: list[Path]
    out: Path
    blobs: str | None = None  # blob store root or fsspec URL; default <first input's dir>/blobs
    embed_images: bool = True
    rows_per_shard: int = 5000
    row_group_rows: int = 256
    # Near-duplicate screenshots of steps without an element tree: 64-bit pHash candidates within phash_distance,
    # verified by scroll-aligned thumbnail blocks (filters/pixel_blocks.py; steps with elements are compared by them,
    # filters/screen_elements.py). The former detail_distance is gone: see REMOVED_SETTINGS.
    phash_distance: int = 6
    instruction_dedupe: str = "minilm"  # minilm | minhash | off
    instruction_threshold: float | None = None
    max_reasoning_tokens: int = 256
    judge_key: str = "judge"
    min_judge_score: float = 3.0
    max_image_side: int = 8192  # output expectation: image sides within 1..max
    runner: str = "direct"  # direct | multiprocess | portable | dask | any Beam runner name (DataflowRunner, ...)
    workers: int = 2
    job_endpoint: str | None = None
    worker_pool: str | None = None  # host:port of an external SDK worker pool (portable runner)
    dask_address: str | None = None  # host:port of a dask.distributed scheduler (dask runner)
    # portable runner: seconds for the SDK workers to start the first stage before the run fails in one line
    worker_start_timeout: float = 120.0
    beam_args: list[str] = field(default_factory=list)
    redact_pii: bool = True
    # "trajectory": a trajectory is kept or rejected whole (a failing step rejects it, named in the reason) and
    # repeated rows are weighted; "step": rows are kept or dropped one by one (grounding-only datasets).
    unit: str = "trajectory"
    # A filter that raises is a bug: the record is kept among the rejects and the run fails once more than this
    # many such errors happened (0: any error fails the run; nothing is published).
    max_filter_errors: int = 0
    # A run with no input record (EmptyInput) or with every record rejected (EmptyDataset) is an error, nothing
    # is published, unless this asks to publish the empty version.
    allow_empty: bool = False

    def __post_init__(self) -> None:
        self.inputs = [Path(p) for p in self.inputs]
        self.out = Path(self.out)
        if not self.inputs:
            raise ValueError("at least one input file is needed (--in)")
        for p in self.inputs:
            if not p.is_file():
                raise ValueError(f"input {p} does not exist or is not a file")
            if p.suffix.lower() not in (".jsonl", ".json", ".ndjson", ".parquet", ".parq"):
                raise ValueError(f"input {p}: unsupported file type {p.suffix!r} (use .jsonl, .json or .parquet)")
            kind = _parquet_kind(p)
            if kind not in (None, "trajectory"):
                raise ValueError(f"input {p} holds {kind} records (its Parquet schema says so), not trajectories: "
                                 + ("a curated shard is curated already; curate the trajectories it came from"
                                    if kind == "sample" else "curate reads trajectories"))
        if self.rows_per_shard < 1 or self.row_group_rows < 1:
            raise ValueError("rows_per_shard and row_group_rows must be positive")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if self.max_filter_errors < 0:
            raise ValueError("max_filter_errors must be >= 0")
        if not 0 <= self.phash_distance <= 20:
            raise ValueError("phash_distance must be in 0..20")
        if self.runner == "dask" and not self.dask_address:
            raise ValueError("--runner dask needs --dask-address host:port (a running `dask scheduler`)")
        if self.blobs is None:
            self.blobs = str(self.inputs[0].resolve().parent / "blobs")
