"""Reasoning may only use what the agent can know before it acts: no text that appears only afterwards.

Reverse synthesis sees both screens of a step, and a model describing "why tap Settings" likes to say "to see
the Settings page with the dark-mode toggle" — but the toggle is only on the next screen, which the agent
deciding the tap has not seen. A trained agent would learn to hallucinate what comes next. ``after_only``
lists the texts the next screen shows that the current screen, the task, the goal and the history do not;
``leaks`` finds those the reasoning names anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipelines.synthesis.screens import CLOCK_RE, clip
from schemas import Observation

MIN_CHARS = 4
# Words every step's reasoning uses for the control it taps ("the “creating pages” link"): a next screen that
# shows a control literally labelled "link" (a wiki's prose) does not make that sentence look ahead.
UI_WORDS = frozenset({"link", "links", "button", "buttons", "field", "fields", "form", "page", "screen", "panel",
                      "option", "options", "checkbox", "menu", "list", "entry", "item", "here"})
# Verbs a reasoning says what it wants with ("to open the Interest account", "to see its history"): a next screen
# with a button literally labelled "Open" or "View" does not make that sentence look ahead — it names no content.
# (On an accounting app 19 of 23 rejected steps were "To open …" next to an "Open" button on the account page.)
INTENT_VERBS = frozenset({"open", "show", "view", "see", "look", "find", "go", "get", "reach", "visit", "read"})


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def after_only(before: Observation, after: Observation, known: Iterable[str]) -> list[str]:
    """Texts visible on ``after`` that neither ``before`` nor the ``known`` texts (task, goal, history) contain."""
    seen = _norm(" ".join([*(e.label for e in before.elements if e.label), *known]))
    out: list[str] = []
    for el in after.elements:
        text = clip(el.label)
        norm = _norm(text)
        if (not el.visible or len(norm) < MIN_CHARS or CLOCK_RE.match(norm) or norm in seen
                or text in out or norm.isdigit()):
            continue
        out.append(text)
    return out


def leaks(reasoning: str, after_texts: Iterable[str]) -> list[str]:
    """The after-only texts the reasoning names (whole words for Latin text, substrings for CJK)."""
    r = _norm(reasoning)
    found = []
    for t in after_texts:
        n = _norm(t.rstrip("…"))
        if not n or n in UI_WORDS or n in INTENT_VERBS:
            continue
        if n.isascii():
            if re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", r):
                found.append(t)
        elif n in r:
            found.append(t)
    return found
