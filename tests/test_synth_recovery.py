"""Recovery samples and noise injection on the hand-checked toy graph."""

from __future__ import annotations

from test_synth_offline import offline_run
from test_synth_toygraph import notes_graph

from pipelines.synthesis.noise import KINDS, noisy_copies
from pipelines.synthesis.prompts import load_prompts
from pipelines.synthesis.recovery import recovery_trajectories
from schemas import Trajectory


def test_recovery_inserts_a_wrong_step_and_a_reflected_way_back_from_graph_edges() -> None:
    g = notes_graph()
    base = offline_run(g).trajectories
    rec = recovery_trajectories(g, base, load_prompts())
    target = next(t for t in rec if t.lineage.source_ids == ["e01", "e02", "e03", "e05", "e11", "e04"])
    # Intended: notes → "New note". Wrong: notes → "Settings"; back: settings → "All notes"; then the intended.
    k = int(target.scores["wrong_step"])
    assert k == 3 and target.scores["recovery_step"] == 4
    wrong, back, resumed = target.steps[3], target.steps[4], target.steps[5]
    assert wrong.action.target_element_id == "settings-link"
    assert back.action.target_element_id == "all-notes"
    assert back.reasoning.startswith("<reflection>This is Settings, not Your notes: tapping “Settings” was a "
                                     "mistake.</reflection>")
    assert "“All notes”" in back.reasoning and resumed.action.target_element_id == "new"
    assert [s.index for s in target.steps] == list(range(len(target.steps)))
    original = next(t for t in base if t.lineage.source_ids == ["e01", "e02", "e03", "e04"])
    assert target.task == original.task and target.id != original.id
    Trajectory.model_validate(target.model_dump())  # still a valid record
    # Every step's screen is the screen its action was recorded on: wrong and back are real graph edges.
    edges = {t.id: t for t in g.transitions}
    for sid, step in zip(target.lineage.source_ids, target.steps, strict=True):
        assert edges[sid].from_observation_id == step.observation.id


def test_noise_kinds_corrupt_exactly_the_labelled_step() -> None:
    base = offline_run(notes_graph()).trajectories
    noisy = noisy_copies(base, seed=1)
    kinds = {k for t in noisy for k in KINDS if t.scores.get(f"noise_{k}")}
    assert kinds == set(KINDS)
    originals = {t.id: t for t in base}
    for t in noisy:
        Trajectory.model_validate(t.model_dump())
        assert t.lineage.source.startswith("noise:")
        k = int(t.scores["noisy_step"])
        kind = t.lineage.source.split(":")[1]
        orig = next(o for o in originals.values() if t.id != o.id and o.lineage.source_ids == t.lineage.source_ids)
        if kind == "missing_step":
            assert len(t.steps) == len(orig.steps) - 1
            continue
        changed = [i for i, (a, b) in enumerate(zip(orig.steps, t.steps, strict=True))
                   if a.model_dump() != b.model_dump()]
        assert changed == [k], (kind, changed)
        step = t.steps[k]
        if kind == "moved_element":
            assert step.action.point_in_target() is False
        elif kind == "stale_element":
            assert step.observation.element(step.action.target_element_id) is None
        elif kind == "extra_popup":
            assert step.observation.elements[-1].role == "dialog"
        elif kind == "wrong_label":
            assert step.instruction != orig.steps[k].instruction


def test_cli_writes_recovery_and_labelled_noise(tmp_path) -> None:
    from test_synth_toygraph import write_graph
    from typer.testing import CliRunner

    from pipelines.cli import app
    from schemas.recordio import iter_records

    graph = write_graph(tmp_path / "g")
    r = CliRunner().invoke(app, ["synth", "--graph", str(graph), "--out", str(tmp_path / "o"), "--recovery",
                                 "--noise", "--walks", "0"])
    assert r.exit_code == 0, r.output
    trajs = [p.record for p in iter_records(tmp_path / "o" / "trajectories.parquet")]
    assert any(t.scores.get("recovery") for t in trajs)
    noisy = [p.record for p in iter_records(tmp_path / "o" / "noisy.parquet")]
    assert noisy and all(t.lineage.source.startswith("noise:") and "noisy_step" in t.scores for t in noisy)
    assert not {t.id for t in noisy} & {t.id for t in trajs}
