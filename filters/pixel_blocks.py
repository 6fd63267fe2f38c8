"""Near-duplicate screenshots without an element tree: which blocks of the screen changed, after aligning a scroll.

A global perceptual hash spreads every change over all its bits, so "another clock" and "another note on the same
template" land at similar distances. Comparing small grayscale thumbnails block by block keeps *where* the change
is: a clock or a flash message changes a few blocks, another record changes its title and body, another theme
changes all of them. A scrolled capture of one page is the same picture shifted, so the thumbnails are first
aligned by the vertical shift that matches their rows best, and only the rows both show are compared.

The thumbnail (``THUMB_W`` x ``THUMB_H`` gray bytes, zlib-compressed: a few KB for a GUI screen) is what travels
instead of the pixels.
"""

from __future__ import annotations

import zlib

import numpy as np
from PIL import Image

# Chosen by measurement on benchmarks/data/neardup (bench_dedupe.py, imported split): of 96x64, 160x100 and 240x150
# thumbnails, 4- and 8-pixel blocks and gray deltas 4, 6 and 10, this one reaches the most recall at precision ≥ 0.95
# (coarser thumbnails blur a changed title or another language into the background).
THUMB_W, THUMB_H = 240, 150
BLOCK = 4  # thumbnail pixels per block side: 60 x 37 blocks
BLOCK_DELTA = 6.0  # mean absolute gray difference over which a block counts as changed
MIN_OVERLAP = 0.4  # least share of the height two aligned captures must share to be compared
MAX_CHANGED = 1 / 60  # most blocks that may change between two captures of one screen (a clock, a short banner)


def thumbnail(img: Image.Image) -> bytes:
    """The screenshot as ``THUMB_W`` x ``THUMB_H`` grayscale bytes (aspect not kept: one device, one aspect)."""
    g = img.convert("L").resize((THUMB_W, THUMB_H), Image.Resampling.BOX)
    return zlib.compress(np.asarray(g, dtype=np.uint8).tobytes(), 6)


def _shift(a: np.ndarray, b: np.ndarray) -> int:
    """Rows b's content sits below a's: the shift whose shared rows differ least (0 wins ties)."""
    best, best_err = 0, float(np.abs(a - b).mean())
    min_rows = int(MIN_OVERLAP * THUMB_H)
    for s in range(-(THUMB_H - min_rows), THUMB_H - min_rows + 1):
        if s == 0:
            continue
        pa, pb = (a[: THUMB_H - s], b[s:]) if s > 0 else (a[-s:], b[: THUMB_H + s])
        err = float(np.abs(pa - pb).mean())
        if err < best_err - 0.5:
            best, best_err = s, err
    return best


def pixels(thumb: bytes) -> np.ndarray:
    """A ``thumbnail``'s gray pixels, ``THUMB_H`` x ``THUMB_W`` (uint8)."""
    return np.frombuffer(zlib.decompress(thumb), np.uint8).reshape(THUMB_H, THUMB_W)


def changed_share(a: bytes, b: bytes, align: bool = True) -> float:
    """Share of the blocks both thumbnails show (after aligning a scroll) whose content changed."""
    x, y = pixels(a).astype(np.float32), pixels(b).astype(np.float32)
    s = _shift(x, y) if align else 0
    pa, pb = (x[: THUMB_H - s], y[s:]) if s >= 0 else (x[-s:], y[: THUMB_H + s])
    rows = (pa.shape[0] // BLOCK) * BLOCK
    d = np.abs(pa[:rows] - pb[:rows]).reshape(rows // BLOCK, BLOCK, THUMB_W // BLOCK, BLOCK).mean(axis=(1, 3))
    return float((d > BLOCK_DELTA).mean()) if d.size else 1.0


def same_picture(a: bytes, b: bytes) -> bool:
    """Whether two thumbnails show one screen: at most ``MAX_CHANGED`` of the blocks changed once aligned."""
    return changed_share(a, b) <= MAX_CHANGED


FIELD_DELTA = 40  # gray difference over which a pixel inside a form field counts as changed (text, not antialiasing)


def region_changed(x: np.ndarray, y: np.ndarray, box_a: tuple[int, int, int, int],
                   box_b: tuple[int, int, int, int]) -> float:
    """Share of the pixels of one region that changed between two thumbnails' ``pixels``, the region at ``box_a`` in
    ``x`` and ``box_b`` in ``y`` (thumbnail pixels, ``x1, y1, x2, y2``): a form field's box on each side of a
    scroll. 0.0 where the boxes differ in size, are empty, or are not wholly in both thumbnails (nothing to
    compare)."""
    (xa, ya, xa2, ya2), (xb, yb, xb2, yb2) = box_a, box_b
    w, h = xa2 - xa, ya2 - ya
    if w <= 0 or h <= 0 or (w, h) != (xb2 - xb, yb2 - yb):
        return 0.0
    if min(xa, ya, xb, yb) < 0 or max(xa2, xb2) > THUMB_W or max(ya2, yb2) > THUMB_H:
        return 0.0
    d = np.abs(x[ya:ya2, xa:xa2].astype(np.int16) - y[yb:yb2, xb:xb2].astype(np.int16))
    return float((d > FIELD_DELTA).mean())
