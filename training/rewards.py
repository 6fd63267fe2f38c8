"""Step rewards as pure functions with TRL's reward signature: ``f(prompts, completions, **columns)``.

They take whole batches and return one ``float`` (or ``None`` where a reward does not apply) per completion,
so they plug into TRL's ``GRPOTrainer(reward_funcs=[...])`` as well as trajforge's own GRPO loop. Completions
may be strings or TRL's conversational form (a list of messages; the last one's content is scored).

Ground truth travels in columns, one entry per completion: ``action`` (a trajforge ``Action`` as dict or JSON),
``accepted_actions`` (other actions synthesis verified as also correct; any of them scores), ``image_width`` /
``image_height``, and optionally ``coord_convention`` / ``min_pixels`` / ``max_pixels`` / ``factor`` when the
model speaks Qwen2.5-VL resized pixels instead of the 0–1000 grid. Scoring follows GUI-Libra's ``r1gui``: the
action type must match; a click / long-press must land strictly inside the target box (or within 0.05
normalized distance of the target point when there is no box); text must reach token-set F1 ≥ 0.5.
"Type" means ``Action.full_type``: a right-, middle-, double- or triple-click does not match a plain click (nor
each other), and a hover is pointed like a click but is its own type.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from schemas.action import POINTED, Action, ActionType
from schemas.exporters.coords import CoordConvention, Frame
from schemas.exporters.guilibra import answer_to_action, parse_target

TEXT_TYPES = {ActionType.TYPE, ActionType.SELECT, ActionType.ANSWER}
POINT_TOLERANCE = 0.05  # normalized distance accepted when the target has no box
F1_THRESHOLD = 0.5


def _text(completion: Any) -> str:
    if isinstance(completion, list):  # TRL conversational format
        return str(completion[-1].get("content", "")) if completion else ""
    return str(completion)


def _action(value: Any) -> Action:
    if isinstance(value, Action):
        return value
    if isinstance(value, str):
        value = json.loads(value)
    return Action.model_validate(value)


def _frame(columns: dict[str, Any], i: int) -> Frame:
    def col(name: str, default: Any) -> Any:
        v = columns.get(name)
        return default if v is None or v[i] is None else v[i]

    return Frame(int(columns["image_width"][i]), int(columns["image_height"][i]),
                 CoordConvention(col("coord_convention", "norm1000")), int(col("min_pixels", 56 * 56)),
                 int(col("max_pixels", 28 * 28 * 1280)), int(col("factor", 28)))


def predicted_action(completion: Any, frame: Frame) -> Action | None:
    """The completion's action on the original screenshot, or None when it is malformed or not executable."""
    try:
        _, answer = parse_target(_text(completion))
        return answer_to_action(answer, frame)
    except (ValueError, ValidationError, TypeError):
        return None


def token_f1(pred: str, gold: str) -> float:
    """Token-set F1 between two strings (case-insensitive, whitespace tokens).

    >>> token_f1("milk and eggs", "eggs and milk")
    1.0
    >>> round(token_f1("milk", "milk and eggs"), 3)
    0.5
    """
    p, g = set(pred.lower().split()), set(gold.lower().split())
    common = len(p & g)
    if not p or not g or not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def action_matches(pred: Action, gold: Action) -> bool:
    """GUI-Libra's accuracy test for one predicted action against one correct action."""
    t = ActionType(gold.type)
    if pred.full_type != gold.full_type:  # a right- or double-click is not a click
        return False
    if t in POINTED:
        if pred.point is None:
            return False
        if gold.target_bbox is not None:
            return gold.target_bbox.contains(pred.x, pred.y, strict=True)
        if gold.point is None:
            return True
        w, h = gold.image_width or 1, gold.image_height or 1
        return math.hypot((pred.x - gold.x) / w, (pred.y - gold.y) / h) <= POINT_TOLERANCE
    if t in TEXT_TYPES:
        return token_f1(pred.text or "", gold.text or "") >= F1_THRESHOLD
    if t in (ActionType.SWIPE, ActionType.SCROLL):
        return gold.direction is None or pred.direction == gold.direction
    if t is ActionType.KEY:
        return (pred.key or "").lower() == (gold.key or "").lower()
    if t is ActionType.OPEN_APP:
        return (pred.app or "").lower() == (gold.app or "").lower()
    return True


def _golds(columns: dict[str, Any], i: int) -> list[Action]:
    golds = [_action(columns["action"][i])]
    accepted = columns.get("accepted_actions")
    if accepted is not None and accepted[i]:
        golds += [_action(a) for a in accepted[i]]
    return golds


def format_reward(prompts: Sequence[Any] | None, completions: Sequence[Any], **columns: Any) -> list[float | None]:
    """1.0 when the completion is ``[<think>…</think>]<answer>{json with action_type}</answer>`` and nothing else.

    >>> format_reward(None, ['<think>ok</think><answer>{"action_type": "Click"}</answer>', 'click at 5,5'])
    [1.0, 0.0]
    """
    out: list[float | None] = []
    for c in completions:
        text = _text(c).strip()
        try:
            parse_target(text)
            ok = text.endswith("</answer>") and (text.startswith("<answer>") or text.startswith("<think>"))
        except ValueError:
            ok = False
        out.append(1.0 if ok else 0.0)
    return out


def action_type_reward(prompts: Sequence[Any] | None, completions: Sequence[Any], **columns: Any
                       ) -> list[float | None]:
    """1.0 when the predicted action type (button and click count included) equals the correct one's, or an
    accepted alternative's.

    >>> gold = {"type": "navigate_back"}
    >>> action_type_reward(None, ['<answer>{"action_type": "NavigateBack"}</answer>', '<answer>{"action_type": '
    ...     '"Wait"}</answer>'], action=[gold, gold], image_width=[100, 100], image_height=[100, 100])
    [1.0, 0.0]
    """
    out: list[float | None] = []
    for i, c in enumerate(completions):
        pred = predicted_action(c, _frame(columns, i))
        golds = _golds(columns, i)
        out.append(float(pred is not None and any(pred.full_type == g.full_type for g in golds)))
    return out


def accuracy_reward(prompts: Sequence[Any] | None, completions: Sequence[Any], **columns: Any
                    ) -> list[float | None]:
    """1.0 when the predicted action matches the correct action or any accepted one (see ``action_matches``).

    >>> gold = {"type": "click", "x": 50, "y": 50, "image_width": 100, "image_height": 100,
    ...         "target_bbox": {"x1": 40, "y1": 40, "x2": 60, "y2": 60}}
    >>> inside = '<answer>{"action_type": "Click", "point_2d": [550, 450]}</answer>'
    >>> outside = '<answer>{"action_type": "Click", "point_2d": [700, 450]}</answer>'
    >>> accuracy_reward(None, [inside, outside], action=[gold, gold], image_width=[100, 100], image_height=[100, 100])
    [1.0, 0.0]
    """
    out: list[float | None] = []
    for i, c in enumerate(completions):
        pred = predicted_action(c, _frame(columns, i))
        out.append(float(pred is not None and any(action_matches(pred, g) for g in _golds(columns, i))))
    return out


def invalid_action_reward(prompts: Sequence[Any] | None, completions: Sequence[Any], **columns: Any
                          ) -> list[float | None]:
    """1.0 when the completion does not decode to an executable action (used as a penalty).

    >>> invalid_action_reward(None, ['<answer>{"action_type": "Fly"}</answer>', '<answer>{"action_type": "Wait"}'
    ...     '</answer>'], image_width=[10, 10], image_height=[10, 10])
    [1.0, 0.0]
    """
    return [float(predicted_action(c, _frame(columns, i)) is None) for i, c in enumerate(completions)]


def guilibra_reward(prompts: Sequence[Any] | None, completions: Sequence[Any], **columns: Any) -> list[float | None]:
    """GUI-Libra's step reward: 0.9·accuracy + 0.1·format.

    >>> gold = {"type": "type", "text": "milk and eggs"}
    >>> guilibra_reward(None, ['<think>t</think><answer>{"action_type": "Write", "value": "eggs and milk"}</answer>'],
    ...     action=[gold], image_width=[10], image_height=[10])
    [1.0]
    """
    acc = accuracy_reward(prompts, completions, **columns)
    fmt = format_reward(prompts, completions, **columns)
    return [0.9 * a + 0.1 * f for a, f in zip(acc, fmt, strict=True)]


def uitars2_reward(prompts: Sequence[Any] | None, completions: Sequence[Any], **columns: Any) -> list[float | None]:
    """UI-TARS-2's composite: r_task + 0.1·r_format + 0.3·r_reflection − 2.0·r_invalid.

    r_task is ``accuracy_reward``; r_reflection comes from an optional ``reflection`` column (0 when absent).

    >>> uitars2_reward(None, ['nonsense'], action=[{"type": "wait"}], image_width=[10], image_height=[10])
    [-2.0]
    """
    task = accuracy_reward(prompts, completions, **columns)
    fmt = format_reward(prompts, completions, **columns)
    bad = invalid_action_reward(prompts, completions, **columns)
    refl = columns.get("reflection") or [0.0] * len(completions)
    return [t + 0.1 * f + 0.3 * float(r or 0.0) - 2.0 * b for t, f, r, b in zip(task, fmt, refl, bad, strict=True)]


PRESETS = {"guilibra": guilibra_reward, "uitars2": uitars2_reward}
