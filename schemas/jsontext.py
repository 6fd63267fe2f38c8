"""Decoding untrusted JSON text: named errors instead of exceptions, bounded nesting, valid Unicode, streaming arrays.

Python's ``json`` accepts things no trajforge record can hold and fails in ways a reader must not pass on:
a line nested 100,000 levels deep raises ``RecursionError`` (not ``JSONDecodeError``), an integer literal
of 5,000 digits raises a plain ``ValueError``, ``\\ud800`` escapes decode to lone surrogates that cannot be
written back as UTF-8, and ``json.loads`` of a truncated array loses every item in it. Every reader of
records and source rows goes through this module, so each of those becomes one ``JsonTextError`` naming what
is wrong, and the caller rejects that one record and goes on.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

MAX_DEPTH = 64  # a trajectory is ~7 levels deep, public source rows ~10; anything deeper is not a record
MAX_ITEM_CHARS = 256 * 1024 * 1024  # one array item larger than this is refused, so memory stays bounded
CHUNK = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")


class JsonTextError(ValueError):
    """Text that is not one acceptable JSON value; the message says what and where."""


def decode_utf8(raw: bytes) -> str:
    """Bytes → text, a leading byte-order mark dropped; ``JsonTextError`` naming the first bad byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonTextError(f"invalid UTF-8 at byte {exc.start}") from None
    return text.removeprefix("\ufeff")


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, check: bool = True) -> Any:
    """One JSON value, checked by ``tree_problem`` (unless ``check`` is False: the caller checks it later and
    names the field); any failure is a ``JsonTextError``."""
    if isinstance(text, bytes | bytearray):
        text = decode_utf8(bytes(text))
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"invalid JSON: {_where(text, exc)}") from None
    except RecursionError:
        raise JsonTextError(f"invalid JSON: nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        if "int_max_str_digits" in str(exc) or "integer string conversion" in str(exc):
            # Python's own message advises raising an interpreter limit: not something a data user can do.
            raise JsonTextError(f"invalid JSON: an integer literal longer than {sys.get_int_max_str_digits()} "
                                "digits") from None
        raise JsonTextError(f"invalid JSON: {exc}") from None
    problem = tree_problem(value, max_depth) if check else None
    if problem is not None:
        raise JsonTextError(f"{problem[0]}: {problem[1]}")
    return value


def _where(text: str, exc: json.JSONDecodeError) -> str:
    """What went wrong and where, in words a user can act on: a text that stops in the middle of a value is
    "cut off after N characters" (``json`` would put a line cut off before its newline "at column 1" of the
    next line), anything else names its column (and line, past the first)."""
    end = len(text.rstrip())
    if exc.pos >= end or exc.msg.startswith("Unterminated"):
        return f"cut off after {end} characters ({exc.msg})"
    return f"{exc.msg} at column {exc.colno}" + (f" of line {exc.lineno}" if exc.lineno > 1 else "")


def tree_problem(value: Any, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """``(field path, problem)`` of the first string that is not valid Unicode (a lone surrogate from a
    ``\\ud800`` escape) or the first container nested deeper than ``max_depth``; None when the value is fine.

    Iterative, so a value nested as deep as the parser allowed cannot overflow the stack here either.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, path, depth = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return path or "<record>", "string is not valid UTF-8 (lone surrogate)"
        elif isinstance(v, dict | list):
            if depth >= max_depth:
                return path or "<record>", f"nested deeper than {max_depth} levels"
            items = v.items() if isinstance(v, dict) else enumerate(v)
            children = []
            for k, child in items:
                if isinstance(k, str):
                    try:
                        k.encode("utf-8")
                    except UnicodeEncodeError:
                        return path or "<record>", "a key is not valid UTF-8 (lone surrogate)"
                children.append((child, f"{path}.{k}" if path and isinstance(v, dict) else
                                 (str(k) if isinstance(v, dict) else f"{path}[{k}]"), depth + 1))
            stack.extend(reversed(children))
    return None


def printable_json(value: Any) -> str:
    """JSON text that always encodes as UTF-8 (lone surrogates escaped), for payloads and messages."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def valid_text(text: str) -> str:
    """``text`` with lone surrogates replaced by their ``\\udXXX`` escape, so it can be written as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass
class ArrayItem:
    """One item of a streamed JSON array: ``value`` when it decoded, else ``error``; ``raw`` is its text."""

    index: int  # 1-based
    value: Any = None
    error: str | None = None
    raw: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


class _Buffer:
    """Decoded text of a binary stream, refilled on demand; text before ``pos`` is dropped when it piles up."""

    def __init__(self, f: IO[bytes]):
        self.f = f
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self.text = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # characters dropped from the front (for offsets in messages)
        self.bad_utf8 = ""

    def fill(self, at_least: int = CHUNK) -> bool:
        """Append at least ``at_least`` more bytes' text; False at the end of the stream (or at bad UTF-8,
        which ends the readable text: ``bad_utf8`` then says where)."""
        if self.eof:
            return False
        if self.pos > len(self.text) // 2:
            self.consumed += self.pos
            self.text, self.pos = self.text[self.pos:], 0
        raw = self.f.read(max(CHUNK, at_least))
        try:
            self.text += self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            self.text += raw[:exc.start].decode("utf-8", "ignore") if exc.start else ""
            self.bad_utf8 = f"invalid UTF-8 ({exc.reason}) near offset {self.consumed + len(self.text)}"
            self.eof = True
            return False
        if not raw:
            self.eof = True
            return False
        return True

    def skip_ws(self) -> str:
        """The next non-blank character ("" at the end of the stream)."""
        more = True
        while True:
            m = _WS.match(self.text, self.pos)
            self.pos = m.end() if m else self.pos
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not more:
                return ""
            more = self.fill()

    @property
    def offset(self) -> int:
        return self.consumed + self.pos


def iter_array(f: IO[bytes], max_depth: int = MAX_DEPTH, max_item_chars: int = MAX_ITEM_CHARS) -> Iterator[ArrayItem]:
    """The items of a top-level JSON array, decoded one at a time from a bounded buffer.

    Items before a syntax error are all yielded; the error becomes one last item that says where the array
    stopped being readable (nothing after it can be trusted: JSON has no resynchronisation point). An array
    cut off inside its 5th item therefore yields four items and one error, never zero items.
    """
    buf = _Buffer(f)
    decoder = json.JSONDecoder()
    n = 0
    first = buf.skip_ws()
    if first == "\ufeff":
        buf.pos += 1
        first = buf.skip_ws()
    if first != "[":
        yield ArrayItem(1, error="not a JSON array (expected '[')", raw=buf.text[buf.pos:buf.pos + 200])
        return
    buf.pos += 1
    expect_value = True
    while True:
        c = buf.skip_ws()
        if c == "":
            why = buf.bad_utf8 or "no closing ']'"
            yield ArrayItem(n + 1, error=f"the array is cut off after {n} item(s) ({why})")
            return
        if c == "]" and (n == 0 or not expect_value):
            if _trailing(buf):
                yield ArrayItem(n + 1, error=f"unexpected text after the closing ']' (offset {buf.offset})")
            return
        if not expect_value:
            if c != ",":
                yield ArrayItem(n + 1, error=f"expected ',' or ']' after item {n} at offset {buf.offset}",
                                raw=buf.text[buf.pos:buf.pos + 200])
                return
            buf.pos += 1
            expect_value = True
            continue
        start = buf.pos
        while True:
            try:
                value, end = decoder.raw_decode(buf.text, start)
            except json.JSONDecodeError as exc:
                if not buf.eof and len(buf.text) - start <= max_item_chars:
                    buf.pos = start  # the buffer may drop what lies before the item, never the item
                    buf.fill(len(buf.text) - start)  # grow geometrically: big items stay linear
                    start = buf.pos
                    continue
                if buf.bad_utf8:
                    problem = buf.bad_utf8
                elif len(buf.text) - start > max_item_chars:
                    problem = f"larger than {max_item_chars} characters or malformed"
                else:
                    cut = exc.pos >= len(buf.text) - 1 or exc.msg.startswith("Unterminated")
                    where = "cut off" if cut else "invalid"
                    problem = f"{where}: {exc.msg} (offset {buf.consumed + exc.pos})"
                yield ArrayItem(n + 1, error=f"item {n + 1} is {problem}; the rest of the array is unreadable",
                                raw=buf.text[start:start + 2000])
                return
            except RecursionError:
                yield ArrayItem(n + 1, error=f"item {n + 1} is nested deeper than {max_depth} levels; the rest "
                                             "of the array is unreadable", raw=buf.text[start:start + 2000])
                return
            except ValueError as exc:
                yield ArrayItem(n + 1, error=f"item {n + 1}: {exc}; the rest of the array is unreadable",
                                raw=buf.text[start:start + 2000])
                return
            if end == len(buf.text) and not buf.eof:  # a number may continue in the next chunk
                buf.pos = start
                buf.fill()
                start = buf.pos
                continue
            break
        n += 1
        raw = buf.text[start:end]
        buf.pos = end
        expect_value = False
        bad = tree_problem(value, max_depth)
        if bad is not None:
            yield ArrayItem(n, error=f"{bad[0]}: {bad[1]}", raw=valid_text(raw[:100_000]))
        else:
            yield ArrayItem(n, value=value, raw=raw)


def _trailing(buf: _Buffer) -> bool:
    """Whether anything but whitespace follows the closing bracket at ``buf.pos``."""
    buf.pos += 1
    return buf.skip_ws() != ""
