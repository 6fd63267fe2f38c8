"""Task kinds beyond reaching a screen or filling a form: each module finds its goals in the crawl graph.

- ``mutations``: a control whose press changed the app's data inside an environment (``Transition.mutates``) —
  delete, toggle — and the recorded effect every mutating goal carries (``Goal.effects``);
- ``search``: a query typed into a search field, submitted, and one result opened;
- ``composite``: chains of accepted goals in one instruction, routed only through controls the screen explains;
- ``templates``: sentences an app repeats on every page with one name swapped in, which no answer may quote.

``extra_plans`` is the one hook ``goals.Planner.plans`` calls for the single-goal kinds; ``composite_plans`` runs
on the plans that survived the planner's checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.synthesis.kinds.composite import composite_plans
from pipelines.synthesis.kinds.mutations import effects_of, mutation_plans
from pipelines.synthesis.kinds.search import is_search_session, search_plans

if TYPE_CHECKING:
    from pipelines.synthesis.plan_parts import GoalPlan, PlanContext

__all__ = ["composite_plans", "effects_of", "extra_plans", "is_search_session"]


def extra_plans(planner: PlanContext) -> list[GoalPlan]:
    """The single-goal plans of the kinds in this package (search, delete, toggle)."""
    return search_plans(planner) + mutation_plans(planner)
