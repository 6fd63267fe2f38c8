"""The unified action space: every type, its requirements, and the pixel / 0–1000 coordinate forms."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from schemas import Action, ActionType

W, H = 1080, 2400

VALID = {
    ActionType.CLICK: {"x": 540, "y": 1200, "image_width": W, "image_height": H},
    ActionType.LONG_PRESS: {"x": 10, "y": 20, "image_width": W, "image_height": H, "duration_ms": 800},
    ActionType.SWIPE: {"x": 540, "y": 2000, "x2": 540, "y2": 400, "image_width": W, "image_height": H},
    ActionType.SCROLL: {"direction": "down"},
    ActionType.TYPE: {"text": "hello"},
    ActionType.KEY: {"key": "Enter"},
    ActionType.NAVIGATE_BACK: {},
    ActionType.NAVIGATE_HOME: {},
    ActionType.OPEN_APP: {"app": "com.example.notes"},
    ActionType.SELECT: {"text": "Dark", "x": 100, "y": 100, "image_width": W, "image_height": H},
    ActionType.WAIT: {"duration_ms": 1000},
    ActionType.ANSWER: {"text": "42"},
    ActionType.DONE: {},
    ActionType.HOVER: {"x": 300, "y": 40, "image_width": W, "image_height": H},
}

MISSING = {
    ActionType.CLICK: ({}, "needs a point"),
    ActionType.LONG_PRESS: ({"x": 1}, "needs a point"),
    ActionType.SWIPE: ({"x": 1, "y": 1, "image_width": W, "image_height": H}, "start and end point"),
    ActionType.SCROLL: ({}, "needs a direction"),
    ActionType.TYPE: ({}, "needs text"),
    ActionType.KEY: ({}, "needs a key"),
    ActionType.OPEN_APP: ({}, "needs an app"),
    ActionType.SELECT: ({}, "needs text"),
    ActionType.ANSWER: ({"text": ""}, "needs text"),
    ActionType.HOVER: ({}, "needs a point"),
}


def test_every_action_type_has_a_valid_example():
    assert set(VALID) == set(ActionType)


@pytest.mark.parametrize("atype", list(ActionType))
def test_every_action_type_validates_and_round_trips_through_json(atype):
    a = Action(type=atype, **VALID[atype])
    assert a.type == atype.value
    again = Action.model_validate_json(a.model_dump_json())
    assert again == a


@pytest.mark.parametrize("atype", list(MISSING))
def test_action_requirements_are_enforced(atype):
    fields, message = MISSING[atype]
    with pytest.raises(ValidationError, match=message):
        Action(type=atype, **fields)


def test_normalized_point_is_derived_from_pixels():
    a = Action(type="click", x=540, y=1200, image_width=W, image_height=H)
    assert a.point_norm == (500, 500)
    b = Action(type="click", x=0, y=H, image_width=W, image_height=H)
    assert b.point_norm == (0, 1000)


def test_swipe_end_point_is_normalized_too():
    a = Action(type="swipe", **VALID[ActionType.SWIPE])
    assert (a.x2_norm, a.y2_norm) == (500, round(400 / H * 1000))


def test_inconsistent_normalized_point_is_rejected():
    with pytest.raises(ValidationError, match="disagrees with pixels"):
        Action(type="click", x=540, y=1200, image_width=W, image_height=H, x_norm=100, y_norm=500)


def test_point_outside_image_is_rejected():
    with pytest.raises(ValidationError, match="outside the 1080x2400 image"):
        Action(type="click", x=1081, y=10, image_width=W, image_height=H)


def test_point_without_image_size_is_rejected():
    with pytest.raises(ValidationError, match="image_width and image_height"):
        Action(type="click", x=10, y=10)


def test_aliases_map_to_canonical_types():
    assert Action(type="tap", x=1, y=1, image_width=W, image_height=H).type == "click"
    assert Action(type="input_text", text="a").type == "type"
    assert Action(type="Back").type == "navigate_back"


def test_unknown_action_type_is_rejected():
    with pytest.raises(ValidationError, match="type"):
        Action(type="teleport")


def test_bad_direction_is_rejected():
    with pytest.raises(ValidationError, match="direction must be one of"):
        Action(type="scroll", direction="sideways")


def test_platform_validity():
    assert not Action(type="navigate_home").valid_on("web")
    assert Action(type="navigate_home").valid_on("android")
    assert Action(type="click", x=1, y=1, image_width=W, image_height=H).valid_on("web")


def test_point_in_target_box():
    a = Action(type="click", x=50, y=50, image_width=W, image_height=H,
               target_bbox={"x1": 0, "y1": 0, "x2": 100, "y2": 100})
    assert a.point_in_target() is True
    b = Action.model_validate({**a.model_dump(), "target_bbox": {"x1": 60, "y1": 0, "x2": 100, "y2": 100}})
    assert b.point_in_target() is False
    assert Action(type="navigate_back").point_in_target() is None
