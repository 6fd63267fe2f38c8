"""Is a task's goal reached? The one predicate replay, drift checks and policy rollouts all use.

A task's ``Goal`` (schema 1.2) names a capture of the goal screen in its graph and the texts the final screen
must show. The goal holds on a screen when the screen is the same *state* as that capture — the explorers'
identity: structure plus content, so a ticked option or a switched language counts — and every ``must_show``
text is visible (the created note's title, the item that was opened); a goal that is only a place (a screen, an
item, an answer, a search result) may also be met on the same screen as a user counts it, showing those texts, so
a fresh instance that lists one row fewer than the crawl saw still counts (issue 49). Reaching the right screen
type without the committed change (an empty note page, the settings page with the old option) does not count. Inside an
environment a goal may also name the parts of the app's data its commit changed (``Goal.effects``): then those
parts must have changed since the replay started (``changed``, the instance's digest difference), so a replay
that shows the right screen without committing (a stale page, a cancelled confirmation) fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from schemas import Goal, GoalKind, Observation

if TYPE_CHECKING:  # the explorers are imported where they run (Selenium), not when this module loads
    from graph.identity import StateIndex
    from graph.screen import Screen


def shown(texts: list[str], visible: str) -> list[str]:
    """Those ``texts`` missing from the whitespace-normalized, case-folded ``visible`` text."""
    hay = " ".join(visible.split()).lower()
    return [t for t in texts if " ".join(t.split()).lower().rstrip("…") not in hay]


def screen_text(screen: Screen | Observation) -> str:
    """Every visible text of a live ``graph.screen.Screen`` or a stored ``Observation``."""
    elements = screen.elements if isinstance(screen, Observation) else [w.element for w in screen.widgets]
    return "\n".join(e.label for e in elements if e.visible and e.label)


# Goals that are a place and what it shows: reached on the same screen as a user counts it (route, heading,
# structure) showing every ``must_show`` text, whatever else the app lists there (a history with one revision
# fewer than the crawl left, one note fewer above the one asked about). Goals that change something (a setting,
# a toggle, a form sent) keep the strict state check: their screen looks alike before and after.
PLACE_GOALS = frozenset({GoalKind.SCREEN, GoalKind.ITEM, GoalKind.ANSWER, GoalKind.SEARCH})


def reached_by_place(goal: Goal) -> bool:
    """Whether ``goal`` may be met on the same user screen: a place goal with the texts that pin it (the item, the
    answer), or a screen goal, which the screen's route and heading pin by themselves."""
    return goal.kind in PLACE_GOALS and (bool(goal.must_show) or goal.kind == GoalKind.SCREEN)


@dataclass
class GoalCheck:
    ok: bool
    reason: str = ""


def check_goal(goal: Goal, screen: Screen | Observation, index: StateIndex,
               changed: list[str] | None = None) -> GoalCheck:
    """Whether ``screen`` (live or stored) satisfies ``goal``; ``index`` is a ``replay.StateIndex``; ``changed``
    the data parts changed since the start (None where no environment can say: the effect goes unchecked)."""
    from graph.identity import heading_of, observation_features, screen_features

    feats = observation_features(screen) if isinstance(screen, Observation) else screen_features(screen)
    if goal.observation_id and not (
            (index.matches(goal.observation_id, feats) or (reached_by_place(goal) and index.same_user_screen(
                goal.observation_id, feats, heading_of(screen.elements))))
            and index.shows_numbers(goal.observation_id, screen.elements)):
        return GoalCheck(False, "goal_state_mismatch")
    missing = shown(goal.must_show, screen_text(screen))
    if missing:
        return GoalCheck(False, "goal_text_missing")
    if goal.effects and changed is not None and not set(goal.effects) <= set(changed):
        return GoalCheck(False, "goal_effect_missing")
    return GoalCheck(True)


def reached_early(goal: Goal, captures: Sequence[Observation], index: StateIndex) -> int | None:
    """The position (from 1) of the first of ``captures`` on which ``goal`` already holds, or None.

    ``captures`` are the screens a plan shows before each of its actions after the first, as recorded. Replay
    fails a trajectory whose goal holds before its last action (an overshoot), and it reads the live screen with
    this same ``check_goal``; a plan that passes its goal screen on the way is therefore refused when it is
    planned, not replayed to fail. Fava's "Navigate to Account Journal" went Income → "Changes (monthly)" →
    "2024-06": the account's journal is one screen as a user counts it, shown after the first tap. A goal that
    reads a data effect is not reached before its commit (its page may look the same before and after).
    """
    if goal.effects:
        return None
    return next((i for i, obs in enumerate(captures, start=1) if check_goal(goal, obs, index).ok), None)
