"""Coordinate conventions: 0–1000 normalization and Qwen2.5-VL's smart_resize, checked by hand."""

from __future__ import annotations

import math

import pytest

from schemas.geometry import (
    bbox_to_norm,
    from_norm,
    point_from_norm,
    point_in_bbox,
    point_to_norm,
    rescale_point,
    smart_resize,
    to_norm,
)


def test_norm_endpoints_and_midpoint():
    assert to_norm(0, 1280) == 0
    assert to_norm(1280, 1280) == 1000
    assert to_norm(640, 1280) == 500
    assert point_to_norm(320, 180, 1280, 720) == (250, 250)


def test_norm_clamps_out_of_range():
    assert to_norm(-5, 100) == 0
    assert to_norm(105, 100) == 1000


def test_norm_round_trip_error_is_bounded_by_half_a_grid_cell():
    for size in (720, 1080, 1280, 2400):
        for px in range(0, size + 1, 7):
            back = from_norm(to_norm(px, size), size)
            assert abs(back - px) <= size / 2000 + 1e-9


def test_point_from_norm_inverts():
    assert point_from_norm(500, 250, 1000, 2000) == (500.0, 500.0)


def test_bbox_to_norm():
    assert bbox_to_norm((0, 0, 640, 360), 1280, 720) == (0, 0, 500, 500)


def test_zero_size_is_an_error():
    with pytest.raises(ValueError):
        to_norm(1, 0)


@pytest.mark.parametrize(
    ("h", "w"),
    [(720, 1280), (2400, 1080), (844, 390), (100, 100), (20, 4000)],
)
def test_smart_resize_properties(h, w):
    max_pixels = 28 * 28 * 1280
    rh, rw = smart_resize(h, w, max_pixels=max_pixels)
    assert rh % 28 == 0 and rw % 28 == 0
    assert 56 * 56 <= rh * rw <= max_pixels
    assert abs(math.log((rw / rh) / (w / h))) < 0.35


def test_smart_resize_hand_computed():
    # 1280x720 = 921,600 px ≤ 1,003,520: sides round to the nearest multiple of 28.
    assert smart_resize(720, 1280) == (728, 1288)
    # 1080x2400 = 2,592,000 px > max: β = sqrt(2592000/1003520) = 1.60714;
    # floor(2400/β/28)*28 = floor(53.33)*28 = 1484 and floor(1080/β/28)*28 = floor(24.0)*28 = 672.
    assert smart_resize(2400, 1080) == (1484, 672)


def test_smart_resize_rejects_extreme_aspect():
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 3000)


def test_rescale_point_and_bbox_membership():
    assert rescale_point(640, 360, (1280, 720), (1288, 728)) == pytest.approx((644.0, 364.0))
    assert point_in_bbox(5, 5, (0, 0, 10, 10))
    assert point_in_bbox(0, 5, (0, 0, 10, 10))
    assert not point_in_bbox(0, 5, (0, 0, 10, 10), strict=True)
