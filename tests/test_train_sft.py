"""End to end through the CLI on a tiny Qwen2-VL: SFT loss falls, resume is exact, rejects kept, eval, GRPO."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tiny_model import write_dataset
from typer.testing import CliRunner

from pipelines.cli import app
from training.curriculum import CurriculumSampler
from training.data import DataConfig, Renderer, SFTStream, ShardStream, collate, shard_files
from training.metrics import read_metrics
from training.models import load_model_and_processor

runner = CliRunner()


def _ok(args: list[str]):
    res = runner.invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    _ok(["train", "make-tiny-model", "--out", str(root / "tiny")])
    data, n_good = write_dataset(root / "ds", n_traj=4, steps=3, files=2, bad_rows=1)
    cfg = root / "sft.yaml"
    cfg.write_text("optim: {lr: 0.003, batch_size: 4, schedule: constant}\nrun: {save_every: 4, progress: false}\n"
                   "data: {max_pixels: 12544, min_pixels: 784}\n")
    return root, data, n_good, cfg


def _sft(root: Path, data: Path, cfg: Path, out: Path, steps: int):
    return _ok(["train", "sft", "--config", str(cfg), "--data", str(data), "--model", str(root / "tiny"),
                "--out", str(out), "--max-steps", str(steps), "--no-progress"])


def test_sft_loss_falls_resume_is_exact_and_rejects_are_kept(env):
    root, data, _, cfg = env
    full = root / "run-full"
    _sft(root, data, cfg, full, 12)
    losses = [m["loss"] for m in read_metrics(full)]
    assert len(losses) == 12
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3
    rejects = [json.loads(x) for x in (full / "rejects.jsonl").read_text().splitlines()]
    assert [r["record_id"] for r in rejects] == ["bad-0"] and rejects[0]["stage"] == "train.data"
    assert "step_index" in rejects[0]["detail"]

    # Stop after 4 steps (a checkpoint), then resume to 8: step 5 onward must repeat the uninterrupted run.
    part = root / "run-part"
    _sft(root, data, cfg, part, 4)
    _sft(root, data, cfg, part, 8)
    resumed = read_metrics(part)
    assert [m["step"] for m in resumed] == list(range(1, 9))  # each step logged exactly once
    for a, b in zip(resumed[4:8], read_metrics(full)[4:8], strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4)
    assert len((part / "rejects.jsonl").read_text().splitlines()) == 1  # not duplicated by the rerun
    # TensorBoard shows the same curve as the JSONL, each step once across the resume.
    acc = EventAccumulator(str(part / "tensorboard"))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [
        (m["step"], pytest.approx(m["loss"], rel=1e-6)) for m in resumed]
    assert (part / "final" / "config.json").exists()


@pytest.mark.slow
def test_killed_run_resumes_exactly_with_decay_schedule_and_shuffling(env):
    """A run with warmup + cosine decay and the default shuffle buffer, "killed" after its step-4 checkpoint (later
    checkpoints, final model and log lines removed, as kill -9 would leave it), resumes to the same losses."""
    root, data, _, _ = env
    cfg = root / "cosine.yaml"
    cfg.write_text("optim: {lr: 0.003, batch_size: 2, grad_accum: 2, warmup_steps: 2, schedule: cosine}\n"
                   "run: {save_every: 4, keep_checkpoints: 5, progress: false}\n"
                   "data: {max_pixels: 12544, min_pixels: 784}\n")
    full = root / "run-cosine"
    _sft(root, data, cfg, full, 8)
    ms = read_metrics(full)
    lrs = [m["lr"] for m in ms]
    assert lrs[0] == 0.0 and lrs[2] == pytest.approx(0.003) and lrs[-1] < lrs[3]  # warmup, then decay
    killed = root / "run-cosine-killed"
    shutil.copytree(full, killed)
    shutil.rmtree(killed / "checkpoints" / "step-00000008")
    shutil.rmtree(killed / "final")
    lines = (killed / "metrics.jsonl").read_text().splitlines()[:4]
    (killed / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    _sft(root, data, cfg, killed, 8)
    for a, b in zip(read_metrics(killed)[4:], ms[4:], strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5) and a["lr"] == pytest.approx(b["lr"])


def test_eval_reports_step_accuracy(env, tmp_path):
    root, data, n_good, cfg = env
    res = _ok(["eval", "--data", str(data), "--model", str(root / "tiny"), "--out", str(tmp_path),
               "--max-new-tokens", "8", "--no-progress", "--config", str(cfg)])
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["steps"] == n_good and report["rejected_rows"] == 1
    assert report["pointed_steps"] == 8  # 4 trajectories × 2 click steps
    for k in ("type_accuracy", "grounding_accuracy", "step_success"):
        assert 0.0 <= report[k] <= 1.0
    assert len((tmp_path / "eval_steps.jsonl").read_text().splitlines()) == n_good
    assert "step_success" in res.output


def test_grpo_runs_logs_rewards_and_checkpoints_curriculum(env):
    root, data, _, _ = env
    cfg = root / "grpo.yaml"
    cfg.write_text("optim: {lr: 0.001, batch_size: 2}\nrun: {save_every: 2, progress: false}\n"
                   "grpo: {num_generations: 4, max_new_tokens: 12, kl_coef: 0.01}\n"
                   "data: {max_pixels: 12544, min_pixels: 784}\n")
    out = root / "grpo"
    _ok(["train", "grpo", "--config", str(cfg), "--data", str(data), "--model", str(root / "tiny"),
         "--out", str(out), "--max-steps", "2", "--no-progress"])
    ms = read_metrics(out)
    assert [m["step"] for m in ms] == [1, 2]
    assert {"reward", "accuracy", "format", "kl", "clip_fraction", "in_band"} <= set(ms[0])
    state = json.loads(next((out / "checkpoints").glob("step-*/state.json")).read_text())
    assert len(state["curriculum"]["rates"]) >= 1 and state["kind"] == "grpo"
    # The untrained model scores 0 everywhere: every group has zero variance, so none is trained on (and the run
    # goes on); with zero_variance: resample, replacement prompts are drawn up to max_resample per step.
    assert all(m["groups_kept"] == 0 and m["updated"] == 0 and m["groups"] == 2 for m in ms), ms
    cfg.write_text(cfg.read_text().replace("kl_coef: 0.01}", "kl_coef: 0.01, zero_variance: resample, "
                                                              "max_resample: 2}"))
    _ok(["train", "grpo", "--config", str(cfg), "--data", str(data), "--model", str(root / "tiny"),
         "--out", str(root / "grpo-resample"), "--max-steps", "1", "--no-progress"])
    (m,) = read_metrics(root / "grpo-resample")
    assert (m["groups"], m["resampled"]) == (4, 2)


def test_bad_config_names_the_key(env, tmp_path):
    root, data, _, _ = env
    bad = tmp_path / "bad.yaml"
    bad.write_text("optim: {learning_rate: 1}\n")
    res = runner.invoke(app, ["train", "sft", "--config", str(bad), "--data", str(data), "--model",
                              str(root / "tiny"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "optim.learning_rate" in res.output


def test_stream_splits_rows_across_ranks_and_workers_exactly_once(env, monkeypatch):
    _, data, n_good, _ = env
    files = shard_files(data)
    seen = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        loader = torch.utils.data.DataLoader(ShardStream(files), batch_size=None, num_workers=2)
        seen += [getattr(x, "id", None) or x.reject.record_id for x in loader]
    assert sorted(seen) == sorted(set(seen)) and len(seen) == n_good + 1


def test_pixels_match_the_hf_image_processor_and_mix_is_respected(env):
    root, data, n_good, _ = env
    model, tok, ip = load_model_and_processor(root / "tiny")
    cfg = DataConfig(max_pixels=12544, min_pixels=784, mix=0.5)
    r = Renderer(tok, ip, "qwen2_vl", cfg)
    items = list(SFTStream(ShardStream(shard_files(data)), r))
    examples = [x for x in items if hasattr(x, "input_ids")]
    assert len(examples) == n_good  # one rendering per step with a fractional mix
    reasoned = sum(e.extra["reasoning"] for e in examples)
    assert 0 < reasoned < n_good
    batch = collate(examples[:2], tok.pad_token_id, model.config.image_token_id)
    rows = next(s for s in ShardStream(shard_files(data)) if hasattr(s, "image"))
    rendered = r.render(rows)[0]
    ref = ip(images=[rendered.image], return_tensors="pt")
    ours, thw = r.pixels(rendered.image)
    torch.testing.assert_close(ours, ref["pixel_values"], rtol=1e-4, atol=1e-4)
    assert thw.tolist() == ref["image_grid_thw"].tolist()
    n_img = int((batch.tensors["input_ids"][0] == model.config.image_token_id).sum())
    assert n_img == int(batch.tensors["image_grid_thw"][0].prod()) // 4
    with torch.no_grad():
        out = model(**{k: v for k, v in batch.tensors.items() if k not in ("labels", "weights")})
    assert out.logits.shape[:2] == batch.tensors["input_ids"].shape


def test_curriculum_keeps_sampling_inside_the_band():
    cur = CurriculumSampler(band=(0.3, 0.7), momentum=0.0)
    for task, succ in {"easy": 1.0, "hard": 0.0, "mid": 0.5, "mid2": 0.4}.items():
        cur.update(task, [1.0] * int(succ * 10) + [0.0] * (10 - int(succ * 10)))
    picks = cur.choose({"easy": 0.1, "hard": 0.9, "mid": 0.5, "mid2": 0.2}, 200)
    assert set(picks) == {"mid", "mid2"}
    assert picks.count("mid") > picks.count("mid2")  # weighted by difficulty
    cur.update("mid", [1.0] * 10)
    cur.update("mid2", [0.0] * 10)
    assert set(cur.choose({"easy": 0.1, "hard": 0.9, "mid": 0.5, "mid2": 0.2}, 20)) <= {"easy", "mid", "hard", "mid2"}
