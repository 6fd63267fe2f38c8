"""Trajectory difficulty, MobileRL-style: 0.4·steps + 0.2·apps + 0.2·gesture complexity + 0.2·distractions.

Each term is scaled to [0, 1] before weighting (steps / 20, apps / 3, mean gesture weight / 5,
distracting steps / steps, all capped at 1) so the score is in [0, 1] and comparable across sources.
Gesture weights follow MobileRL: tap 1, swipe 2, long-press 3, multi-touch 5 (typing and keys count as
taps, scrolls as swipes). A distraction is a step whose screen shows a dialog, pop-up or ad.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas import Trajectory

GESTURE_WEIGHT = {"click": 1.0, "select": 1.0, "type": 1.0, "key": 1.0, "swipe": 2.0, "scroll": 2.0,
                  "long_press": 3.0, "multi_touch": 5.0}
DISTRACTION_ROLES = {"dialog", "alertdialog", "popup", "banner-ad", "ad"}
DISTRACTION_WORDS = ("popup", "pop-up", "modal", "dialog", "advert", "interstitial")


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
    gesture_complexity: float
    distractions: int

    def score(self, w: Weights = Weights()) -> float:
        terms = (
            w.steps * min(1.0, self.num_steps / 20),
            w.apps * min(1.0, self.num_apps / 3),
            w.gesture * min(1.0, self.gesture_complexity / 5),
            w.distractions * min(1.0, self.distractions / max(1, self.num_steps)),
        )
        return round(sum(terms), 6)


def _distracting(step) -> bool:
    for e in step.observation.elements:
        if not e.visible:
            continue
        role = e.role.lower()
        ident = f"{e.resource_id} {e.class_name}".lower()
        if role in DISTRACTION_ROLES or any(w in ident for w in DISTRACTION_WORDS):
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
        distractions=sum(1 for s in traj.steps if _distracting(s)),
    )
