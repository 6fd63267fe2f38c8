"""The unified action space: every type, its requirements, and the pixel / 0–1000 coordinate forms."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

import factories as f
from schemas import Action, ActionType, BlobStore
from schemas.arrow import ACTION, TRAJECTORY_SCHEMA, to_row
from schemas.recordio import iter_records, write_parquet

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
    ActionType.DRAG: {"x": 100, "y": 200, "x2": 600, "y2": 220, "image_width": W, "image_height": H},
}

MISSING = {
    ActionType.CLICK: ({}, "needs a point"),
    ActionType.LONG_PRESS: ({"x": 1}, "needs a point"),
    ActionType.SWIPE: ({"x": 1, "y": 1, "image_width": W, "image_height": H}, "start and end point"),
    ActionType.DRAG: ({"x": 1, "y": 1, "direction": "up", "image_width": W, "image_height": H}, "start and an end"),
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


# --- desktop mouse actions (schema 1.1) -------------------------------------------------------------------------

PT = {"x": 540, "y": 1200, "image_width": W, "image_height": H}


@pytest.mark.parametrize(("name", "button", "clicks", "full"), [
    ("right_click", "right", None, "right_click"),
    ("RightClick", "right", None, "right_click"),
    ("middle_click", "middle", None, "middle_click"),
    ("double_click", None, 2, "double_click"),
    ("doubleclick", None, 2, "double_click"),
    ("triple_click", None, 3, "triple_click"),
    ("left_double", None, 2, "double_click"),  # UI-TARS
    ("right_single", "right", None, "right_click"),  # UI-TARS
    ("left_click", None, None, "click"),  # Qwen / Claude computer use
])
def test_click_variant_names_become_click_with_button_and_clicks(name, button, clicks, full):
    a = Action(type=name, **PT)
    assert (a.type, a.button, a.clicks, a.full_type) == ("click", button, clicks, full)
    assert Action.model_validate_json(a.model_dump_json()) == a


def test_left_button_and_one_click_are_the_plain_click():
    plain = Action(type="click", **PT)
    assert Action(type="click", button="left", clicks=1, **PT) == plain
    # A 1.0 click serializes exactly as 1.0 did (no new keys), so content hashes and old readers are unaffected.
    assert list(plain.model_dump()) == ["type", "x", "y", "x2", "y2", "image_width", "image_height", "x_norm",
                                        "y_norm", "x2_norm", "y2_norm", "direction", "text", "key", "app",
                                        "duration_ms", "target_element_id", "target_bbox"]
    both = Action(type="click", button="right", clicks=2, **PT)
    assert (both.full_type, both.describe()) == ("double_right_click", "double_right_click (540,1200)")
    assert both.model_dump()["button"] == "right" and both != plain


@pytest.mark.parametrize(("fields", "message"), [
    ({"type": "long_press", "button": "right", **PT}, "only to click actions"),
    ({"type": "hover", "clicks": 2, **PT}, "only to click actions"),
    ({"type": "click", "clicks": 4, **PT}, "less than or equal to 3"),
    ({"type": "click", "clicks": 0, **PT}, "greater than or equal to 1"),
    ({"type": "click", "button": "side", **PT}, "button"),
    ({"type": "right_click", "button": "middle", **PT}, "means button 'right'"),
    ({"type": "double_click", "clicks": 3, **PT}, "means 2 clicks"),
    ({"type": "left_click", "button": "right", **PT}, "means button 'left'"),
    ({"type": "mouse_move"}, "needs a point"),
])
def test_mouse_field_errors_name_the_problem(fields, message):
    with pytest.raises(ValidationError, match=message):
        Action.model_validate(fields)


def test_hover_and_extra_buttons_only_where_there_is_a_pointer():
    hover = Action(type="mouse_move", **PT)
    assert (hover.type, hover.point_norm) == ("hover", (500, 500))
    assert hover.valid_on("desktop") and hover.valid_on("web") and not hover.valid_on("android")
    right = Action(type="right_click", **PT)
    assert right.valid_on("desktop") and not right.valid_on("ios")
    assert Action(type="double_click", **PT).valid_on("android")  # a double tap exists on touch screens


def _schema_without_mouse_fields(schema):
    """The 1.0 layout of ``schema``: the ACTION struct without the fields 1.1 appended."""

    def strip(t):
        if t.equals(ACTION):
            return pa.struct([f for f in t if f.name not in ("button", "clicks")])
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, strip(f.type), f.nullable) for f in t])
        if pa.types.is_list(t):
            return pa.list_(strip(t.value_type))
        return t

    meta = {**schema.metadata, b"trajforge.schema_version": b"1.0"}
    return pa.schema([pa.field(f.name, strip(f.type), f.nullable) for f in schema], metadata=meta)


def test_a_1_0_shard_without_the_new_columns_still_reads(tmp_path):
    traj = f.trajectory(BlobStore(tmp_path / "blobs"), n_steps=2)
    old_schema = _schema_without_mouse_fields(TRAJECTORY_SCHEMA)
    assert "button" not in str(old_schema.field("steps").type)
    pq.write_table(pa.Table.from_pylist([{**to_row(traj), "schema_version": "1.0"}], schema=old_schema),
                   tmp_path / "old.parquet")
    (parsed,) = iter_records(tmp_path / "old.parquet")
    assert parsed.ok, parsed.errors
    assert parsed.record.schema_version == "1.0" and parsed.record.steps[0].action.button is None
    assert parsed.record.content_hash() == traj.content_hash()
    # New shards beside old ones: DuckDB unifies the struct by name, old rows read the new column as NULL.
    new = traj.model_copy(update={"id": "new"}, deep=True)
    new.steps[0].action = Action(type="right_click", x=140, y=140, image_width=1280, image_height=720)
    write_parquet([new], tmp_path / "new.parquet", "trajectory")
    rows = duckdb.sql(f"select id, steps[1].action.button from read_parquet(['{tmp_path}/old.parquet', "
                      f"'{tmp_path}/new.parquet'], union_by_name = true)").fetchall()
    assert dict(rows) == {"new": "right", traj.id: None}


def test_click_name_doctests():
    import doctest

    import schemas.action

    result = doctest.testmod(schemas.action)
    assert result.failed == 0 and result.attempted >= 2
