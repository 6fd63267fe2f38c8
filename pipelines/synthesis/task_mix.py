"""What a set of synthesized tasks teaches: how long, how composite, how mutating, how varied.

Counted over trajectories (one language's copy of a task counts once per language, as training sees it):

- ``long_task_share``: tasks of ``LONG_STEPS`` steps or more (the terminal step included) / tasks;
- ``composite_share``: tasks whose goal is a chain of goals (``GoalKind.COMPOSITE``) / tasks;
- ``mutation_share``: tasks whose goal changes the app's data — create, edit, setting, delete, toggle, or a
  composite with a recorded effect — / tasks;
- ``task_diversity``: distinct (goal kind, goal screen state, instruction template) / tasks, where the template is
  the instruction with its quoted values and numbers blanked ("Open the note “…”."): ten tasks that open ten
  rows of one list in one phrasing are one way of asking; distinct strings alone would count them ten times.

``python -m pipelines.synthesis.task_mix OUT`` prints them as ``BENCH`` lines for a ``trajforge synth`` output.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from schemas import GoalKind, Trajectory

LONG_STEPS = 6
MUTATING = {GoalKind.CREATE, GoalKind.EDIT, GoalKind.SETTING, GoalKind.DELETE, GoalKind.TOGGLE}
QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"|「[^」]*」|\d+")


def template(instruction: str) -> str:
    """The instruction's wording with what it quotes blanked."""
    return " ".join(QUOTED.sub("“…”", instruction).split()).casefold()


def mutates(t: Trajectory) -> bool:
    goal = t.task.goal
    if goal is None:
        return False
    if goal.kind == GoalKind.COMPOSITE:
        return bool(goal.effects) or any(k.value in goal.summary for k in MUTATING)
    return goal.kind in MUTATING


def task_mix(trajs: Iterable[Trajectory]) -> dict[str, float]:
    ts = list(trajs)
    n = len(ts) or 1
    kinds = [str(t.task.goal.kind) if t.task.goal is not None else "" for t in ts]
    shapes = {(k, t.task.goal.state if t.task.goal else "", template(t.task.instruction)) for k, t in zip(kinds, ts,
                                                                                                      strict=True)}
    return {
        "long_task_share": sum(len(t.steps) >= LONG_STEPS for t in ts) / n,
        "composite_share": sum(k == GoalKind.COMPOSITE.value for k in kinds) / n,
        "mutation_share": sum(mutates(t) for t in ts) / n,
        "task_diversity": len(shapes) / n,
    }


def main(argv: list[str] | None = None) -> None:
    from schemas.recordio import iter_records

    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        raise SystemExit("usage: python -m pipelines.synthesis.task_mix SYNTH_OUT_DIR")
    trajs = [p.record for p in iter_records(Path(args[0]) / "trajectories.parquet") if p.ok]
    for key, value in task_mix(t for t in trajs if isinstance(t, Trajectory)).items():
        print(f"BENCH {key}={value:.3f}")


if __name__ == "__main__":
    main()
