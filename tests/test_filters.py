"""Every filter, the difficulty definition, the facts and the dedupe decisions, as plain functions (no Beam).

Each test builds its records in memory (``tests.factories``) and runs in milliseconds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from filters.action_filters import ActionValidForPlatform, CoordsInImage, PointInTarget
from filters.base import Drop, RecordFilter, first_drop
from filters.dedupe import group_key, resolve, resolve_ids, step_members, trajectory_member
from filters.difficulty import DifficultyParts, difficulty_parts, is_distracting
from filters.facts import DEMO, NEGATIVE, RECOVERY, describe, goal_key, trajectory_kind
from filters.image_filters import ImageSideWithin, ImageSizeMatches, ImageUsable
from filters.item import Item, ScreenCheck, ScreenFacts, SourceRecord
from filters.quality import quality_rejections, screen_gates, step_gates, trajectory_gates
from filters.record_filters import Flattenable, JudgeScoreAtLeast, ReplaySucceeded, SchemaValid
from filters.text_filters import InstructionPresent, LanguageMatches, ReasoningConsistent, ReasoningLength
from filters.text_similarity import MinHashClusterer, argument_signature
from filters.verdicts import EXACT, NEAR_INSTRUCTIONS, NEAR_SCREENS, QUALITY, Rejection, Weights, merge
from schemas import Action, BBox, Element, Lineage, Sample, Trajectory, samples_from_trajectory
from schemas.errors import FieldError
from schemas.trajectory import Goal
from tests import factories as fx

ROOT = Path(__file__).resolve().parent.parent
SHA = "ab" * 32


def _sample(**changes) -> Sample:
    s = next(samples_from_trajectory(fx.trajectory(n_steps=2)))
    return s.model_copy(update=changes)


def _traj(n_steps: int = 2, seed: int = 0, tid: str | None = None, task: str | None = None, **changes) -> Trajectory:
    t = fx.trajectory(n_steps=n_steps, seed=seed, tid=tid)
    if task is not None:
        t = t.model_copy(update={"task": t.task.model_copy(update={"instruction": task})})
    return t.model_copy(update=changes)


def _facts(t: Trajectory, key: int = 1):
    return describe(key, t, list(samples_from_trajectory(t)), step_gates(), trajectory_gates())


# --- the engine boundary -------------------------------------------------------------------------------------------

def test_filters_import_no_beam():
    for path in sorted((ROOT / "filters").glob("*.py")):
        tree = ast.parse(path.read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in names if m.split(".")[0] == "apache_beam"], path.name


def test_a_raising_filter_is_an_error_drop_not_a_verdict():
    class Broken(RecordFilter[Item]):
        name = "broken"

        def decide(self, item: Item):
            raise KeyError("boom")

    drop = first_drop([InstructionPresent(), Broken(), PointInTarget()], Item(_sample()))
    assert drop == Drop("broken_error", "KeyError: 'boom'", error=True)


def test_negatives_skip_the_gates_they_fail_by_construction():
    s = _sample()
    moved = s.model_copy(update={"action": Action.model_validate(
        {**s.action.model_dump(exclude={"x_norm", "y_norm"}), "x": 600.0})})
    assert first_drop([PointInTarget()], Item(moved)).reason == "point_outside_bbox"
    assert first_drop([PointInTarget()], Item(moved), negative=True) is None
    assert first_drop([CoordsInImage()], Item(moved), negative=True) is None  # integrity gates still apply


# --- record and trajectory gates --------------------------------------------------------------------------------

def test_schema_valid_names_the_broken_field():
    assert SchemaValid()(SourceRecord("f:1", record=_traj())) is None
    bad = SourceRecord("f:2", errors=(FieldError("t1", "task", "Field required", 2),))
    drop = SchemaValid()(bad)
    assert drop.reason == "missing_field" and "f:2" in drop.detail and "task" in drop.detail


def test_flattenable_refuses_an_action_on_another_image_size():
    t = _traj()
    assert Flattenable()(t) is None
    step = t.steps[0]
    wrong = step.model_copy(update={"action": Action(type="click", x=10, y=10, image_width=640, image_height=360)})
    drop = Flattenable()(t.model_copy(update={"steps": [wrong, *t.steps[1:]]}))
    assert drop.reason == "sample_invalid" and "640x360" in drop.detail


def test_replay_and_judge_verdicts():
    assert ReplaySucceeded()(_traj(verification="replayed")) is None
    drop = ReplaySucceeded()(_traj(verification="replay_failed", scores={"replay_failed_step": 3.0}))
    assert drop.reason == "replay_failed" and "step 3" in drop.detail
    assert JudgeScoreAtLeast(minimum=3)(_traj(scores={"judge": 3.0})) is None
    assert JudgeScoreAtLeast(minimum=3)(_traj(scores={})) is None  # no judge: nothing to hold against it
    assert JudgeScoreAtLeast(minimum=3)(_traj(scores={"judge": 2.5})).reason == "low_judge_score"


# --- step gates ----------------------------------------------------------------------------------------------------

def test_instruction_present():
    assert InstructionPresent()(Item(_sample())) is None
    assert InstructionPresent()(Item(_sample(instruction="  "))).reason == "empty_instruction"
    invisible = InstructionPresent()(Item(_sample(instruction="\u200b\u200b")))
    assert invisible.reason == "empty_instruction" and "\\u200b" in invisible.detail


def test_language_matches():
    assert LanguageMatches()(Item(_sample())) is None
    assert LanguageMatches()(Item(_sample(instruction="点击保存按钮"))).reason == "wrong_language"
    zh = _sample(language="zh", task="添加一条笔记", instruction="点击保存")
    assert LanguageMatches()(Item(zh)) is None
    assert LanguageMatches()(Item(zh.model_copy(update={"instruction": "Tap save"}))).reason == "wrong_language"


def test_reasoning_length():
    assert ReasoningLength(5)(Item(_sample(reasoning="one two three"))) is None
    assert ReasoningLength(5)(Item(_sample(reasoning="word " * 6))).reason == "reasoning_too_long"


def test_reasoning_consistent():
    assert ReasoningConsistent()(Item(_sample(reasoning="The list is open. Tap the note."))) is None
    drop = ReasoningConsistent()(Item(_sample(reasoning="The list is long. Scroll down to find it.")))
    assert drop.reason == "reasoning_action_mismatch"


def test_action_valid_for_platform():
    assert ActionValidForPlatform()(Item(_sample())) is None
    home = _sample(action=Action(type="navigate_home"))
    assert ActionValidForPlatform()(Item(home)).reason == "action_invalid_for_platform"
    assert ActionValidForPlatform()(Item(home.model_copy(update={"platform": "android"}))) is None


def test_coords_in_image():
    assert CoordsInImage()(Item(_sample())) is None
    off = _sample(image_width=100, image_height=100)  # unvalidated copy: the point (140, 140) is off a 100x100 image
    assert CoordsInImage()(Item(off)).reason == "coords_outside_image"


def test_point_in_target():
    assert PointInTarget()(Item(_sample())) is None
    s = _sample()
    moved = s.model_copy(update={"action": Action.model_validate(
        {**s.action.model_dump(exclude={"x_norm", "y_norm"}), "x": 600.0})})
    assert PointInTarget()(Item(moved)).reason == "point_outside_bbox"


def test_image_gates():
    ok = ScreenFacts(SHA, width=1280, height=720)
    assert ImageUsable()(ScreenCheck(0, 1280, 720, ok)) is None
    assert ImageUsable()(ScreenCheck(0, 1280, 720, None)).reason == "image_not_inspected"
    assert ImageUsable()(ScreenCheck(0, 1280, 720, ScreenFacts(SHA, "image_blank", "flat"))).reason == "image_blank"
    assert ImageSizeMatches()(ScreenCheck(0, 1280, 720, ok)) is None
    assert ImageSizeMatches()(ScreenCheck(0, 640, 360, ok)).reason == "image_size_mismatch"


def test_image_side_within_reads_the_declared_size():
    assert ImageSideWithin(1280)(Item(_sample())) is None  # 1280x720
    drop = ImageSideWithin(1000)(Item(_sample()))
    assert drop.reason == "image_too_large" and "1280x720" in drop.detail
    assert [g.name for g in step_gates(max_image_side=1000)][-1] == "image_too_large"


# --- the quality stage's decision ----------------------------------------------------------------------------------

def test_a_failing_step_rejects_its_trajectory_and_is_named():
    t = _traj(n_steps=3)
    bad = t.steps[1].model_copy(update={"instruction": ""})
    f = _facts(t.model_copy(update={"steps": [t.steps[0], bad, t.steps[2]]}))
    screens = {s.screenshot: ScreenFacts(s.screenshot, width=1280, height=720) for s in f.steps}
    [r] = quality_rejections(f, screens, screen_gates(), "trajectory")
    assert (r.stage, r.reason, r.step) == (QUALITY, "empty_instruction", -1) and r.detail.startswith("step 1:")
    per_step = quality_rejections(f, screens, screen_gates(), "step")
    assert [(r.step, r.record_id) for r in per_step] == [(1, f"{t.id}:1")]  # step units: only the step itself
    screens[f.steps[2].screenshot] = ScreenFacts(f.steps[2].screenshot, "image_blank", "flat")
    assert [r.step for r in quality_rejections(f, screens, screen_gates(), "step")] == [1, 2]


# --- difficulty -----------------------------------------------------------------------------------------------------

def test_difficulty_normalisation():
    assert DifficultyParts(1, 1, 1.0, 0).score() == 0.0  # the easiest task is 0
    assert DifficultyParts(20, 3, 5.0, 20).score() == 1.0  # and the hardest 1
    assert DifficultyParts(20, 1, 1.0, 0).score() == pytest.approx(0.4)
    assert DifficultyParts(3, 2, 2.0, 1).terms() == pytest.approx((2 / 19, 0.5, 0.25, 1 / 3))
    parts = difficulty_parts(_traj(n_steps=2))
    assert (parts.num_steps, parts.num_apps, parts.gesture_complexity, parts.distractions) == (2, 1, 1.0, 0)


def test_a_distraction_is_a_popup_the_step_does_not_act_on():
    t = _traj(n_steps=1)
    step = t.steps[0]
    popup = Element(id="rate", role="dialog", text="Rate this app!", bbox=BBox(x1=600, y1=300, x2=900, y2=500))
    shown = step.model_copy(update={"observation": step.observation.model_copy(
        update={"elements": [*step.observation.elements, popup]})})
    assert not is_distracting(step) and is_distracting(shown)
    tap_it = shown.model_copy(update={"action": Action(type="click", x=700, y=400, image_width=1280,
                                                       image_height=720, target_element_id="rate")})
    assert not is_distracting(tap_it)  # a dialog the path acts on is part of the path


# --- facts, keys and kinds ---------------------------------------------------------------------------------------

def test_kinds_and_goal_keys():
    t = _traj()
    assert trajectory_kind(t) == DEMO
    assert trajectory_kind(t.model_copy(update={"lineage": Lineage(negative=True)})) == NEGATIVE
    wrong = t.steps[0].model_copy(update={"train_target": False})
    assert trajectory_kind(t.model_copy(update={"steps": [wrong, t.steps[1]]})) == RECOVERY
    assert goal_key(None) == ""
    a, b = Goal(kind="screen", state="s1"), Goal(kind="screen", state="s2")
    assert goal_key(a) != goal_key(b) and goal_key(a) == goal_key(a.model_copy(update={"summary": "x"}))


def test_exact_step_keys_are_task_screen_action_and_history():
    a, b = _facts(_traj(seed=0)), _facts(_traj(seed=0, tid="other"))
    assert [s.exact for s in a.steps] == [s.exact for s in b.steps] and a.content == b.content
    c = _facts(_traj(seed=0, task="Delete the groceries note"))
    assert all(x.exact != y.exact for x, y in zip(a.steps, c.steps, strict=True))


def test_argument_signature_separates_names_numbers_and_quotes():
    assert argument_signature("…then open the 账户 screen") != argument_signature("…then open the 升级到专业版 screen")
    assert argument_signature("Add entry 3") != argument_signature("Add entry 4")
    assert argument_signature("Type “milk”") == argument_signature("Enter “Milk”")
    assert argument_signature("打开设置") == argument_signature("请打开设置")  # CJK wording is not an argument


# --- dedupe decisions ---------------------------------------------------------------------------------------------

def _source(key: int) -> str:
    return f"in.jsonl:{key}"


def test_one_representative_for_every_relation_and_rejects_name_it():
    best = _facts(_traj(seed=0, tid="best", scores={"judge": 5.0}), key=1)
    copy = _facts(_traj(seed=0, tid="copy", scores={"judge": 4.0}), key=2)
    recapture = _facts(_traj(seed=1, tid="recapture", scores={"judge": 4.5}), key=3)
    para = _facts(_traj(seed=0, tid="para", task="Add a note about groceries!", scores={"judge": 3.0}), key=4)
    other = _facts(_traj(seed=1, tid="other-task", task="Archive the travel note", scores={"judge": 3.0}), key=5)
    clusters = {s.screenshot: b.screenshot for f in (recapture, other)  # seed 1's screens: re-captures of seed 0's
                for s, b in zip(f.steps, best.steps, strict=True)}
    members = [trajectory_member(f, clusters) for f in (para, other, copy, recapture, best)]
    rejections, survivors = resolve(members, _source, MinHashClusterer(0.8))
    assert sorted(s.id for s in survivors) == ["best", "other-task"]  # another task on the same screens is kept
    by_key = dict(rejections)
    assert (by_key[2].stage, by_key[3].stage, by_key[4].stage) == (EXACT, NEAR_SCREENS, NEAR_INSTRUCTIONS)
    assert all("best (in.jsonl:1)" in r.detail for r in by_key.values())


def test_same_goal_keeps_the_shortest_routes_and_rejects_detours():
    best = _facts(_traj(seed=0, tid="best", scores={"judge": 5.0}), key=1)
    alternative = _facts(_traj(seed=1, tid="alt"), key=2)  # as short, through other screens: kept
    detour = _facts(_traj(n_steps=3, seed=2, tid="detour"), key=3)
    reworded = _facts(_traj(seed=1, tid="reworded", task="Add a note about groceries."), key=4)  # alt's route
    rejections, survivors = resolve([trajectory_member(f, {}) for f in (detour, reworded, alternative, best)],
                                    _source, MinHashClusterer(0.8))
    assert [s.id for s in survivors] == ["best", "alt"]
    why = {k: r.detail for k, r in rejections}
    assert why[3].startswith("a longer path (3 steps, 2 for the kept one), same task (no goal recorded) as best")
    assert why[4].startswith("the same route, same task (no goal recorded) as best")


def test_different_goals_and_kinds_never_merge():
    a = _facts(_traj(seed=0, tid="a", task="Open the settings screen"), key=1)
    b = _facts(_traj(n_steps=3, seed=3, tid="b", task="Open the settings screen"), key=2)  # a detour
    recovery = _facts(_traj(seed=4, tid="r", task="Open the settings screen", scores={"recovery": 1.0}), key=3)
    rejections, survivors = resolve([trajectory_member(f, {}) for f in (a, b, recovery)], _source,
                                    MinHashClusterer(0.8))
    assert [k for k, _ in rejections] == [2] and {s.id for s in survivors} == {"a", "r"}
    t = _traj(seed=0, task="Open the settings screen")
    on = [t.model_copy(update={"task": t.task.model_copy(update={"goal": Goal(kind="screen", state=s)})})
          for s in ("settings", "account")]
    assert group_key(_facts(on[0])) != group_key(_facts(on[1]))  # different end states: never compared
    phone = t.model_copy(update={"steps": [s.model_copy(update={"observation": s.observation.model_copy(update={
        "device": s.observation.device.model_copy(update={"kind": "phone"})})}) for s in t.steps]})
    assert group_key(_facts(phone)) != group_key(_facts(t))  # nor are phone and desktop trajectories


def test_noise_never_wins_a_tie():
    clean = _facts(_traj(seed=0, tid="zz-clean"), key=9)
    noise = Lineage(source="noise:wrong_label", negative=True)
    noisy = _facts(_traj(seed=0, tid="aa-noise", lineage=noise), key=1)
    rejections, survivors = resolve([trajectory_member(f, {}) for f in (noisy, clean)], _source)
    assert [s.id for s in survivors] == ["zz-clean"] and [k for k, _ in rejections] == [1]
    same_id = _facts(_traj(seed=5, tid="zz-clean", lineage=noise), key=1)
    _, [noisy_survivor] = resolve([trajectory_member(same_id, {})], _source)
    lost, best = resolve_ids([noisy_survivor, survivors[0]], _source)
    assert best.key == 9 and [k for k, _ in lost] == [1]


def test_shared_steps_of_kept_trajectories_are_weighted_not_deleted():
    demo = _facts(_traj(n_steps=3, seed=0, tid="demo"), key=1)
    t = _traj(n_steps=3, seed=0, tid="rec", scores={"recovery": 1.0})
    other = _traj(n_steps=1, seed=7)
    wrong = other.steps[0].model_copy(update={"index": 2, "train_target": False})
    rec = _facts(t.model_copy(update={"steps": [*t.steps[:2], wrong, t.steps[2].model_copy(update={"index": 3})]}),
                 key=2)
    _, survivors = resolve([trajectory_member(f, {}) for f in (demo, rec)], _source)
    w = {s.id: s.weights for s in survivors}
    assert w["demo"] == (0.5, 0.5, 1.0) and w["rec"] == (0.5, 0.5, 1.0, 1.0)  # the shared prefix counts once


def test_step_units_drop_duplicate_rows_and_collapse_task_free_grounding_rows():
    def grounding(tid: str, words: str) -> Trajectory:
        t = _traj(n_steps=1, seed=0, tid=tid, task=words)
        return t.model_copy(update={"steps": [t.steps[0].model_copy(update={"instruction": words})]})

    a, b = _facts(grounding("g1", "Type milk and eggs"), 1), _facts(grounding("g2", "Enter the shopping list"), 2)
    assert a.grounding and b.grounding
    [(ga, ma)], [(gb, mb)] = step_members(a, {}), step_members(b, {})
    assert ga == gb
    rejections, survivors = resolve([ma, mb], _source)
    assert [s.id for s in survivors] == ["g1:0"]
    assert [(k, r.stage, r.step, r.record_id) for k, r in rejections] == [(2, NEAR_SCREENS, 0, "g2:0")]


def test_merge_keeps_the_earliest_stage_and_the_weights():
    parts = [Rejection(NEAR_SCREENS, "near_duplicate_screen", "", "t:1", 1), Weights((0.5, 1.0)),
             Rejection(QUALITY, "image_blank", "", "t:1", 1)]
    out = merge(parts)
    assert out.step_rejection(1).stage == QUALITY and out.weight(0) == 0.5 and out.rejection is None
    assert merge([*parts, Rejection(EXACT, "exact_duplicate", "", "t")]).rejection.stage == EXACT
