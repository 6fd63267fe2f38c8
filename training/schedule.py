"""Learning-rate schedules: linear warmup, then cosine / linear decay or a constant rate.

The formulas are HF transformers' (``get_cosine_schedule_with_warmup``, ``get_linear_schedule_with_warmup``,
``get_constant_schedule_with_warmup`` and the cosine-with-min-lr variant), so a run compared against GUI-Libra's
SFT (HF Trainer, cosine, warmup ratio 0.01) or TRL (linear) follows the same curve step for step: the factor at
optimizer step s is s / warmup during warmup (the first step runs at 0, as HF's does), then decays over the
remaining steps to ``min_lr_ratio`` of the peak. GUI-Libra's RL stage (EasyR1) uses a constant rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

SCHEDULES = ("cosine", "linear", "constant")


def warmup_steps(total: int, warmup: int = 0, warmup_ratio: float | None = None) -> int:
    """Warmup length in optimizer steps: an explicit count wins, else ⌈ratio · total⌉ (HF's rounding)."""
    if warmup:
        return warmup
    if warmup_ratio:
        return math.ceil(warmup_ratio * total)
    return 0


def lr_factor(schedule: str, total: int, warmup: int = 0, min_lr_ratio: float = 0.0) -> Callable[[int], float]:
    """The multiplier of the peak learning rate at optimizer step ``s`` (for ``torch.optim.lr_scheduler.LambdaLR``).

    >>> f = lr_factor("cosine", total=10, warmup=2)
    >>> [round(f(s), 3) for s in (0, 1, 2, 6, 10)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    >>> g = lr_factor("linear", total=10, warmup=0, min_lr_ratio=0.1)
    >>> [round(g(s), 3) for s in (0, 5, 10)]
    [1.0, 0.55, 0.1]
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r} ({', '.join(SCHEDULES)})")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio}")

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        if schedule == "constant":
            return 1.0
        progress = (step - warmup) / max(1, total - warmup)
        if schedule == "cosine":
            decay = max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
        else:
            decay = max(0.0, 1.0 - progress)
        return min_lr_ratio + (1.0 - min_lr_ratio) * decay

    return factor
