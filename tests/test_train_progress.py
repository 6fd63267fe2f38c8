"""ComputerRL's progress reward with the offline judge: graph distance to the task's goal on the toy notes graph."""

from __future__ import annotations

from test_synth_toygraph import click, make_observation, notes_graph

from schemas import Action, Goal, Step, Task, Trajectory, samples_from_trajectory
from training.progress import MINOR, NONE, REGRESSION, SIGNIFICANT, GraphDistanceJudge


def _task(goal: Goal | None, last_next: str | None = None) -> Trajectory:
    """'Create a note': notes → (New note) → form → (Save) → note."""
    steps = [
        Step(index=0, observation=make_observation("notes", None), action=click("notes", "new"), instruction="New"),
        Step(index=1, observation=make_observation("form", None), action=click("form", "save"), instruction="Save",
             next_observation_id=last_next),
    ]
    return Trajectory(id="t1", task=Task(id="k1", instruction="Create a note", app_id="notes", goal=goal),
                      steps=steps, app_id="notes")


def test_graph_distance_progress_on_the_rubric():
    graph = notes_graph()
    traj = _task(Goal(kind="create", state="note"))
    judge = GraphDistanceJudge([graph], [traj])
    on_notes, on_form = samples_from_trajectory(traj)
    assert judge.distances("note")["notes"] == 2 and judge.distances("note")["settings"] == 3
    assert judge.score(on_notes, click("notes", "new")) == MINOR  # notes (2) → form (1)
    assert judge.score(on_form, click("form", "save")) == SIGNIFICANT  # → the goal
    assert judge.score(on_notes, click("notes", "settings-link")) == REGRESSION  # 2 → 3
    assert judge.score(on_notes, Action(type="wait")) == NONE  # no recorded edge: no progress claimed
    assert judge.score(on_notes, None) == NONE  # an unparseable answer


def test_goal_from_the_goal_observation_or_the_recorded_end():
    graph = notes_graph()
    note_obs = make_observation("note", None).id
    by_obs = GraphDistanceJudge([graph], [_task(Goal(kind="create", observation_id=note_obs))])
    by_end = GraphDistanceJudge([graph], [_task(None, last_next=note_obs)])
    for judge in (by_obs, by_end):
        assert judge.goal_by_traj == {"t1": "note"}
    unknown = GraphDistanceJudge([graph], [_task(None)])
    assert unknown.score(next(samples_from_trajectory(_task(None))), click("notes", "new")) == NONE
