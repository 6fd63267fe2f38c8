"""Whether a rollout reached its task's goal: the contract of ``schemas.Task.goal`` (schema 1.2).

Success means the final screen is the same state as the goal capture ``goal.observation_id`` (state identity as
replay decides it: ``pipelines.synthesis.verify.replay.StateIndex.matches``) **and** every ``goal.must_show``
text is visible on it — reaching the right screen without the committed change (the note not saved, the
language not switched) does not count. A task without a goal cannot be verified, so it never runs.

When ``pipelines/synthesis/verify/goal.py`` (the synthesis stage's own check) exists it is used, so there is one
definition; this module is the same contract for a tree that does not have it yet.
"""

from __future__ import annotations

from typing import Any

from explorers.abstraction import normalize_text
from schemas import Goal


def visible_texts(screen: Any) -> list[str]:
    """Every visible element text and description on a live screen, normalized as the explorers compare text."""
    out = []
    for w in screen.widgets:
        e = w.element
        if not e.visible:
            continue
        for t in (e.text, e.content_desc, getattr(w, "value", "")):
            if t:
                out.append(normalize_text(t, 400).lower())
    return out


def goal_reached(goal: Goal | None, screen: Any, features: Any, index: Any) -> tuple[bool, str]:
    """(reached, why not) for the final ``screen`` (with its explorer ``features``) against ``goal``."""
    try:
        from pipelines.synthesis.verify import goal as shared  # the synthesis stage's check, once it exists
    except ImportError:
        shared = None
    if shared is not None and hasattr(shared, "goal_reached"):
        return shared.goal_reached(goal, screen, features, index)  # type: ignore[no-any-return]
    if goal is None:
        return False, "no_goal"
    if not goal.observation_id or not index.expected(goal.observation_id):
        return False, "goal_capture_unknown"
    if not index.matches(goal.observation_id, features):
        return False, "not_goal_state"
    texts = visible_texts(screen)
    missing = [m for m in goal.must_show if not any(normalize_text(m, 400).lower() in t for t in texts)]
    if missing:
        return False, f"missing_text: {missing[0][:40]}"
    return True, ""
