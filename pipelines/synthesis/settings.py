"""Which goal plans synthesis turns into tasks: one settings model, read by every way synthesis is run.

``trajforge synth`` takes its flags' defaults from these fields, the nightly config's ``synthesis.plans`` section
is this model, and the runner, the planner and the prober read the same instance — so a bound or a default lives
here once and a limit given anywhere is the limit everywhere (``max_steps`` above the old fixed 14 included).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import ConfigDict, Field

from schemas.base import ConfigModel

PlanKind = Literal["screen", "item", "answer", "create", "edit", "setting", "delete", "toggle", "search",
                   "composite"]
PLAN_KINDS: tuple[PlanKind, ...] = get_args(PlanKind)


class PlanConfig(ConfigModel):
    """Goal plans to synthesize: their kinds, how long one may be, and how many per graph."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Longest task in steps, the final done/answer step included: a longer plan is refused as plan_too_long.
    max_steps: int = Field(default=14, ge=2)
    kinds: tuple[PlanKind, ...] = Field(default=PLAN_KINDS, min_length=1)
    max_plans: int = Field(default=500, ge=1)


def default(field: str) -> object:
    """A field's default, for a CLI flag that offers it."""
    return PlanConfig.model_fields[field].default
