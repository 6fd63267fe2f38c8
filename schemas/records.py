"""The record kinds trajforge exchanges, and parsing of untrusted dicts into them with named errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from schemas.arrow import (
    OBSERVATION_SCHEMA,
    REJECT_SCHEMA,
    SAMPLE_SCHEMA,
    TRAJECTORY_SCHEMA,
    TRANSITION_SCHEMA,
    from_row,
)
from schemas.base import Record
from schemas.errors import FieldError, RecordValidationError
from schemas.observation import Observation
from schemas.reject import Reject
from schemas.sample import Sample
from schemas.trajectory import Trajectory
from schemas.transition import Transition
from schemas.version import SCHEMA_VERSION, major


@dataclass(frozen=True)
class Kind:
    name: str
    model: type[Record]
    arrow: pa.Schema
    id_field: str = "id"


KINDS: dict[str, Kind] = {
    "trajectory": Kind("trajectory", Trajectory, TRAJECTORY_SCHEMA),
    "observation": Kind("observation", Observation, OBSERVATION_SCHEMA),
    "transition": Kind("transition", Transition, TRANSITION_SCHEMA),
    "sample": Kind("sample", Sample, SAMPLE_SCHEMA),
    "reject": Kind("reject", Reject, REJECT_SCHEMA, id_field="record_id"),
}


def guess_kind(data: dict[str, Any]) -> str | None:
    """Which kind an untyped dict looks like, from the fields only that kind has."""
    if "trajectory_id" in data and "step_index" in data:
        return "sample"
    if "steps" in data or "task" in data:
        return "trajectory"
    if "from_state" in data or "to_observation_id" in data:
        return "transition"
    if "stage" in data and "reason" in data:
        return "reject"
    if "screenshot_sha256" in data:
        return "observation"
    return None


def _field_path(loc: tuple[Any, ...]) -> str:
    """Pydantic's error location as a readable path: ('steps', 2, 'action', 'x') → 'steps[2].action.x'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "<record>"


def _bad_strings(value: Any, path: str = "") -> str | None:
    """Path of the first string that is not valid Unicode (e.g. a lone surrogate from a JSON escape)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "<record>"
    elif isinstance(value, dict):
        for k, v in value.items():
            found = _bad_strings(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _bad_strings(v, f"{path}[{i}]")
            if found:
                return found
    return None


def record_label(data: Any, kind: Kind | None, line: int | None) -> str:
    """How an error names a record: its id when it has a usable one, else its line number."""
    if isinstance(data, dict):
        rid = data.get(kind.id_field if kind else "id")
        if isinstance(rid, str) and rid:
            return rid
    return f"<line {line}>" if line is not None else "<unknown>"


def parse_record(data: Any, kind: str | None = None, line: int | None = None) -> Record:
    """Validate one untrusted record, raising ``RecordValidationError`` with every problem, each named."""
    if not isinstance(data, dict):
        raise RecordValidationError(
            [FieldError(f"<line {line}>", "<record>", f"expected a JSON object, got {type(data).__name__}", line)]
        )
    kind_name = kind or guess_kind(data)
    k = KINDS.get(kind_name or "")
    label = record_label(data, k, line)
    if k is None:
        raise RecordValidationError(
            [FieldError(label, "<record>", f"cannot tell the record kind (known: {', '.join(KINDS)})", line)]
        )
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, str) or not version[:1].isdigit() or major(version) != major(SCHEMA_VERSION):
        raise RecordValidationError(
            [FieldError(label, "schema_version", f"unsupported schema version {version!r}", line)]
        )
    bad = _bad_strings(data)
    if bad:
        raise RecordValidationError([FieldError(label, bad, "string is not valid UTF-8 (lone surrogate)", line)])
    try:
        return k.model.model_validate(from_row(data))
    except ValidationError as exc:
        errors = [
            FieldError(label, _field_path(tuple(e["loc"])), e["msg"].removeprefix("Value error, "), line)
            for e in exc.errors()
        ]
        raise RecordValidationError(errors) from None
