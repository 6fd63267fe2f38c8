"""A read-only index over one dataset version's Parquet shards, for the review UI.

A dataset version is a directory ``vNNNN/`` with ``data/*.parquet`` (kind ``sample``), optionally
``rejects/*.parquet`` (kind ``reject``, whose payload is the refused record) and ``manifest.json``. A directory
holding the ``*.parquet`` shards directly is accepted too.

The index keeps only the small columns (ids, app, action type, scores, hashes) in memory, so a large version
opens in seconds; a full sample (instruction, reasoning, the image) is read from its row group on demand, and
screenshots are looked up by sha256 either in the shards' embedded ``image`` column or in a blob store.

One huge record (a long trajectory whose screenshots are embedded in one row group) must not cost its size in
memory, let alone once per concurrent request: shards are read in bounded batches (``iter_rows``), a screenshot
is streamed out of its column chunk one small batch at a time until its row (never the row group's whole image
column), and the caches of row groups and images are capped in bytes, not entries (``BENCH
huge_record_rss_ratio`` in benchmarks/bench_review.py).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas import Action, BlobStore, Sample
from schemas.action import full_type_of
from schemas.arrow import from_row
from schemas.base import SHA256_RE
from schemas.blobstore import BlobNotFound, sha256_bytes
from schemas.errors import FieldError, RecordValidationError
from schemas.records import parse_record, payload_samples

INDEX_COLUMNS = ["id", "trajectory_id", "step_index", "num_steps", "app_id", "action", "scores",
                 "screenshot_sha256", "content_hash", "task", "instruction", "train_target", "lineage"]
# Columns a shard written before schema 1.2 may lack; the index uses the schema default instead.
OPTIONAL_COLUMNS = {"train_target", "lineage"}
INDEX_BATCH_ROWS = 4096  # rows converted to Python at once while indexing (text columns only)
PAYLOAD_BATCH_ROWS = 16  # reject rows (each holds a whole refused record) decoded at once
IMAGE_BATCH_ROWS = 4  # screenshots decoded at once while streaming to one row's image
READ_BUFFER = 1 << 20  # bytes read at a time from a column chunk (so a chunk is never loaded whole)


def iter_rows(path: Path, row_group: int, columns: list[str] | None, batch_rows: int) -> Iterator[tuple[int, dict]]:
    """(offset in the row group, row) for one row group, holding ``batch_rows`` rows of ``columns`` at a time:
    a buffered, not pre-buffered, reader decodes the column chunks page by page instead of loading them whole."""
    pf = pq.ParquetFile(path, buffer_size=READ_BUFFER, pre_buffer=False)
    offset = 0
    for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[row_group], columns=columns, use_threads=False):
        for row in batch.to_pylist():
            yield offset, row
            offset += 1


class DatasetError(ValueError):
    """The directory is not a dataset version (message says what was looked for)."""


@dataclass(frozen=True)
class Location:
    file: Path
    row_group: int
    offset: int


@dataclass
class SampleRef:
    """What the queue needs to order a sample without reading it."""

    id: str
    trajectory_id: str
    step_index: int
    num_steps: int
    app_id: str
    action_type: str
    judge_score: float | None
    screenshot_sha256: str
    content_hash: str
    location: Location
    source: str = "data"  # "data" (in the version) or "rejects" (refused by an automatic gate)
    reject_stage: str = ""
    reject_reason: str = ""
    reject_detail: str = ""
    task: str = ""
    instruction: str = ""
    train_target: bool = True  # False: a recovery trajectory's deliberate mistake (context, not a target)
    negative: bool = False  # a noise copy (lineage.negative): a negative for critics, never a demonstration
    search_text: str = field(default="", repr=False)  # casefolded id, trajectory, task and instruction

    def __post_init__(self) -> None:
        if not self.search_text:
            self.search_text = "\n".join((self.id, self.trajectory_id, self.task, self.instruction)).casefold()


@dataclass
class DatasetVersion:
    root: Path
    data_files: list[Path]
    reject_files: list[Path]
    refs: dict[str, SampleRef] = field(default_factory=dict)
    rejected: dict[str, SampleRef] = field(default_factory=dict)
    by_trajectory: dict[str, list[SampleRef]] = field(default_factory=dict)
    duplicate_ids: int = 0
    unreadable_rejects: int = 0
    blobs: BlobStore | None = None
    manifest: dict = field(default_factory=dict)
    unreadable_files: list[tuple[Path, str]] = field(default_factory=list)  # (shard, why): left out of the index

    @property
    def name(self) -> str:
        return self.root.name

    def get(self, sample_id: str) -> SampleRef | None:
        return self.refs.get(sample_id) or self.rejected.get(sample_id)


def _openable(files: list[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Shards whose Parquet footer reads, and (shard, why) for the others: one corrupt shard must not hide the
    rest of a version from review or from the gate (which rejects the unreadable shard by name)."""
    ok, broken = [], []
    for f in files:
        try:
            pq.ParquetFile(f).metadata  # noqa: B018 - reading the footer is the check
            ok.append(f)
        except (OSError, ValueError, pa.ArrowException) as exc:
            broken.append((f, f"{type(exc).__name__}: {exc}"))
    return ok, broken


def data_files_of(root: Path) -> list[Path]:
    data_dir = root / "data"
    files = sorted(data_dir.glob("*.parquet")) if data_dir.is_dir() else sorted(root.glob("*.parquet"))
    return [f for f in files if not f.name.startswith(".")]


def _score(scores: list[dict] | None) -> float | None:
    for s in scores or []:
        if s.get("name") == "judge":
            return s.get("value")
    return None


def open_dataset(root: str | Path, blobs: str | Path | None = None) -> DatasetVersion:
    """Index a dataset version directory (shards are read column-wise, images are not loaded)."""
    root = Path(root)
    if not root.is_dir():
        raise DatasetError(f"{root}: not a directory")
    files, broken = _openable(data_files_of(root))
    if not files and not broken:
        found = sorted(p.name for p in root.glob("v[0-9][0-9][0-9][0-9]*") if p.is_dir())
        hint = f"; this looks like a dataset root: pass one version, e.g. {root / found[-1]}" if found else ""
        raise DatasetError(f"{root}: no Parquet shards found in {root / 'data'} or {root}{hint}")
    rejects_dir = root / "rejects"
    ds = DatasetVersion(root=root, data_files=files,
                        reject_files=sorted(rejects_dir.glob("*.parquet")) if rejects_dir.is_dir() else [],
                        unreadable_files=broken)
    manifest = root / "manifest.json"
    if manifest.is_file():
        try:
            ds.manifest = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            ds.manifest = {}
    ds.blobs = _blob_store(root, blobs, ds.manifest)
    for path in files:
        pf = pq.ParquetFile(path)
        names = set(pf.schema_arrow.names)
        columns = [c for c in INDEX_COLUMNS if c in names or c not in OPTIONAL_COLUMNS]
        for rg in range(pf.num_row_groups):
            for offset, row in iter_rows(path, rg, columns, INDEX_BATCH_ROWS):
                lineage = row.get("lineage") or {}
                ref = SampleRef(
                    id=row["id"], trajectory_id=row["trajectory_id"], step_index=row["step_index"],
                    num_steps=row["num_steps"], app_id=row["app_id"] or "",
                    action_type=full_type_of(row["action"]), judge_score=_score(row["scores"]),
                    screenshot_sha256=row["screenshot_sha256"], content_hash=row["content_hash"] or "",
                    location=Location(path, rg, offset), task=row["task"] or "", instruction=row["instruction"] or "",
                    train_target=row.get("train_target") is not False, negative=bool(lineage.get("negative")),
                )
                if ref.id in ds.refs:
                    ds.duplicate_ids += 1
                    continue
                ds.refs[ref.id] = ref
                ds.by_trajectory.setdefault(ref.trajectory_id, []).append(ref)
    for steps in ds.by_trajectory.values():
        steps.sort(key=lambda r: r.step_index)
    for path in ds.reject_files:
        _index_rejects(ds, path)
    return ds


def _blob_store(root: Path, blobs: str | Path | None, manifest: dict) -> BlobStore | None:
    """Where non-embedded screenshots live: the flag, else the curation manifest's blob store, else ``blobs/``
    beside or above the version (curation's default puts it next to its inputs)."""
    if blobs:
        return BlobStore(blobs)
    lineage: dict = manifest["lineage"] if isinstance(manifest.get("lineage"), dict) else {}
    recorded = lineage.get("blob_store")
    if isinstance(recorded, str) and recorded:
        local = Path(recorded)
        if "://" in recorded or local.is_dir():
            return BlobStore(recorded)
    for candidate in (root / "blobs", root.parent / "blobs"):
        if candidate.is_dir():
            return BlobStore(candidate)
    return None


def _index_rejects(ds: DatasetVersion, path: Path) -> None:
    """Index refused samples for the audit queue: a refused step, or each step of a refused trajectory (the
    payload is the sample or the trajectory JSON, see ``schemas.records.payload_samples``)."""
    pf = pq.ParquetFile(path)
    for rg in range(pf.num_row_groups):
        for offset, row in iter_rows(path, rg, None, PAYLOAD_BATCH_ROWS):
            samples = payload_samples(row.get("payload") or "")
            if not samples:
                ds.unreadable_rejects += 1
                continue
            for s in samples:
                ref = SampleRef(
                    id=s.id, trajectory_id=s.trajectory_id, step_index=s.step_index, num_steps=s.num_steps,
                    app_id=s.app_id, action_type=s.action.full_type, judge_score=s.scores.get("judge"),
                    screenshot_sha256=s.screenshot_sha256, content_hash=s.content_hash,
                    location=Location(path, rg, offset), source="rejects", reject_stage=str(row.get("stage") or ""),
                    reject_reason=str(row.get("reason") or ""), reject_detail=str(row.get("detail") or ""),
                    task=s.task, instruction=s.instruction, train_target=s.train_target,
                    negative=s.lineage.negative,
                )
                if ref.id not in ds.refs and ref.id not in ds.rejected:
                    ds.rejected[ref.id] = ref


class SampleReader:
    """Loads full samples and screenshots on demand, with small byte-capped caches of decoded row groups
    (text columns only) and of screenshots.

    Thread-safe: the web server calls it from its worker threads.
    """

    def __init__(self, ds: DatasetVersion, cache_row_groups: int = 8, cache_images: int = 64,
                 cache_bytes: int = 32 << 20):
        self.ds = ds
        self._groups: OrderedDict[tuple[Path, int], pa.Table] = OrderedDict()
        self._images: OrderedDict[str, bytes] = OrderedDict()
        self._max_groups, self._max_images, self._max_bytes = cache_row_groups, cache_images, cache_bytes
        self._lock = threading.Lock()
        # One scan of an image column at a time: a Parquet page is decoded whole, and a shard written with
        # pages of many rows (curation writes up to a row group per page) holds a whole row group's screenshots
        # in one page, so eight thumbnail requests at once would otherwise decode it eight times over.
        self._scan = threading.Lock()
        # sha → a sample whose shard embeds it (first seen wins; all carry identical bytes by construction).
        self._image_refs: dict[str, SampleRef] = {}
        for ref in [*ds.refs.values(), *ds.rejected.values()]:
            self._image_refs.setdefault(ref.screenshot_sha256, ref)

    @staticmethod
    def _evict(cache: OrderedDict, max_items: int, max_bytes: int, size) -> None:  # type: ignore[type-arg, no-untyped-def]
        total = sum(size(v) for v in cache.values())
        while cache and (len(cache) > max_items or total > max_bytes):
            total -= size(cache.popitem(last=False)[1])

    def _rows(self, loc: Location) -> pa.Table:
        """The row group's columns but the image, as an Arrow table (cached): a page converts only its one row
        to Python, not the thousands of rows around it (that conversion was most of a sample page's server
        time). A row group whose text alone exceeds the cache is read for this call and not kept."""
        key = (loc.file, loc.row_group)
        with self._lock:
            if key in self._groups:
                self._groups.move_to_end(key)
                return self._groups[key]
        pf = pq.ParquetFile(loc.file)
        rows = pf.read_row_group(loc.row_group, columns=[n for n in pf.schema_arrow.names if n != "image"])
        if rows.nbytes <= self._max_bytes:
            with self._lock:
                self._groups[key] = rows
                self._evict(self._groups, self._max_groups, self._max_bytes, lambda t: t.nbytes)
        return rows

    def _row(self, loc: Location) -> dict:
        return self._rows(loc).slice(loc.offset, 1).to_pylist()[0]

    @staticmethod
    def _cell(loc: Location, column: str, batch_rows: int) -> object:
        """One cell, streamed: the column chunk is decoded ``batch_rows`` rows at a time up to ``loc``'s row, so
        a row group of huge cells (screenshots, reject payloads) is never held whole."""
        for offset, row in iter_rows(loc.file, loc.row_group, [column], batch_rows):
            if offset == loc.offset:
                return row[column]
        return None

    def _payload_samples(self, ref: SampleRef) -> list[Sample]:
        payload = self._cell(ref.location, "payload", PAYLOAD_BATCH_ROWS)
        return payload_samples(payload if isinstance(payload, str) else "")

    def sample(self, ref: SampleRef) -> Sample:
        """The full sample (without image bytes); raises ``RecordValidationError`` for a bad row."""
        if ref.source == "rejects":
            found = [s for s in self._payload_samples(ref) if s.id == ref.id]
            if not found:
                raise RecordValidationError([FieldError(ref.id, "payload", "the reject row no longer holds it")])
            return found[0].model_copy(update={"image": None})
        record = parse_record(from_row(self._row(ref.location)), "sample")
        assert isinstance(record, Sample)
        return record

    def action(self, ref: SampleRef) -> tuple[Action, int, int] | None:
        """A step's action and screenshot size, for a filmstrip thumbnail's mark: three cells of the cached row
        group, not a whole sample; None when the row does not hold a valid action."""
        try:
            if ref.source == "rejects":
                s = self.sample(ref)
                return s.action, s.image_width, s.image_height
            t = self._rows(ref.location).slice(ref.location.offset, 1)
            width, height = t.column("image_width")[0].as_py(), t.column("image_height")[0].as_py()
            action = Action.model_validate(t.column("action")[0].as_py())
            return action, int(width), int(height)
        except (RecordValidationError, ValueError, TypeError, KeyError):
            return None

    def image(self, sha: str) -> bytes | None:
        """PNG bytes of a screenshot of this version by sha256 — never by path, never another blob of the store.

        The blob store is shared by every crawl and version; a sha that no sample (or audited reject) of the
        reviewed version shows is answered None, and served bytes are checked against the digest.
        """
        if not isinstance(sha, str) or not SHA256_RE.match(sha) or sha not in self._image_refs:
            return None
        with self._lock:
            if sha in self._images:
                self._images.move_to_end(sha)
                return self._images[sha]
        data = self._embedded(sha)
        if data is None and self.ds.blobs is not None:
            try:
                data = self.ds.blobs.get(sha)
            except (BlobNotFound, ValueError):
                data = None
        if data is None or sha256_bytes(data) != sha:
            return None
        if len(data) <= self._max_bytes // 8:
            with self._lock:
                self._images[sha] = data
                self._evict(self._images, self._max_images, self._max_bytes, len)
        return data

    def _embedded(self, sha: str) -> bytes | None:
        ref = self._image_refs.get(sha)
        if ref is None:
            return None
        if ref.source == "rejects":
            return next((s.image for s in self._payload_samples(ref) if s.id == ref.id), None)
        if "image" not in pq.ParquetFile(ref.location.file).schema_arrow.names:
            return None
        with self._scan:
            with self._lock:
                if sha in self._images:  # another request fetched it while this one waited
                    return self._images[sha]
            value = self._cell(ref.location, "image", IMAGE_BATCH_ROWS)
        return value if isinstance(value, bytes) else None
