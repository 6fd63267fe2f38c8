"""Coordinate conventions, in one place.

trajforge stores every point in **screenshot pixels** (origin top-left, x right, y down) *together with* the
image size and a 0–1000 normalized form. Public datasets and model families disagree (AITW: 0–1 floats in
(y, x) order; AndroidControl: pixels; Qwen2-VL / Qwen3-VL / GUI-Libra RL: 0–1000; Qwen2.5-VL: pixels on the
image *after* its processor resized it to multiples of 28). Every conversion goes through this module so a
convention bug has exactly one place to live.

Normalization: ``norm = round(px / size * 1000)`` clamped to [0, 1000]; the inverse is
``px = norm / 1000 * size``. A pixel → norm → pixel round trip is exact to ``size / 2000`` pixels.
"""

from __future__ import annotations

import math

NORM_SCALE = 1000


def to_norm(px: float, size: int) -> int:
    """Pixel coordinate on an axis of ``size`` pixels → integer in [0, 1000]."""
    if size <= 0:
        raise ValueError(f"image size must be positive, got {size}")
    return max(0, min(NORM_SCALE, round(px / size * NORM_SCALE)))


def from_norm(norm: float, size: int) -> float:
    """Normalized 0–1000 coordinate → pixel coordinate on an axis of ``size`` pixels."""
    if size <= 0:
        raise ValueError(f"image size must be positive, got {size}")
    return norm / NORM_SCALE * size


def point_to_norm(x: float, y: float, width: int, height: int) -> tuple[int, int]:
    """Pixel point → (x, y) on the 0–1000 grid."""
    return to_norm(x, width), to_norm(y, height)


def point_from_norm(nx: float, ny: float, width: int, height: int) -> tuple[float, float]:
    """0–1000 point → pixel point."""
    return from_norm(nx, width), from_norm(ny, height)


def bbox_to_norm(bbox: tuple[float, float, float, float], width: int, height: int) -> tuple[int, int, int, int]:
    """Pixel box (x1, y1, x2, y2) → 0–1000 box."""
    x1, y1, x2, y2 = bbox
    return to_norm(x1, width), to_norm(y1, height), to_norm(x2, width), to_norm(y2, height)


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = 56 * 56,
    max_pixels: int = 28 * 28 * 1280,
) -> tuple[int, int]:
    """The (height, width) a Qwen2.5-VL-style processor resizes an image to.

    Both sides become multiples of ``factor`` (28 for Qwen2/2.5-VL: 14 px patches merged 2×2; 32 for
    Qwen3-VL), the pixel count is kept inside [min_pixels, max_pixels], and the aspect ratio is preserved as
    closely as the grid allows. Training targets in the Qwen2.5-VL convention are pixels on *this* image,
    so the exporter and the data loader must agree on these numbers exactly.
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio of {width}x{height} exceeds 200, which the processor rejects")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def rescale_point(
    x: float, y: float, src: tuple[int, int], dst: tuple[int, int]
) -> tuple[float, float]:
    """Map a point between two sizes of the same image; ``src`` and ``dst`` are (width, height)."""
    return x * dst[0] / src[0], y * dst[1] / src[1]


def point_in_bbox(x: float, y: float, bbox: tuple[float, float, float, float], strict: bool = False) -> bool:
    """Whether (x, y) lies inside the box; ``strict`` excludes the border (GUI-Libra's reward uses strict)."""
    x1, y1, x2, y2 = bbox
    if strict:
        return x1 < x < x2 and y1 < y < y2
    return x1 <= x <= x2 and y1 <= y <= y2
