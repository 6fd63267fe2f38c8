"""Training metrics reach TensorBoard event files (read back with TensorBoard's own reader), once per step."""

from __future__ import annotations

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # pinned in requirements.txt

from training.metrics import MetricsLog, read_metrics


def scalars(out, tag: str) -> list[tuple[int, float]]:
    acc = EventAccumulator(str(out / "tensorboard"))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_metrics_are_written_to_tensorboard_and_a_resume_replaces_steps_past_the_checkpoint(tmp_path):
    m = MetricsLog(tmp_path)
    for step in range(1, 5):
        m.log(step, {"loss": 1.0 / step, "examples": 4, "loss_by_update": [0.1, 0.2]})
    m.close()
    assert scalars(tmp_path, "loss") == [(s, pytest.approx(1.0 / s)) for s in range(1, 5)]
    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    assert set(acc.Tags()["scalars"]) == {"loss", "examples"}  # lists stay in JSONL only

    # An event file whose name sorts after any new one (same second, higher writer counter, or a clock step back)
    # must not bring the abandoned steps back.
    (old,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    old.rename(old.with_name("events.out.tfevents.9999999999.host.999.99"))
    # Killed after step 4, resumed from the step-2 checkpoint: steps 3.. are logged again with new values.
    m = MetricsLog(tmp_path, resume_step=2)
    for step in range(3, 6):
        m.log(step, {"loss": 10.0 * step, "examples": 4})
    m.close()
    assert scalars(tmp_path, "loss") == [(1, 1.0), (2, 0.5), (3, 30.0), (4, 40.0), (5, 50.0)]
    assert [(r["step"], r["loss"]) for r in read_metrics(tmp_path)] == scalars(tmp_path, "loss")


def test_tensorboard_can_be_switched_off(tmp_path):
    m = MetricsLog(tmp_path, tensorboard=False)
    m.log(1, {"loss": 1.0})
    m.close()
    assert not (tmp_path / "tensorboard").exists() and read_metrics(tmp_path) == [{"step": 1, "loss": 1.0}]
