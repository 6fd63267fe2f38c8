"""GRPO with μ = grpo.updates_per_rollout > 1: the importance ratio leaves 1 and the clip really fires in the loop.

A tiny Qwen2-VL is first SFT-ed on one trajectory until sampled completions are sometimes well-formed, so a
group's rewards differ, advantages are non-zero and an update moves the policy. Then one GRPO step with μ = 1 and
one with μ = 2 run from the same checkpoint with the same seed: the μ = 2 run's first update must be the μ = 1
update exactly (same rollouts, old log-probs = the policy's own), and its second update must see ratios ≠ 1
with a non-zero clip fraction.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_model import write_dataset
from typer.testing import CliRunner

from pipelines.cli import app
from training.metrics import read_metrics

pytestmark = pytest.mark.slow

runner = CliRunner()


def _ok(args: list[str]) -> None:
    res = runner.invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def sft_model(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("grpo-updates")
    _ok(["train", "make-tiny-model", "--out", str(root / "tiny")])
    data, _ = write_dataset(root / "ds", n_traj=1, steps=3, files=1)
    cfg = root / "sft.yaml"
    cfg.write_text("optim: {lr: 0.01, batch_size: 4, schedule: constant}\nrun: {save_every: 1000}\n"
                   "data: {mix: direct, max_pixels: 12544, min_pixels: 784}\n")
    _ok(["train", "sft", "--config", str(cfg), "--data", str(data), "--model", str(root / "tiny"),
         "--out", str(root / "sft"), "--max-steps", "50", "--no-progress"])
    return data, root / "sft" / "final"


def _grpo(root: Path, data: Path, model: Path, mu: int) -> dict:
    cfg = root / f"grpo-{mu}.yaml"
    cfg.write_text("optim: {lr: 0.01, batch_size: 2}\nrun: {save_every: 1000}\n"
                   "data: {max_pixels: 12544, min_pixels: 784}\n"
                   f"grpo: {{num_generations: 8, max_new_tokens: 60, temperature: 1.0, kl_coef: 0.01, "
                   f"updates_per_rollout: {mu}}}\n")
    out = root / f"grpo-{mu}"
    _ok(["train", "grpo", "--config", str(cfg), "--data", str(data), "--model", str(model), "--out", str(out),
         "--max-steps", "1", "--no-progress"])
    (m,) = read_metrics(out)
    return m


def test_more_updates_per_rollout_make_the_ratio_and_clip_real(sft_model, tmp_path):
    data, model = sft_model
    one = _grpo(tmp_path, data, model, 1)
    # Precondition: rewards vary inside a group, otherwise every advantage is 0 and nothing can move.
    assert 0.0 < one["format"] < 1.0, one
    assert one["grad_norm"] > 0
    # μ = 1: one update from the rollouts' own policy: ratio exactly 1, nothing clipped.
    assert one["ratio_mean"] == 1.0 and one["clip_fraction"] == 0.0
    assert "loss_by_update" not in one

    two = _grpo(tmp_path, data, model, 2)
    assert two["reward"] == one["reward"]  # the same rollouts
    # The first of the two updates is the μ = 1 update, bit for bit.
    assert two["loss_by_update"][0] == one["loss"]
    assert two["ratio_mean_by_update"][0] == 1.0 and two["clip_fraction_by_update"][0] == 0.0
    # The second update sees the policy moved by the first against the held-fixed old log-probs.
    assert two["ratio_mean_by_update"][1] != pytest.approx(1.0, abs=1e-3)
    assert two["clip_fraction_by_update"][1] > 0.0
    assert two["clip_fraction"] == pytest.approx(sum(two["clip_fraction_by_update"]) / 2)


def test_updates_per_rollout_below_one_is_a_config_error(tmp_path):
    data, model = tmp_path / "ds", tmp_path / "model"  # the config is checked before either is read
    data.mkdir()
    model.mkdir()
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("grpo: {updates_per_rollout: 0}\n")
    res = runner.invoke(app, ["train", "grpo", "--config", str(cfg), "--data", str(data), "--model", str(model),
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "grpo.updates_per_rollout" in res.output
