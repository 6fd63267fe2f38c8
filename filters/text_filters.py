"""Text quality gates: an instruction exists, is in the expected language, and the reasoning is short and
agrees with the action it precedes.

Language is decided by script, which is what matters for the two languages trajforge ships (en, zh): a
"zh" sample must be mostly CJK, an "en" sample mostly Latin. Reasoning length is counted in tokens the way a
tokenizer roughly would: words for Latin text, one per CJK character. Consistency follows GUI-Libra's
filter — the action should be predictable from the reasoning — with a verb lexicon instead of a model: if
the reasoning announces an action kind and the action is none of the kinds announced, the pair disagrees.
"""

from __future__ import annotations

import re

from filters.base import Drop, RecordFilter, Verdict
from filters.item import Item
from schemas.base import is_blank

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
WORD = re.compile(r"[A-Za-z0-9_]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

# Phrases that announce an action kind → the action types compatible with it.
VERBS: list[tuple[re.Pattern[str], set[str]]] = [
    (re.compile(r"\blong[- ]press|\bpress and hold|长按"), {"long_press"}),
    (re.compile(r"\b(tap|click|press|select|choose|hit)\b|点击|单击|轻触"), {"click", "long_press", "select", "key"}),
    (re.compile(r"\b(type|enter|input|write|fill in)\b|输入|填写"), {"type", "key"}),
    (re.compile(r"\bscroll|滚动"), {"scroll", "swipe"}),
    (re.compile(r"\bswipe|滑动"), {"swipe", "scroll"}),
    (re.compile(r"\bgo back|navigate back|\bback button|返回"), {"navigate_back", "click"}),
    (re.compile(r"\b(home screen|go home|home button)\b|主屏"), {"navigate_home"}),
    (re.compile(r"\b(open|launch) the (app|application)\b|打开应用"), {"open_app"}),
    (re.compile(r"\bwait\b|等待"), {"wait"}),
    (re.compile(r"\b(task is (complete|done|finished)|all done)\b|任务完成"), {"done", "answer"}),
]


def token_count(text: str) -> int:
    return len(WORD.findall(text))


class InstructionPresent(RecordFilter[Item]):
    """A step needs a visible low-level instruction: it is the supervision for grounding (zero-width or other
    invisible characters alone count as empty, ``schemas.base.is_blank``)."""

    name = "empty_instruction"

    def decide(self, item: Item) -> Verdict:
        text = item.sample.instruction
        if not is_blank(text):
            return True
        if not text.strip():
            return Drop(self.name, "the instruction is empty")
        shown = text.encode("unicode_escape").decode("ascii")[:200]
        return Drop(self.name, f"the instruction shows nothing (only invisible characters: {shown})")


class LanguageMatches(RecordFilter[Item]):
    """The task and instruction must be written in the sample's declared ``language``."""

    name = "wrong_language"

    def decide(self, item: Item) -> Verdict:
        s = item.sample
        lang = (s.language or "en").lower()
        for field in ("task", "instruction"):
            text = getattr(s, field)
            cjk, latin = len(CJK.findall(text)), len(LATIN.findall(text))
            if not cjk and not latin:
                continue  # digits/symbols only: nothing to judge
            if lang.startswith("zh") and cjk == 0:
                return Drop(self.name, f"{field} has no Chinese characters but language is {lang!r}")
            if lang.startswith("en") and cjk > latin:
                return Drop(self.name, f"{field} is mostly CJK but language is {lang!r}")
        return True


class ReasoningLength(RecordFilter[Item]):
    """Long reasoning hurts grounding (GUI-Libra); cap it in tokens."""

    name = "reasoning_too_long"

    def __init__(self, max_tokens: int = 256):
        self.max_tokens = max_tokens

    def decide(self, item: Item) -> Verdict:
        r = item.sample.reasoning or ""
        n = token_count(r) if len(r) < 50 * self.max_tokens else self.max_tokens * 50
        if n > self.max_tokens:
            return Drop(self.name, f"reasoning has ≥{n} tokens (cap {self.max_tokens})")
        return True


class ReasoningConsistent(RecordFilter[Item]):
    """If the reasoning's last sentence announces an action kind, the action must be of that kind."""

    name = "reasoning_action_mismatch"

    def decide(self, item: Item) -> Verdict:
        reasoning = (item.sample.reasoning or "").strip().lower()
        if not reasoning:
            return True
        sentences = [s for s in re.split(r"(?<=[.!?。！？])\s*", reasoning) if s.strip()]
        last = sentences[-1] if sentences else reasoning
        announced: set[str] = set()
        for pattern, kinds in VERBS:
            if pattern.search(last):
                announced |= kinds
        action = str(item.sample.action.type)
        if not announced or action in announced:
            return True
        return Drop(self.name, f"reasoning announces {sorted(announced)} but the action is {action!r}")
