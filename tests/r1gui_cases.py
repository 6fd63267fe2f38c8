"""Edge cases of GUI-Libra's r1gui reward, shared by tests/test_rewards.py and benchmarks/bench_train.py.

Each case is (name, completion, gold action, convention, is_grounding). The gold is a trajforge ``Action`` on a
1280×720 screenshot; the oracle is ``tests/anchors.py`` (a transcription of GUI-Libra's reward function).
"""

from __future__ import annotations

import json
from typing import Any

W, H = 1280, 720
BOX = {"x1": 40, "y1": 100, "x2": 240, "y2": 180}  # 0–1000: x 31–188, y 139–250
CLICK = {"type": "click", "x": 140, "y": 140, "image_width": W, "image_height": H, "target_bbox": BOX}
POINT_ONLY = {"type": "click", "x": 640, "y": 360, "image_width": W, "image_height": H}
WRITE = {"type": "type", "text": "milk and eggs"}
WRITE_ONE = {"type": "type", "text": "milkshake"}
SCROLL = {"type": "scroll", "direction": "down"}
BACK = {"type": "navigate_back"}
KEY = {"type": "key", "key": "enter"}
DONE = {"type": "done", "text": "success"}
HOVER = {"type": "hover", "x": 140, "y": 140, "image_width": W, "image_height": H}
CHINESE = {"type": "type", "text": "买牛奶"}


def answer(action_type: str, value: Any = "None", point: Any = (-100, -100), description: str = "do it",
           think: str | None = "I should act.", tag: str = "think", raw: str | None = None) -> str:
    body = raw if raw is not None else json.dumps({
        "action_description": description, "action_type": action_type, "value": value,
        "point_2d": list(point) if isinstance(point, tuple) else point}, ensure_ascii=False)
    head = f"<{tag}>{think}</{tag}>" if think is not None else ""
    return f"{head}<answer>{body}</answer>"


# (name, completion, gold, convention, is_grounding)
CASES: list[tuple[str, str, dict[str, Any], str, bool]] = [
    ("click inside the box", answer("Click", point=(109, 194)), CLICK, "norm1000", False),
    ("click on the box edge (strict)", answer("Click", point=(31, 194)), CLICK, "norm1000", False),
    ("click just outside", answer("Click", point=(190, 194)), CLICK, "norm1000", False),
    ("point target within 0.05", answer("Click", point=(530, 520)), POINT_ONLY, "norm1000", False),
    ("point target 0.06 away", answer("Click", point=(560, 500)), POINT_ONLY, "norm1000", False),
    ("float coordinates", answer("Click", point=[109.5, 194.0]), CLICK, "norm1000", False),
    ("point_2d null for a Write", answer("Write", "milk and eggs", None), WRITE, "norm1000", False),
    ('point_2d "None" for a Write', answer("Write", "milk and eggs", "None"), WRITE, "norm1000", False),
    ("point_2d [-100, -100] for a Write", answer("Write", "eggs and milk"), WRITE, "norm1000", False),
    ("one-word partial match", answer("Write", "milk"), WRITE_ONE, "norm1000", False),
    ("partial match below half", answer("Write", "bread"), WRITE, "norm1000", False),
    ("one of three words (F1 0.5)", answer("Write", "milk"), WRITE, "norm1000", False),
    ("bracketed direction", answer("Scroll", "[down]"), SCROLL, "norm1000", False),
    ("wrong direction", answer("Scroll", "up"), SCROLL, "norm1000", False),
    ("leading space", " " + answer("Click", point=(109, 194)), CLICK, "norm1000", False),
    ("text after the answer", answer("Click", point=(109, 194)) + " done", CLICK, "norm1000", False),
    ("missing action_description", answer("Click", raw='{"action_type": "Click", "value": "None", '
                                                       '"point_2d": [109, 194]}'), CLICK, "norm1000", False),
    ("value not a string", answer("Write", raw='{"action_description": "t", "action_type": "Write", '
                                             '"value": 5, "point_2d": "None"}'), WRITE, "norm1000", False),
    ("no reasoning in a reasoning task", answer("NavigateBack", think=None), BACK, "norm1000", False),
    ("reasoning in a grounding task", answer("NavigateBack"), BACK, "norm1000", True),
    ("no reasoning in a grounding task", answer("NavigateBack", think=None), BACK, "norm1000", True),
    ("wrong action type", answer("Wait"), BACK, "norm1000", False),
    ('"type" is no alias on the prediction side', answer("type", "milk and eggs"), WRITE, "norm1000", False),
    ("lower-case type name", answer("click", point=(109, 194)), CLICK, "norm1000", False),
    ("KeyboardPress: the key is not compared", answer("KeyboardPress", "tab"), KEY, "norm1000", False),
    ("RightClick is not a Click", answer("RightClick", point=(109, 194)), CLICK, "norm1000", False),
    ("Terminate compares its value", answer("Terminate", "success"), DONE, "norm1000", False),
    ("Hover: type only", answer("Hover", point=(900, 900)), HOVER, "norm1000", False),
    ("malformed JSON, fields still extractable",
     answer("Click", raw='{"action_description": "t", "action_type": "Click", "value": "None", '
                         '"point_2d": [109, 194],}'), CLICK, "norm1000", False),
    ("first of two answers counts", answer("Click", point=(109, 194)) + answer("Wait"), CLICK, "norm1000", False),
    ("Chinese text", answer("Write", "买牛奶"), CHINESE, "norm1000", False),
    ("Qwen2.5-VL pixels inside the box", answer("Click", point=(63, 65)), CLICK, "qwen25", False),
    ("Qwen2.5-VL pixels read as 0–1000", answer("Click", point=(109, 194)), CLICK, "qwen25", False),
]
