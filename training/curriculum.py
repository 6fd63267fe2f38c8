"""Which tasks GRPO trains on next: MobileRL's success-band curriculum, plus an optional backward curriculum.

Why: a group whose samples all succeed or all fail has zero advantage everywhere and teaches nothing. The
sampler keeps a running success rate per task (exponential moving average of step rewards ≥ ``success_at``)
and samples tasks whose rate is inside ``band`` (default 0.3–0.7), weighted by difficulty
(MobileRL: 0.4·steps + 0.2·apps + 0.2·gesture complexity + 0.2·distractions, each normalized to [0, 1] here).
Unseen tasks count as in band (rate 0.5) so everything is tried once; when no task is in band it falls back to
the tasks nearest the band. The backward curriculum starts from the last steps of each trajectory and widens
toward the first as training proceeds (late steps are closest to the reward).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from schemas import Sample
from schemas.action import ActionType

GESTURE = {ActionType.CLICK: 1, ActionType.SWIPE: 2, ActionType.SCROLL: 2, ActionType.LONG_PRESS: 3}
MULTI_TOUCH = 5


def difficulty(steps: Sequence[Sample]) -> float:
    """MobileRL-style difficulty of one task from its steps, in [0, 1].

    >>> from schemas import Action
    >>> s = Sample.model_construct(action=Action(type="navigate_back"), num_steps=5, app_id="a", scores={})
    >>> round(difficulty([s]), 3)  # 0.4·(5/10) + 0.2·(1/3) + 0.2·(1/5) + 0.2·0
    0.307
    """
    if not steps:
        return 0.0
    n = max(s.num_steps for s in steps)
    apps = len({s.app_id for s in steps})
    gesture = max(GESTURE.get(ActionType(s.action.type), 1) for s in steps)
    distractions = max(float(s.scores.get("distractions", 0.0)) for s in steps)
    return (0.4 * min(n / 10, 1.0) + 0.2 * min(apps / 3, 1.0) + 0.2 * gesture / MULTI_TOUCH
            + 0.2 * min(distractions, 1.0))


@dataclass
class CurriculumSampler:
    """Band-limited, difficulty-weighted task sampler with running success rates (state is checkpointable)."""

    band: tuple[float, float] = (0.3, 0.7)
    momentum: float = 0.5  # weight of the old rate in the moving average
    success_at: float = 0.5  # a step reward at or above this counts as success
    seed: int = 0
    rates: dict[str, float] = field(default_factory=dict)
    draws: int = 0

    def rate(self, task: str) -> float:
        return self.rates.get(task, 0.5)

    def in_band(self, task: str) -> bool:
        lo, hi = self.band
        return lo <= self.rate(task) <= hi

    def update(self, task: str, rewards: Sequence[float]) -> None:
        """Fold one group's rewards into the task's running success rate."""
        if not rewards:
            return
        success = sum(r >= self.success_at for r in rewards) / len(rewards)
        old = self.rates.get(task)
        self.rates[task] = success if old is None else self.momentum * old + (1 - self.momentum) * success

    def choose(self, tasks: dict[str, float], k: int) -> list[str]:
        """``k`` task ids (with replacement) from ``tasks`` (id → difficulty), in band and difficulty-weighted."""
        if not tasks:
            raise ValueError("no tasks to sample from")
        rng = random.Random(f"{self.seed}:{self.draws}")
        self.draws += 1
        pool = [t for t in tasks if self.in_band(t)]
        if not pool:
            lo, hi = self.band
            dist = {t: max(lo - self.rate(t), self.rate(t) - hi) for t in tasks}
            best = min(dist.values())
            pool = [t for t, d in dist.items() if d == best]
        weights = [0.1 + tasks[t] for t in pool]
        return rng.choices(pool, weights=weights, k=k)

    def state(self) -> dict[str, object]:
        return {"rates": dict(self.rates), "draws": self.draws}

    def load(self, state: dict[str, object]) -> None:
        self.rates = dict(state.get("rates", {}))  # type: ignore[arg-type]
        self.draws = int(state.get("draws", 0))  # type: ignore[arg-type]


def backward_window(num_steps: int, progress: float) -> int:
    """First step index eligible at training ``progress`` in [0, 1]: the last step first, all steps by the end.

    >>> [backward_window(5, p) for p in (0.0, 0.5, 1.0)]
    [4, 2, 0]
    """
    return max(0, min(num_steps - 1, round((num_steps - 1) * (1 - progress))))
