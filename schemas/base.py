"""The base every schema entity derives from, and small helpers for identifiers."""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class Record(BaseModel):
    """Base model: unknown fields are errors (a misspelt key must not vanish silently), enums dump as strings."""

    model_config = ConfigDict(extra="forbid", use_enum_values=True, validate_assignment=True)


def stable_id(*parts: object, length: int = 16) -> str:
    """Deterministic short id from its parts, so reruns of the same crawl or synthesis produce the same ids."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return h[:length]


def check_sha256(value: str | None) -> str | None:
    """Validate a lowercase hex sha256 (or None); blobs are referenced only by such digests."""
    if value is not None and not SHA256_RE.match(value):
        raise ValueError(f"not a lowercase hex sha256: {value!r}")
    return value
