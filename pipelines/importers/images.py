"""Screenshots from source records into the blob store, with their true size read from the image itself.

Sources reference screenshots as file paths, base64 text, raw bytes or Hugging Face image structs
(``{"bytes": ..., "path": ...}``). The declared size in a record is checked against the decoded image,
because every coordinate conversion downstream trusts that size.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from pipelines.importers.base import IMAGE_MISSING, IMAGE_SIZE_MISMATCH, IMAGE_UNREADABLE, Bad, ImportContext


@dataclass(frozen=True)
class StoredImage:
    sha256: str
    width: int
    height: int


def _resolve(ref: str, ctx: ImportContext) -> Path | None:
    p = Path(ref)
    if p.is_absolute():
        return p if p.is_file() else None
    for base in ctx.image_dirs:
        candidate = base / p
        if candidate.is_file():
            return candidate
    return None


def image_bytes(ref: Any, ctx: ImportContext, where: str) -> bytes:
    """The bytes a source's image reference points at, or ``Bad(image_missing)``."""
    if isinstance(ref, dict):  # Hugging Face datasets Image feature
        if ref.get("bytes"):
            return image_bytes(ref["bytes"], ctx, where)
        if ref.get("path"):
            return image_bytes(ref["path"], ctx, where)
        raise Bad(IMAGE_MISSING, f"{where}: image struct has neither bytes nor path")
    if isinstance(ref, bytes | bytearray):
        return bytes(ref)
    if isinstance(ref, list) and ref:  # multi-image samples (AGUVIS): earlier screens, then the current one
        return image_bytes(ref[-1], ctx, where)
    if not isinstance(ref, str) or not ref:
        raise Bad(IMAGE_MISSING, f"{where}: no image reference")
    if ref.startswith("data:image"):
        ref = ref.split(",", 1)[-1]
    elif len(ref) < 1024:
        path = _resolve(ref, ctx)
        if path is not None:
            return path.read_bytes()
        if "/" in ref or "." in ref[-5:]:
            raise Bad(IMAGE_MISSING, f"{where}: image file {ref!r} not found")
    try:
        return base64.b64decode(ref, validate=True)
    except (binascii.Error, ValueError):
        raise Bad(IMAGE_MISSING, f"{where}: image {ref[:60]!r} is neither a file nor base64") from None


ENCODED_MAGIC = (b"\x89PNG", b"\xff\xd8", b"GIF8", b"RIFF", b"BM")
RAW_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def is_encoded(data: bytes) -> bool:
    """Whether bytes are an encoded image file (PNG, JPEG, GIF, WebP, BMP) rather than raw pixels."""
    return data.startswith(ENCODED_MAGIC)


def store_raw_pixels(data: bytes, width: Any, height: Any, channels: Any, ctx: ImportContext,
                     where: str) -> StoredImage:
    """A raw height × width × channels uint8 buffer (AITW's ``image/encoded``) stored as a PNG."""
    try:
        w, h, c = int(width), int(height), int(channels or 3)
    except (TypeError, ValueError):
        raise Bad(IMAGE_UNREADABLE, f"{where}: a raw pixel buffer needs integer width, height and channels, got "
                                    f"{width!r}x{height!r}x{channels!r}") from None
    if c not in RAW_MODES or w <= 0 or h <= 0:
        raise Bad(IMAGE_UNREADABLE, f"{where}: unsupported raw image shape {h}x{w}x{c}")
    if len(data) != w * h * c:
        raise Bad(IMAGE_SIZE_MISMATCH, f"{where}: raw buffer has {len(data)} bytes but {h}x{w}x{c} needs "
                                       f"{w * h * c}")
    img = Image.frombytes(RAW_MODES[c], (w, h), data)
    buf = io.BytesIO()
    img.convert("RGB" if c == 4 else RAW_MODES[c]).save(buf, format="PNG", compress_level=1)
    return StoredImage(ctx.blobs.put(buf.getvalue()), w, h)


def store_image(ref: Any, ctx: ImportContext, where: str, declared: tuple[Any, Any] | None = None) -> StoredImage:
    """Decode, size-check and store one screenshot; ``declared`` is the (width, height) the record claims."""
    data = image_bytes(ref, ctx, where)
    try:
        with Image.open(io.BytesIO(data)) as im:
            width, height = im.size
            im.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise Bad(IMAGE_UNREADABLE, f"{where}: cannot decode image: {exc}") from None
    if declared is not None and None not in declared:
        try:
            dw, dh = int(declared[0]), int(declared[1])
        except (TypeError, ValueError):
            raise Bad(IMAGE_SIZE_MISMATCH, f"{where}: declared size {declared!r} is not numeric") from None
        if (dw, dh) != (width, height):
            raise Bad(IMAGE_SIZE_MISMATCH, f"{where}: declared {dw}x{dh} but the image is {width}x{height}")
    return StoredImage(ctx.blobs.put(data), width, height)
