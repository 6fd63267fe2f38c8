"""Trajectory difficulty, MobileRL's weighting: 0.4·steps + 0.2·apps + 0.2·gestures + 0.2·distractions.

This is trajforge's one definition. Curation computes it once per trajectory (``difficulty_parts``) and
writes it to every row of the trajectory (``difficulty``, with its parts ``num_apps``, ``gesture_complexity``,
``distractions``); the GRPO curriculum (``training.curriculum``) reads that column and never recomputes it.

Each term is normalised to [0, 1] so that the easiest possible task scores 0 and the score stays in [0, 1]:

- **steps** ``min(1, (n − 1) / 19)``: one step is 0, twenty or more steps are 1. Every step counts, a recovery
  trajectory's deliberate wrong step and a terminal ``done`` included (the agent has to execute them).
- **apps** ``min(1, (a − 1) / 2)``: a single-app task is 0, three or more apps are 1 (apps of the observations,
  the trajectory's app, and ``open_app`` targets).
- **gestures** ``(mean weight − 1) / 4`` with MobileRL's weights tap 1, swipe 2, long-press 3, multi-touch 5:
  all taps is 0, all multi-touch is 1. Typing, keys, selects, hovers, back / home, waits and terminal actions
  count as taps; scrolls and drags as swipes.
- **distractions** ``distracting steps / n``. A step is distracting when its screen shows a visible pop-up —
  an element whose role is dialog / alertdialog, or whose class or resource id names a popup, modal, dialog,
  interstitial, advert, banner ad, toast or snackbar — that the step's action does *not* act on. A dialog the
  task itself needs (a confirmation the path taps) is part of the path, not a distraction.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas import Step, Trajectory

GESTURE_WEIGHT = {"click": 1.0, "select": 1.0, "type": 1.0, "key": 1.0, "hover": 1.0, "swipe": 2.0,
                  "scroll": 2.0, "drag": 2.0, "long_press": 3.0, "multi_touch": 5.0}
MAX_GESTURE = 5.0
MAX_STEPS = 20
MAX_APPS = 3
DISTRACTION_ROLES = {"dialog", "alertdialog"}
DISTRACTION_WORDS = ("popup", "pop-up", "modal", "dialog", "interstitial", "advert", "banner-ad", "ad-banner",
                     "toast", "snackbar")


@dataclass(frozen=True)
class Weights:
    steps: float = 0.4
    apps: float = 0.2
    gesture: float = 0.2
    distractions: float = 0.2


@dataclass(frozen=True)
class DifficultyParts:
    num_steps: int
    num_apps: int
    gesture_complexity: float  # mean MobileRL gesture weight, 1..5
    distractions: int  # distracting steps

    def terms(self) -> tuple[float, float, float, float]:
        """The four normalised terms, each in [0, 1] (see the module docstring)."""
        n = max(1, self.num_steps)
        return (
            min(1.0, (n - 1) / (MAX_STEPS - 1)),
            min(1.0, max(0, self.num_apps - 1) / (MAX_APPS - 1)),
            min(1.0, max(0.0, self.gesture_complexity - 1.0) / (MAX_GESTURE - 1.0)),
            min(1.0, self.distractions / n),
        )

    def score(self, w: Weights = Weights()) -> float:
        s, a, g, d = self.terms()
        return round(w.steps * s + w.apps * a + w.gesture * g + w.distractions * d, 6)


def _acts_on(step: Step, box: tuple[float, float, float, float]) -> bool:
    a = step.action
    if a.x is None or a.y is None:
        return False
    x1, y1, x2, y2 = box
    return x1 <= a.x <= x2 and y1 <= a.y <= y2


def is_distracting(step: Step) -> bool:
    """Does this step's screen show a visible pop-up that its action does not act on?"""
    target = step.action.target_element_id
    for e in step.observation.elements:
        if not e.visible or (target and e.id == target):
            continue
        ident = f"{e.resource_id} {e.class_name}".lower()
        popup = e.role.lower() in DISTRACTION_ROLES or any(w in ident for w in DISTRACTION_WORDS)
        if popup and not _acts_on(step, e.bbox.as_tuple()):
            return True
    return False


def difficulty_parts(traj: Trajectory) -> DifficultyParts:
    apps = {s.observation.app_id for s in traj.steps} | {traj.app_id}
    apps |= {s.action.app for s in traj.steps if s.action.app}
    gestures = [GESTURE_WEIGHT.get(str(s.action.type), 1.0) for s in traj.steps]
    return DifficultyParts(
        num_steps=len(traj.steps),
        num_apps=len(apps),
        gesture_complexity=round(sum(gestures) / len(gestures), 6),
        distractions=sum(1 for s in traj.steps if is_distracting(s)),
    )
