"""The base every schema entity derives from, the strict number types, and small helpers for identifiers.

Numbers are strict because untrusted files are full of near-misses that lax parsing would turn into data:
``"700"`` silently became 700.0, ``true`` became 1, and an integer that does not fit the Arrow column only
failed when a shard was written, taking the whole run with it. So every integer field is bounded by its Arrow
type (``Int32`` / ``Int64``), no numeric field accepts text or booleans, floats must be finite (``NaN`` and
``inf`` are refused at the schema, where the error names the record and field, instead of reaching
``int(nan)`` in a filter), and booleans must be JSON booleans.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _number_not_text(value: Any) -> Any:
    """Refuse text and booleans where a number is expected (pydantic's lax mode would convert them)."""
    if isinstance(value, str | bytes | bytearray):
        raise ValueError(f"Input should be a number, not text ({str(value)[:40]!r})")
    if isinstance(value, bool):
        raise ValueError(f"Input should be a number, not a boolean ({value})")
    return value


# Integers the Arrow schema stores as int32 / int64: a value outside is an error here, not in the shard writer.
Int32 = Annotated[int, BeforeValidator(_number_not_text), Field(ge=INT32_MIN, le=INT32_MAX)]
Int64 = Annotated[int, BeforeValidator(_number_not_text), Field(ge=INT64_MIN, le=INT64_MAX)]
# A finite float64 (``Record`` refuses NaN / inf for every float field).
Float = Annotated[float, BeforeValidator(_number_not_text)]
# A JSON boolean: ``"false"``, ``0`` or ``"no"`` are errors, not quietly read as booleans.
Bool = Annotated[bool, Strict()]


def field_path(loc: tuple[Any, ...], root: str = "<record>") -> str:
    """Pydantic's error location as a readable path: ('steps', 2, 'action', 'x') → 'steps[2].action.x' (``root``
    for an error about the whole document); validator and union-tag parts are left out."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or root


def validation_problems(exc: ValidationError, root: str = "<record>") -> list[str]:
    """One ``path: message`` line per problem of ``exc``: how records, configs and ledgers name a bad field."""
    return [f"{field_path(tuple(e['loc']), root)}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()]


class ConfigModel(BaseModel):
    """Base of every YAML config section (crawl, nightly): an unknown key is an error naming it, never ignored —
    a misspelt option silently falling back to its default is the worst kind of config bug."""

    model_config = ConfigDict(extra="forbid")


class _SharedFieldsSet(set[str]):
    """A ``__pydantic_fields_set__`` shared by every record of one class that set the same fields."""


_FIELDS_SETS: dict[tuple[type, frozenset[str]], _SharedFieldsSet] = {}


class Record(BaseModel):
    """Base model: unknown fields are errors (a misspelt key must not vanish silently), enums dump as strings,
    and no float is NaN or infinite.

    **Memory.** Pydantic gives every instance its own set of the field names it was given
    (``model_fields_set``): 200–2,300 bytes, as much as the instance's values. A 10,000-step trajectory is
    ~210,000 records (elements, boxes, actions…), and those sets were half its 200 MB in memory. Records that
    set the same fields share one set; assigning a field (which adds to that set) first gives the record its
    own copy, so ``model_fields_set`` means exactly what it did.
    """

    model_config = ConfigDict(extra="forbid", use_enum_values=True, validate_assignment=True, allow_inf_nan=False)

    def model_post_init(self, context: Any, /) -> None:
        fields = self.__pydantic_fields_set__
        key = (type(self), frozenset(fields))
        shared = _FIELDS_SETS.get(key)
        if shared is None:
            shared = _FIELDS_SETS.setdefault(key, _SharedFieldsSet(fields))
        object.__setattr__(self, "__pydantic_fields_set__", shared)

    def __setattr__(self, name: str, value: Any) -> None:
        fields = self.__pydantic_fields_set__
        if type(fields) is _SharedFieldsSet:
            object.__setattr__(self, "__pydantic_fields_set__", set(fields))
        super().__setattr__(name, value)


def stable_id(*parts: object, length: int = 16) -> str:
    """Deterministic short id from its parts, so reruns of the same crawl or synthesis produce the same ids."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return h[:length]


def check_sha256(value: str | None) -> str | None:
    """Validate a lowercase hex sha256 (or None); blobs are referenced only by such digests."""
    if value is not None and not SHA256_RE.match(value):
        raise ValueError(f"not a lowercase hex sha256: {value!r}")
    return value


# Characters that render as nothing: format controls (zero-width space / joiners, BOM, word joiner, bidi
# marks), other controls, and the Hangul / Braille fillers that fonts draw blank.
_INVISIBLE = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}


def is_blank(text: str | None) -> bool:
    """Whether ``text`` shows nothing to a reader: empty, whitespace, or only invisible characters.

    ``str.strip`` alone keeps "\\u200b\\u200b" (two zero-width spaces), which an annotator sees as empty and a
    model learns as a real instruction.
    """
    if not text:
        return True
    for ch in text:
        if ch.isspace() or ch in _INVISIBLE:
            continue
        if unicodedata.category(ch) in ("Cf", "Cc", "Zs", "Zl", "Zp", "Mn", "Me"):
            continue
        return False
    return True
