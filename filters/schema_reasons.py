"""Countable reason codes for schema errors.

``schemas`` reports each problem as a ``FieldError`` with a human message; the rejects table and the funnel
need a small, stable vocabulary instead ("missing_field", "coords_outside_image", ...), so a data engineer
can see at a glance *which kind* of breakage a source produces. The first error of a record decides.
"""

from __future__ import annotations

import re

from schemas.errors import FieldError

# (reason, field regex or None, message regex); first match wins, order matters.
RULES: list[tuple[str, str | None, str]] = [
    ("file_unreadable", r"^<file>$", r"cannot be read"),
    ("nested_too_deep", None, r"nested deeper than"),
    ("invalid_utf8", None, r"UTF-8"),
    ("invalid_json", None, r"^invalid JSON|unreadable JSON"),
    ("not_an_object", None, r"expected a JSON object"),
    ("unknown_kind", None, r"cannot tell the record kind"),
    ("unsupported_schema_version", r"schema_version", r"unsupported schema version"),
    ("unknown_action_type", r"action\.type$|actions\[\d+\]\.type$", r"^Input should be"),
    ("non_finite_number", None, r"\b(nan|inf)\b|finite number"),
    ("coords_outside_image", None, r"lies outside the"),
    ("norm_disagrees_with_pixels", None, r"normalized point"),
    ("missing_field", None, r"^Field required"),
    ("unknown_field", None, r"^Extra inputs are not permitted"),
    ("invalid_sha256", None, r"sha256"),
    ("blank_text", None, r"is blank|at least 1 character"),
    ("empty_list", None, r"at least 1 item"),
    ("too_many_steps", r"^steps$", r"at most \d+ items"),
    ("step_order", None, r"step indices"),
    ("bbox_out_of_order", None, r"box corners out of order"),
    ("value_out_of_range", None, r"greater than|less than"),
    ("inconsistent_action", None, r"needs|both coordinates|direction must be"),
    ("wrong_type", None, r"^Input should be|valid (string|integer|number|dictionary|list)"),
    ("validator_error", None, r"cannot be validated"),
]
_COMPILED = [(reason, re.compile(f) if f else None, re.compile(m)) for reason, f, m in RULES]


def schema_reason(error: FieldError) -> str:
    """The reason code for one schema error (``schema_invalid`` when no rule matches)."""
    for reason, field_re, msg_re in _COMPILED:
        if (field_re is None or field_re.search(error.field)) and msg_re.search(error.message):
            return reason
    return "schema_invalid"
