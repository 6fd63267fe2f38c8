"""The one judge of a backend's answer to a call: parse it, check it, or say why not.

Everything an answer is checked against travels in the call itself (the executed action, the target's box,
the texts only the next screen shows, the goal's facts), so the same judgement runs in-process and inside a
Beam worker, and an executor can re-ask a rejected answer, with the reason, without holding the graph. Only
answers this module accepts are ever cached.
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.synthesis.parse import StepText, SynthParseError, parse_step, parse_task
from pipelines.synthesis.verify.consistency import check_reasoning
from pipelines.synthesis.verify.hindsight import leaks
from schemas import Action, Element
from schemas.bbox import BBox

EMPTY_QUOTE = re.compile(r'“\s*”|"\s*"|「\s*」')
QUOTED_POINT = re.compile(r'[“"「]\s*\[\s*\d+\s*,\s*\d+\s*\]\s*[”"」]')  # a point is not a name


def _target(payload: dict[str, Any]) -> Element | None:
    t = payload.get("target")
    if not t:
        return None
    x1, y1, x2, y2 = payload["expect"].get("target_bbox") or (0.0, 0.0, 1.0, 1.0)
    return Element(id="target", role=t.get("role", ""), text=t.get("label", ""), bbox=BBox(x1=x1, y1=y1, x2=x2,
                                                                                           y2=y2))


def step_answer(payload: dict[str, Any], text: str) -> StepText:
    """A step answer, validated against the executed action; raises ``SynthParseError`` with a reason code."""
    expect = payload["expect"]
    action = Action.model_validate(expect["action"])
    parsed = parse_step(text, action, int(expect["width"]), int(expect["height"]))
    target = payload.get("target") or {}
    if target and not target.get("label") and (EMPTY_QUOTE.search(parsed.instruction + parsed.reasoning)
                                               or QUOTED_POINT.search(parsed.instruction)):
        raise SynthParseError("unnamed_target", "the target has no text of its own and the instruction quotes "
                                                f"none: {parsed.instruction!r} (describe what it shows)")
    place = str((target.get("place") or {}).get("text") or "")
    if place and place.casefold() not in parsed.instruction.casefold():
        raise SynthParseError("unplaced_target", f"other controls read “{target.get('label')}” and the instruction "
                                                 f"does not say it is the one at “{place}”: {parsed.instruction!r}")
    problem = check_reasoning(parsed.reasoning, action, _target(payload))
    if problem:
        raise SynthParseError(problem, f"reasoning: {parsed.reasoning!r}")
    leaked = leaks(parsed.reasoning, expect.get("after_only") or [])
    if leaked:
        raise SynthParseError("reasoning_hindsight", f"names what only the next screen shows: {leaked[:3]}")
    return parsed


def _required(goal: dict[str, Any]) -> list[str]:
    kind = goal.get("kind")
    need: list[str] = []
    if kind == "composite":  # every part's own facts, in one instruction
        return [n for part in goal.get("parts") or [] for n in _required(part)]
    if kind == "search":  # the query typed and the result opened
        need += [value for _, value in goal.get("fields") or []] + [goal.get("target") or ""]
    if kind in ("delete", "toggle") and goal.get("item"):
        need.append(goal.get("item") or "")
    if kind in ("item", "answer"):
        need.append(goal.get("target") or "")
    if kind in ("create", "edit"):
        need += [value for _, value in goal.get("fields") or []]
    if kind == "edit" or (kind == "screen" and goal.get("item")):
        need.append(goal.get("item") or "")
    return [n for n in need if n]


def task_answer(payload: dict[str, Any], text: str) -> tuple[str, list[str]]:
    """A task answer that names what the goal is about (the item, the typed values); raises otherwise."""
    task, repairs = parse_task(text)
    low = " ".join(task.lower().split())
    missing = [n for n in _required(payload.get("goal") or {}) if " ".join(n.lower().split()) not in low]
    if missing:
        raise SynthParseError("task_missing_facts", f"the task does not name {missing[:3]}")
    return task, repairs


def check_answer(kind: str, payload: dict[str, Any], text: str) -> None:
    """Raise ``SynthParseError`` unless ``text`` is an acceptable answer to a ``kind`` call with ``payload``."""
    if kind == "step":
        step_answer(payload, text)
    else:
        task_answer(payload, text)
