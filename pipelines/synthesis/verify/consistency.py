"""Reasoning must agree with its action: name the target element, use a matching verb, stay short.

GUI-Libra found that long or action-misaligned reasoning hurts grounding; this is the cheap, deterministic
form of its agreement filter, applied to every synthesized step before it becomes training data.
"""

from __future__ import annotations

import re

from schemas import Action, ActionType, Element

MAX_REASONING_CHARS = 400
MAX_REASONING_WORDS = 70
LABEL_PREFIX = 24  # long labels: the reasoning only has to quote their beginning

VERBS: dict[ActionType, str] = {
    ActionType.CLICK: r"tap|click|press|select|choose|open|点击|轻触|选择|打开|按",
    ActionType.LONG_PRESS: r"long[- ]press|press and hold|hold|长按",
    ActionType.TYPE: r"type|enter|input|write|fill|输入|填写|键入",
    ActionType.SELECT: r"select|choose|pick|选择",
    ActionType.SCROLL: r"scroll|滚动",
    ActionType.SWIPE: r"swipe|滑动",
    ActionType.KEY: r"press|key|按",
    ActionType.NAVIGATE_BACK: r"back|返回",
    ActionType.NAVIGATE_HOME: r"home|主屏幕|主页",
    ActionType.OPEN_APP: r"open|launch|start|打开|启动",
    ActionType.WAIT: r"wait|等待",
    ActionType.ANSWER: r"answer|reply|回答",
    ActionType.DONE: r"finish|done|complete|完成",
    ActionType.HOVER: r"hover|point at|move (the )?(mouse|pointer)|悬停",
    ActionType.DRAG: r"drag|move|select|拖动|拖拽",
}


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def check_reasoning(reasoning: str, action: Action, target: Element | None) -> str | None:
    """``None`` when consistent, else a short reason code (``reasoning_*``)."""
    words = len(reasoning.split()) + len(re.findall(r"[\u4e00-\u9fff]", reasoning)) // 2
    if len(reasoning) > MAX_REASONING_CHARS or words > MAX_REASONING_WORDS:
        return "reasoning_too_long"
    if not re.search(VERBS[ActionType(action.type)], reasoning, re.IGNORECASE):
        return "reasoning_action_disagree"
    label = _norm(target.label) if target is not None else ""
    named = ActionType(action.type) in (ActionType.CLICK, ActionType.LONG_PRESS, ActionType.TYPE, ActionType.SELECT)
    if label and named and label[:LABEL_PREFIX] not in _norm(reasoning):
        return "reasoning_missing_target"
    return None
