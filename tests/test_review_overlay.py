"""Overlay shapes for every action kind, in screenshot pixels, as the sample page draws them."""

from __future__ import annotations

from review.overlay import shapes_for
from schemas import Action, BBox

W, H = 1280, 720


def roles(shapes):
    return [(s.kind, s.role) for s in shapes]


def test_click_draws_point_and_target_box():
    box = BBox(x1=40, y1=100, x2=240, y2=180)
    a = Action(type="click", x=140, y=150, image_width=W, image_height=H, target_bbox=box)
    shapes = shapes_for(a, W, H)
    assert roles(shapes) == [("rect", "target"), ("circle", "point")]
    assert (shapes[0].x, shapes[0].y, shapes[0].x2, shapes[0].y2) == (40, 100, 240, 180)
    assert (shapes[1].x, shapes[1].y) == (140, 150) and shapes[1].r > 0


def test_swipe_with_end_point_and_scroll_by_direction_draw_arrows():
    swipe = shapes_for(Action(type="swipe", x=640, y=600, x2=640, y2=200, image_width=W, image_height=H), W, H)
    (arrow,) = [s for s in swipe if s.kind == "arrow"]
    assert (arrow.role, arrow.x, arrow.y, arrow.x2, arrow.y2) == ("swipe", 640, 600, 640, 200)
    scroll = shapes_for(Action(type="scroll", direction="left"), W, H)
    (arrow,) = [s for s in scroll if s.kind == "arrow"]
    assert (arrow.x, arrow.y) == (W / 2, H / 2) and arrow.x2 < arrow.x and arrow.y2 == arrow.y  # points left
    assert 0 <= arrow.x2 <= W


def test_long_press_gets_a_second_ring_and_typed_text_a_label_inside_the_image():
    lp = shapes_for(Action(type="long_press", x=300, y=400, image_width=W, image_height=H), W, H)
    assert roles(lp) == [("circle", "long_press"), ("circle", "long_press")] and lp[1].r > lp[0].r
    typed = shapes_for(Action(type="type", text="<b>milk</b>", x=1270, y=5, image_width=W, image_height=H), W, H)
    (label,) = [s for s in typed if s.kind == "text"]
    assert label.text == "<b>milk</b>" and 0 <= label.x <= W and 0 < label.y <= H  # escaped by the template
    key = shapes_for(Action(type="key", key="Enter"), W, H)
    assert [s.text for s in key] == ["key: Enter"]


def test_mouse_variants_draw_a_ring_per_click_and_a_label_and_hover_is_its_own_role():
    dbl_right = shapes_for(Action(type="click", button="right", clicks=2, x=300, y=400, image_width=W,
                                  image_height=H), W, H)
    assert roles(dbl_right) == [("circle", "click_ring"), ("circle", "point"), ("text", "click_kind")]
    assert dbl_right[0].r > dbl_right[1].r  # the ring is drawn first, under the point
    assert dbl_right[2].text == "double right-click" and 0 <= dbl_right[2].x <= W and 0 < dbl_right[2].y <= H
    triple = shapes_for(Action(type="triple_click", x=1279, y=719, image_width=W, image_height=H), W, H)
    assert [s.role for s in triple].count("click_ring") == 2 and triple[-1].text == "triple-click"
    assert 0 < triple[-1].y <= H
    right = shapes_for(Action(type="right_click", x=10, y=10, image_width=W, image_height=H), W, H)
    assert roles(right) == [("circle", "point"), ("text", "click_kind")] and right[1].text == "right-click"
    hover = shapes_for(Action(type="hover", x=50, y=60, image_width=W, image_height=H), W, H)
    assert roles(hover) == [("circle", "hover"), ("text", "click_kind")] and hover[1].text == "hover"
    plain = shapes_for(Action(type="click", button="left", clicks=1, x=10, y=10, image_width=W, image_height=H),
                       W, H)
    assert roles(plain) == [("circle", "point")]
