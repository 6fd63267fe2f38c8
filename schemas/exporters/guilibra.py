"""GUI-Libra formats: the SFT conversation and the RL ground-truth record.

SFT targets read ``<think>…</think><answer>{"action_description", "action_type", "value", "point_2d"}</answer>``
(reasoning-then-action); the direct-action variant omits the think block. GUI-Libra trains on both for every
source (1:1), which ``sft_samples(..., mix="both")`` produces. RL records carry ``gt_action``, ``gt_bbox`` and
``gt_point_2d`` on the 0–1000 grid, ``gt_input_text`` and the image size, so a reward function can score any
predicted action without the screenshot.

A swipe's end point is not representable in these formats: it is exported as its direction.

Desktop mouse actions (schema 1.1) get their own ``action_type`` names — ``RightClick``, ``MiddleClick``,
``DoubleClick``, ``TripleClick`` (combined: ``DoubleRightClick``) and ``Hover`` — in GUI-Libra's CamelCase,
rather than ``Click`` with the button in ``value``. A right-click opens a context menu where a click activates:
the action type is what GUI-Libra's reward compares first, so folding the variant into ``value`` would let a
left click score as a correct right-click; a distinct name scores 0, as it should. Plain clicks export as
``Click`` exactly as before, so 1.0 data exports unchanged and GUI-Libra's own vocabulary is untouched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

from schemas.action import Action, ActionType, click_name, parse_click_name
from schemas.exporters.coords import CoordConvention, Frame
from schemas.geometry import bbox_to_norm, from_norm
from schemas.trajectory import Step, Trajectory

TO_GUILIBRA: dict[ActionType, str] = {
    ActionType.CLICK: "Click",
    ActionType.LONG_PRESS: "LongPress",
    ActionType.SWIPE: "Swipe",
    ActionType.SCROLL: "Scroll",
    ActionType.TYPE: "Write",
    ActionType.KEY: "KeyboardPress",
    ActionType.NAVIGATE_BACK: "NavigateBack",
    ActionType.NAVIGATE_HOME: "NavigateHome",
    ActionType.OPEN_APP: "OpenAPP",
    ActionType.SELECT: "Select",
    ActionType.WAIT: "Wait",
    ActionType.ANSWER: "Answer",
    ActionType.DONE: "Terminate",
    ActionType.HOVER: "Hover",
}
FROM_GUILIBRA: dict[str, ActionType] = {v.lower(): k for k, v in TO_GUILIBRA.items()}
NO_VALUE = "None"
NO_INPUT_TEXT = "no input text"

SYSTEM_PROMPT = (
    "You are a GUI agent. You are given a task, your previous actions and a screenshot of the current screen. "
    "Decide the next action. First think briefly inside <think></think>, then give the action inside "
    '<answer></answer> as JSON with keys "action_description", "action_type", "value" and "point_2d".'
)
DIRECT_PROMPT_SUFFIX = "Answer with the action only, inside <answer></answer>."

ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.S)
THINK_RE = re.compile(r"<think>(.*?)</think>", re.S)


def _swipe_direction(a: Action) -> str | None:
    if a.direction:
        return a.direction
    if a.x is None or a.x2 is None:
        return None
    dx, dy = a.x2 - a.x, a.y2 - a.y
    if abs(dx) >= abs(dy):
        return "right" if dx > 0 else "left"
    return "down" if dy > 0 else "up"


def action_value(a: Action) -> str:
    """The ``value`` slot: typed/selected/answered text, key name, app, or direction."""
    t = ActionType(a.type)
    if t in (ActionType.TYPE, ActionType.SELECT, ActionType.ANSWER, ActionType.DONE):
        return a.text or NO_VALUE
    if t is ActionType.KEY:
        return a.key or NO_VALUE
    if t is ActionType.OPEN_APP:
        return a.app or NO_VALUE
    if t in (ActionType.SWIPE, ActionType.SCROLL):
        return _swipe_direction(a) or NO_VALUE
    return NO_VALUE


def guilibra_type(a: Action) -> str:
    """The ``action_type`` an action exports as: GUI-Libra's name, with click variants spelled out."""
    if a.type == ActionType.CLICK and (a.button is not None or a.clicks is not None):
        return "".join(part.capitalize() for part in click_name(a.button, a.clicks).split("_"))
    return TO_GUILIBRA[ActionType(a.type)]


def answer_dict(a: Action, description: str, frame: Frame) -> dict[str, Any]:
    """The JSON object inside ``<answer>``; ``point_2d`` is in ``frame``'s convention or null."""
    point = frame.encode(a.x, a.y) if a.point is not None else None
    return {
        "action_description": description,
        "action_type": guilibra_type(a),
        "value": action_value(a),
        "point_2d": point,
    }


def format_target(a: Action, description: str, reasoning: str | None, frame: Frame) -> str:
    """The assistant turn: reasoning-then-action when ``reasoning`` is given, else direct action."""
    answer = json.dumps(answer_dict(a, description, frame), ensure_ascii=False)
    if reasoning:
        return f"<think>{reasoning.strip()}</think><answer>{answer}</answer>"
    return f"<answer>{answer}</answer>"


def parse_target(text: str) -> tuple[str | None, dict[str, Any]]:
    """Split a model output into (reasoning or None, answer JSON); raises ValueError when malformed."""
    m = ANSWER_RE.search(text)
    if not m:
        raise ValueError("no <answer>…</answer> block")
    try:
        answer = json.loads(m.group(1))
    except json.JSONDecodeError as exc:
        raise ValueError(f"answer is not JSON: {exc.msg}") from None
    if not isinstance(answer, dict) or "action_type" not in answer:
        raise ValueError("answer JSON has no action_type")
    think = THINK_RE.search(text)
    return (think.group(1).strip() if think else None), answer


def answer_to_action(answer: dict[str, Any], frame: Frame) -> Action:
    """A GUI-Libra answer back into a trajforge ``Action`` on the original screenshot's pixels."""
    name = str(answer.get("action_type", "")).lower()
    variant = None if name in FROM_GUILIBRA else parse_click_name(name)
    if name not in FROM_GUILIBRA and variant is None:
        raise ValueError(f"unknown GUI-Libra action_type {answer.get('action_type')!r}")
    t = FROM_GUILIBRA.get(name, ActionType.CLICK)
    value = answer.get("value")
    value = None if value in (None, NO_VALUE, "") else str(value)
    fields: dict[str, Any] = {"type": t.value}
    if variant is not None:
        fields["button"], fields["clicks"] = variant
    point = answer.get("point_2d")
    if isinstance(point, list | tuple) and len(point) == 2:
        x, y = frame.decode(float(point[0]), float(point[1]))
        fields.update(x=x, y=y, image_width=frame.width, image_height=frame.height)
    if t in (ActionType.TYPE, ActionType.SELECT, ActionType.ANSWER, ActionType.DONE):
        fields["text"] = value
    elif t is ActionType.KEY:
        fields["key"] = value
    elif t is ActionType.OPEN_APP:
        fields["app"] = value
    elif t in (ActionType.SWIPE, ActionType.SCROLL):
        fields["direction"] = value
    return Action.model_validate(fields)


def _history(traj: Trajectory, upto: int) -> list[str]:
    return [s.instruction or s.action.describe() for s in traj.steps[:upto]]


def _user_turn(traj: Trajectory, step: Step, direct: bool) -> str:
    lines = ["<image>", f"Task: {traj.task.instruction}"]
    history = _history(traj, step.index)
    if history:
        lines.append("Previous actions:")
        lines += [f"{i + 1}. {h}" for i, h in enumerate(history)]
    else:
        lines.append("Previous actions: none")
    if direct:
        lines.append(DIRECT_PROMPT_SUFFIX)
    return "\n".join(lines)


Mix = Literal["reasoning", "direct", "both"]


def sft_samples(
    traj: Trajectory,
    image_ref: Callable[[str], str],
    convention: CoordConvention = CoordConvention.NORM1000,
    mix: Mix = "both",
) -> Iterator[dict[str, Any]]:
    """GUI-Libra / AGUVIS-style conversation samples, one (or two, with ``mix="both"``) per step.

    ``image_ref`` maps a screenshot sha256 to what the trainer should load (a relative path, a URL).
    Steps without reasoning only yield the direct-action sample.
    """
    for step in traj.steps:
        obs = step.observation
        frame = Frame(obs.width, obs.height, convention)
        variants: list[bool] = []  # True = direct action
        if mix in ("reasoning", "both") and step.reasoning:
            variants.append(False)
        if mix in ("direct", "both") or not step.reasoning:
            variants.append(True)
        for direct in variants:
            target = format_target(step.action, step.instruction, None if direct else step.reasoning, frame)
            sample = {
                "id": f"{traj.id}:{step.index}:{'direct' if direct else 'reason'}",
                "image": image_ref(obs.screenshot_sha256),
                "conversations": [
                    {"from": "system", "value": SYSTEM_PROMPT},
                    {"from": "human", "value": _user_turn(traj, step, direct)},
                    {"from": "gpt", "value": target},
                ],
                "coord_convention": str(convention),
                "image_width": obs.width,
                "image_height": obs.height,
            }
            if convention is CoordConvention.QWEN25:
                sample["resized_width"], sample["resized_height"] = frame.resized
            yield sample


def rl_record(traj: Trajectory, step: Step, image_ref: Callable[[str], str]) -> dict[str, Any]:
    """GUI-Libra RL ground truth for one step (coordinates on the 0–1000 grid)."""
    obs, a = step.observation, step.action
    w, h = obs.width, obs.height
    bbox = a.target_bbox
    return {
        "id": f"{traj.id}:{step.index}",
        "image": image_ref(obs.screenshot_sha256),
        "instruction": traj.task.instruction,
        "step_instruction": step.instruction,
        "history": _history(traj, step.index),
        "gt_action": guilibra_type(a).lower(),
        "gt_bbox": list(bbox_to_norm(bbox.as_tuple(), w, h)) if bbox is not None else None,
        "gt_point_2d": [a.x_norm, a.y_norm] if a.point is not None else None,
        "gt_input_text": action_value(a) if action_value(a) != NO_VALUE else NO_INPUT_TEXT,
        "image_width": w,
        "image_height": h,
        "accepted_actions": [
            answer_dict(alt, step.instruction, Frame(w, h)) for alt in step.accepted_actions
        ],
    }


def rl_to_action(rec: dict[str, Any]) -> Action:
    """An RL ground-truth record back into an ``Action`` (with its target box in pixels)."""
    w, h = int(rec["image_width"]), int(rec["image_height"])
    text = rec.get("gt_input_text")
    answer = {
        "action_type": rec["gt_action"],
        "value": None if text == NO_INPUT_TEXT else text,
        "point_2d": rec.get("gt_point_2d"),
    }
    action = answer_to_action(answer, Frame(w, h))
    box = rec.get("gt_bbox")
    if box:
        x1, y1, x2, y2 = box
        target = {"x1": from_norm(x1, w), "y1": from_norm(y1, h), "x2": from_norm(x2, w), "y2": from_norm(y2, h)}
        action = Action.model_validate({**action.model_dump(), "target_bbox": target})
    return action
