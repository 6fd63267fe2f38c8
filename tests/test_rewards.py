"""Step rewards: doctested pure functions with TRL's signature; accepted actions and qwen25 pixels score."""

from __future__ import annotations

import doctest

import training.rewards
from training.rewards import accuracy_reward, action_type_reward, format_reward, guilibra_reward, uitars2_reward

GOLD = {"type": "click", "x": 140, "y": 140, "image_width": 1280, "image_height": 720,
        "target_bbox": {"x1": 40, "y1": 100, "x2": 240, "y2": 180}}
ALT = {"type": "click", "x": 1000, "y": 600, "image_width": 1280, "image_height": 720,
       "target_bbox": {"x1": 950, "y1": 560, "x2": 1050, "y2": 640}}


def _click(x: int, y: int) -> str:
    return f'<answer>{{"action_type": "Click", "value": "None", "point_2d": [{x}, {y}]}}</answer>'


def test_doctests():
    result = doctest.testmod(training.rewards)
    assert result.failed == 0 and result.attempted >= 8


def test_accepted_actions_score_and_conversational_completions():
    cols = {"action": [GOLD] * 3, "accepted_actions": [[ALT]] * 3, "image_width": [1280] * 3,
            "image_height": [720] * 3}
    comps = [_click(109, 194), [{"role": "assistant", "content": _click(781, 833)}], _click(500, 500)]
    # (109, 194)‰ → (139.5, 139.7) px inside the gold box; (781, 833)‰ → (1000, 600) inside the accepted box.
    assert accuracy_reward(["p"] * 3, comps, **cols) == [1.0, 1.0, 0.0]
    assert guilibra_reward(["p"] * 3, comps, **cols) == [1.0, 1.0, 0.1]


def test_qwen25_pixel_convention_decodes_on_the_resized_image():
    # 1280x720 under max_pixels 200704 resizes to 588x336 (smart_resize); gold (140,140) → (64.3, 65.3) there.
    cols = {"action": [GOLD], "image_width": [1280], "image_height": [720], "coord_convention": ["qwen25"],
            "max_pixels": [200704], "min_pixels": [3136], "factor": [28]}
    assert accuracy_reward(None, [_click(64, 65)], **cols) == [1.0]
    assert accuracy_reward(None, [_click(140, 140)], **cols) == [0.0]


def test_format_and_invalid_penalty():
    assert format_reward(None, ["<answer>{}</answer>", "<think>x</think><answer>{\"action_type\": \"Wait\"}</answer>",
                                'junk <answer>{"action_type": "Wait"}</answer>']) == [0.0, 1.0, 0.0]
    cols = {"action": [{"type": "wait"}] * 2, "image_width": [10] * 2, "image_height": [10] * 2,
            "reflection": [1.0, 0.0]}
    good = '<answer>{"action_type": "Wait"}</answer>'
    assert uitars2_reward(None, [good, "no answer"], **cols) == [1.0 + 0.1 + 0.3, -2.0]


def _answer(kind: str, x: int, y: int) -> str:
    return f'<answer>{{"action_type": "{kind}", "value": "None", "point_2d": [{x}, {y}]}}</answer>'


def test_click_variants_and_hover_are_distinct_action_types():
    right = {**GOLD, "button": "right"}
    double = {**GOLD, "clicks": 2}
    hover = {"type": "hover", "x": 140, "y": 140, "image_width": 1280, "image_height": 720}
    inside = (109, 194)  # inside GOLD's box
    comps = [_answer(k, *inside) for k in ("Click", "RightClick", "DoubleClick", "DoubleRightClick", "Hover")]
    size = {"image_width": [1280] * 5, "image_height": [720] * 5}
    assert accuracy_reward(None, comps, action=[right] * 5, **size) == [0.0, 1.0, 0.0, 0.0, 0.0]
    assert action_type_reward(None, comps, action=[double] * 5, **size) == [0.0, 0.0, 1.0, 0.0, 0.0]
    # A hover is pointed: with no box it scores within 0.05 normalized distance of the gold point.
    far = _answer("Hover", 500, 500)
    assert accuracy_reward(None, [comps[4], far, comps[0]], action=[hover] * 3, image_width=[1280] * 3,
                           image_height=[720] * 3) == [1.0, 0.0, 0.0]
    # A plain-click gold is unchanged: left click scores, a right-click in the box does not.
    assert accuracy_reward(None, comps[:2], action=[GOLD] * 2, image_width=[1280] * 2,
                           image_height=[720] * 2) == [1.0, 0.0]
