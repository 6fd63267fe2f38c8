"""The record kinds trajforge exchanges, and parsing of untrusted dicts into them with named errors."""

from __future__ import annotations

import json
import re
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
from schemas.base import Record, field_path
from schemas.errors import FieldError, RecordValidationError
from schemas.jsontext import decode_utf8, tree_problem, valid_text
from schemas.observation import Observation
from schemas.reject import Reject
from schemas.sample import Sample
from schemas.trajectory import Step, Trajectory
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


MAX_LABEL = 200
VERSION_RE = re.compile(r"^\d{1,6}\.\d{1,6}$")


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


def record_label(data: Any, kind: Kind | None, line: int | None) -> str:
    """How an error names a record: its id when it has a usable one, else its line number."""
    if isinstance(data, dict):
        rid = data.get(kind.id_field if kind else "id")
        if isinstance(rid, str) and rid:
            # An id is data: it may be huge or hold a lone surrogate; the label must still print and store.
            return valid_text(rid if len(rid) <= MAX_LABEL else rid[:MAX_LABEL] + "…")
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
    if not isinstance(version, str) or not VERSION_RE.match(version) or major(version) != major(SCHEMA_VERSION):
        shown = version if isinstance(version, str | int | float | None) else type(version).__name__
        raise RecordValidationError(
            [FieldError(label, "schema_version", f"unsupported schema version {str(shown)[:40]!r} (this build "
                        f"reads {major(SCHEMA_VERSION)}.x)", line)]
        )
    problem = tree_problem(data)
    if problem is not None:
        raise RecordValidationError([FieldError(label, problem[0], problem[1], line)])
    try:
        return k.model.model_validate(from_row(data))
    except ValidationError as exc:
        errors = [
            FieldError(label, field_path(tuple(e["loc"])), e["msg"].removeprefix("Value error, "), line)
            for e in exc.errors()
        ]
        raise RecordValidationError(errors) from None


def payload_samples(payload: str) -> list[Sample]:
    """The step samples a reject row's payload holds: the sample itself (a step refused on its own), every step
    of a trajectory (refused whole, the curation default), or none (unparsable input, other kinds)."""
    import json

    from schemas.sample import samples_from_trajectory

    try:
        data = json.loads(payload)
        record = parse_record(data)
        if isinstance(record, Sample):
            return [record]
        if isinstance(record, Trajectory):
            return list(samples_from_trajectory(record))
    except (ValueError, TypeError, RecordValidationError):
        pass
    return []


STEPWISE_BYTES = 1 << 20  # trajectories longer than this (as JSON text) are validated one step at a time
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _trajectory_stepwise(text: bytes | str) -> Trajectory | None:
    """A large trajectory validated step by step while its JSON is decoded: each step's dicts become a ``Step``
    as soon as the decoder closes the step, and are dropped, so only the raw text, the models built so far and
    one step's dicts are ever held. Why: ``model_validate_json`` first builds the whole document as a parse
    tree and then the models, both at once — for a 10,000-step trajectory (~35 MB of JSON) 230 MB, of which the
    models are 100; this way the peak is ~150 MB. The result is what the dict path (``parse_record``) gives —
    the same Python-mode validation, applied to the steps first — and anything unusual (an escaped surrogate,
    which the dict path must check, a step-like object anywhere but in ``steps``, any error) returns None, so
    the caller takes the dict path, which names every problem."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _SURROGATE_ESCAPE.search(raw):
        return None
    made: list[Step] = []

    def step_or_dict(d: dict[str, Any]) -> Any:
        if "observation" in d and "action" in d:
            made.append(Step.model_validate(d))
            return made[-1]
        return d

    try:
        data = json.loads(decode_utf8(raw), object_hook=step_or_dict)
        steps = data.get("steps") if isinstance(data, dict) else None
        if not isinstance(steps, list) or len(steps) != len(made) or any(
                a is not b for a, b in zip(steps, made, strict=True)):
            return None
        del made[:]
        version = data.get("schema_version", SCHEMA_VERSION)
        if not isinstance(version, str) or not VERSION_RE.match(version) or major(version) != major(SCHEMA_VERSION):
            return None
        return Trajectory.model_validate(from_row(data))
    except (ValidationError, ValueError, TypeError, RecursionError):
        return None


def parse_json_record(text: bytes | str, kind: str) -> Record | None:
    """Fast path for a record of a known kind given as JSON text: validated straight from the text, with no
    intermediate Python dict of the whole record (a trajectory over ``STEPWISE_BYTES`` is validated step by
    step, ``_trajectory_stepwise``), which bounds the memory a large record needs while it is read. None when
    the text is not a valid record of a supported version — the caller then takes the dict path
    (``parse_record``), which names every problem. A valid model has no room for deep nesting or invalid
    strings, so the checks of that path hold here too.
    """
    k = KINDS.get(kind)
    if k is None:
        return None
    if kind == "trajectory" and len(text) > STEPWISE_BYTES:
        return _trajectory_stepwise(text)
    try:
        rec = k.model.model_validate_json(text)
    except (ValidationError, ValueError, TypeError):
        return None
    version = getattr(rec, "schema_version", SCHEMA_VERSION)
    if not VERSION_RE.match(version) or major(version) != major(SCHEMA_VERSION):
        return None
    return rec
