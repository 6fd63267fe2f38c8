"""Explicit pyarrow schemas for everything trajforge writes to Parquet, and model ⇄ row conversion.

Schemas are spelled out here rather than inferred so that a shard written today reads the same way in pandas,
DuckDB and HF ``datasets`` next year, and so a schema change is a reviewed diff. Only types all three readers
handle are used (no ``map``: ``scores`` is a list of name/value structs).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from schemas.base import Record
from schemas.version import SCHEMA_VERSION

TS = pa.timestamp("us", tz="UTC")
STR = pa.string()
F64 = pa.float64()
I32 = pa.int32()
BOOL = pa.bool_()

BBOX = pa.struct([("x1", F64), ("y1", F64), ("x2", F64), ("y2", F64)])

ELEMENT = pa.struct(
    [
        ("id", STR),
        ("role", STR),
        ("class_name", STR),
        ("text", STR),
        ("content_desc", STR),
        ("resource_id", STR),
        ("path", STR),
        ("bbox", BBOX),
        ("clickable", BOOL),
        ("long_clickable", BOOL),
        ("editable", BOOL),
        ("scrollable", BOOL),
        ("checkable", BOOL),
        ("checked", BOOL),
        ("enabled", BOOL),
        ("visible", BOOL),
    ]
)

DEVICE = pa.struct(
    [
        ("name", STR),
        ("width", I32),
        ("height", I32),
        ("pixel_ratio", F64),
        ("kind", STR),
        ("locale", STR),
        ("color_scheme", STR),
        ("font_scale", F64),
    ]
)

OBSERVATION_FIELDS = [
    pa.field("schema_version", STR, nullable=False),
    pa.field("id", STR, nullable=False),
    pa.field("screenshot_sha256", STR, nullable=False),
    pa.field("width", I32, nullable=False),
    pa.field("height", I32, nullable=False),
    pa.field("device", DEVICE),
    pa.field("platform", STR),
    pa.field("app_id", STR),
    pa.field("app_version", STR),
    pa.field("location", STR),
    pa.field("elements", pa.list_(ELEMENT)),
    pa.field("raw_tree_sha256", STR),
    pa.field("exact_hash", STR),
    pa.field("structural_hash", STR),
    pa.field("timestamp", TS),
]
OBSERVATION = pa.struct(OBSERVATION_FIELDS)

ACTION = pa.struct(
    [
        ("type", STR),
        ("x", F64),
        ("y", F64),
        ("x2", F64),
        ("y2", F64),
        ("image_width", I32),
        ("image_height", I32),
        ("x_norm", I32),
        ("y_norm", I32),
        ("x2_norm", I32),
        ("y2_norm", I32),
        ("direction", STR),
        ("text", STR),
        ("key", STR),
        ("app", STR),
        ("duration_ms", pa.int64()),
        ("target_element_id", STR),
        ("target_bbox", BBOX),
        # 1.1 (appended, nullable): shards written by 1.0 lack them and read back as None (left, one click).
        ("button", STR),
        ("clicks", I32),
    ]
)

GOAL = pa.struct(
    [
        ("kind", STR),
        ("state", STR),
        ("observation_id", STR),
        ("location", STR),
        ("must_show", pa.list_(STR)),
        ("answer", STR),
        ("summary", STR),
        ("effects", pa.list_(STR)),  # appended: goals written before it read back with no effects
    ]
)

# 1.2 appended ``goal`` (nullable): trajectories written by 1.1 read back with no goal.
TASK = pa.struct([("id", STR), ("instruction", STR), ("app_id", STR), ("language", STR), ("goal", GOAL)])

STEP = pa.struct(
    [
        ("index", I32),
        ("observation", OBSERVATION),
        ("action", ACTION),
        ("instruction", STR),
        ("reasoning", STR),
        ("accepted_actions", pa.list_(ACTION)),
        ("next_observation_id", STR),
        ("train_target", BOOL),  # 1.2
    ]
)

LINEAGE = pa.struct(
    [
        ("source", STR),
        ("crawl_run", STR),
        ("device", STR),
        ("synthesizer_model", STR),
        ("prompt_version", STR),
        ("pipeline_version", STR),
        ("source_ids", pa.list_(STR)),
        ("negative", BOOL),  # 1.2
    ]
)

SCORES = pa.list_(pa.struct([("name", STR), ("value", F64)]))


def _meta(kind: str) -> dict[bytes, bytes]:
    return {b"trajforge.kind": kind.encode(), b"trajforge.schema_version": SCHEMA_VERSION.encode()}


OBSERVATION_SCHEMA = pa.schema(OBSERVATION_FIELDS, metadata=_meta("observation"))

TRANSITION_SCHEMA = pa.schema(
    [
        pa.field("schema_version", STR, nullable=False),
        pa.field("id", STR, nullable=False),
        pa.field("run_id", STR),
        pa.field("app_id", STR),
        pa.field("from_state", STR),
        pa.field("to_state", STR),
        pa.field("from_observation_id", STR),
        pa.field("to_observation_id", STR),
        pa.field("action", ACTION),
        pa.field("effective", BOOL),
        pa.field("error", STR),
        pa.field("duration_ms", F64),
        pa.field("timestamp", TS),
        pa.field("mutates", pa.list_(STR)),
    ],
    metadata=_meta("transition"),
)

TRAJECTORY_SCHEMA = pa.schema(
    [
        pa.field("schema_version", STR, nullable=False),
        pa.field("id", STR, nullable=False),
        pa.field("task", TASK),
        pa.field("steps", pa.list_(STEP)),
        pa.field("app_id", STR),
        pa.field("app_version", STR),
        pa.field("platform", STR),
        pa.field("difficulty", F64),
        pa.field("verification", STR),
        pa.field("scores", SCORES),
        pa.field("lineage", LINEAGE),
        pa.field("prior_history", pa.list_(STR)),  # 1.4
    ],
    metadata=_meta("trajectory"),
)

SAMPLE_SCHEMA = pa.schema(
    [
        pa.field("schema_version", STR, nullable=False),
        pa.field("id", STR, nullable=False),
        pa.field("trajectory_id", STR, nullable=False),
        pa.field("step_index", I32, nullable=False),
        pa.field("num_steps", I32, nullable=False),
        pa.field("task_id", STR),
        pa.field("task", STR),
        pa.field("language", STR),
        pa.field("app_id", STR),
        pa.field("app_version", STR),
        pa.field("platform", STR),
        pa.field("location", STR),
        pa.field("screenshot_sha256", STR, nullable=False),
        pa.field("image_width", I32, nullable=False),
        pa.field("image_height", I32, nullable=False),
        pa.field("image", pa.binary()),
        pa.field("action", ACTION),
        pa.field("instruction", STR),
        pa.field("reasoning", STR),
        pa.field("accepted_actions", pa.list_(ACTION)),
        pa.field("history", pa.list_(STR)),
        pa.field("difficulty", F64),
        pa.field("verification", STR),
        pa.field("scores", SCORES),
        pa.field("lineage", LINEAGE),
        pa.field("content_hash", STR),
        pa.field("num_apps", I32),
        pa.field("gesture_complexity", F64),
        pa.field("distractions", I32),
        pa.field("train_target", BOOL),  # 1.2
        pa.field("weight", F64),  # 1.3
    ],
    metadata=_meta("sample"),
)

REJECT_SCHEMA = pa.schema(
    [
        pa.field("schema_version", STR, nullable=False),
        pa.field("record_id", STR),
        pa.field("stage", STR, nullable=False),
        pa.field("reason", STR, nullable=False),
        pa.field("detail", STR),
        pa.field("payload", STR),
        pa.field("timestamp", TS),
    ],
    metadata=_meta("reject"),
)


def to_row(record: Record) -> dict[str, Any]:
    """A model as a plain dict shaped for its Arrow schema."""
    row = record.model_dump(mode="python")
    if isinstance(row.get("scores"), dict):
        row["scores"] = [{"name": k, "value": float(v)} for k, v in sorted(row["scores"].items())]
    return row


def from_row(row: dict[str, Any]) -> dict[str, Any]:
    """An Arrow row back into the dict shape the models validate."""
    scores = row.get("scores")
    if isinstance(scores, list) and all(
            isinstance(s, dict) and set(s) == {"name", "value"} and isinstance(s["name"], str) for s in scores):
        row = {**row, "scores": {s["name"]: s["value"] for s in scores}}
    return row  # anything else is left for the model to refuse, naming the field


def to_table(records: list[Record], schema: pa.Schema) -> pa.Table:
    """Records → an Arrow table with exactly ``schema`` (extra or missing fields are an error, not a guess)."""
    return pa.Table.from_pylist([to_row(r) for r in records], schema=schema)


def kind_of(schema: pa.Schema) -> str | None:
    """The record kind a Parquet/Arrow schema was written for, from its metadata."""
    meta = schema.metadata or {}
    kind = meta.get(b"trajforge.kind")
    return kind.decode() if kind else None
