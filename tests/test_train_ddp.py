"""Data-parallel SFT through accelerate: 2 CPU processes (gloo) under torchrun train one model, not two.

Two ranks with one example each per step must take exactly the update that one process takes with the same two
examples as two accumulated micro-batches (rank r reads rows r, r+2, …; the single process reads them in order),
so after three steps the two final models are equal. Without DDP each rank would train its own model on half
the data and the weights would differ. The checkpoint holds each rank's RNG state and data position.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny_model import tiny_model, write_dataset

from training.models import load_model_and_processor

pytestmark = pytest.mark.slow

CFG = ("optim: {{lr: 0.003, batch_size: 1, grad_accum: {accum}, schedule: constant}}\n"
       "run: {{save_every: 3, progress: false, tensorboard: false}}\n"
       "data: {{mix: direct, shuffle_buffer: 0, max_pixels: 12544, min_pixels: 784}}\n")


def _train(cmd_prefix: list[str], cfg: Path, data: Path, model: Path, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(Path(__file__).resolve().parents[1]))}
    cmd = [*cmd_prefix, "-m", "pipelines.cli", "train", "sft", "--config", str(cfg), "--data", str(data),
           "--model", str(model), "--out", str(out), "--max-steps", "3", "--no-progress", "--no-resume"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def test_two_cpu_ranks_train_the_same_model_as_one_process_with_accumulation(tmp_path):
    model = tiny_model(tmp_path)
    data, _ = write_dataset(tmp_path / "ds", n_traj=4, steps=3, files=1)
    ddp_cfg, one_cfg = tmp_path / "ddp.yaml", tmp_path / "one.yaml"
    ddp_cfg.write_text(CFG.format(accum=1))
    one_cfg.write_text(CFG.format(accum=2))
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    _train(torchrun, ddp_cfg, data, model, tmp_path / "ddp")
    _train([sys.executable], one_cfg, data, model, tmp_path / "one")

    ddp, _, _ = load_model_and_processor(tmp_path / "ddp" / "final")
    one, _, _ = load_model_and_processor(tmp_path / "one" / "final")
    start, _, _ = load_model_and_processor(model)
    ddp_p, one_p, start_p = (dict(m.named_parameters()) for m in (ddp, one, start))
    moved = [k for k in start_p if not torch.equal(start_p[k], ddp_p[k])]
    assert len(moved) > len(start_p) // 2  # it trained
    for k in ddp_p:
        torch.testing.assert_close(ddp_p[k], one_p[k], rtol=1e-4, atol=1e-6)

    ckpt = tmp_path / "ddp" / "checkpoints" / "step-00000003"
    assert {p.name for p in ckpt.glob("rng-rank*.pt")} == {"rng-rank0.pt", "rng-rank1.pt"}
    state = json.loads((ckpt / "state.json").read_text())
    assert [r["consumed"] for r in state["ranks"]] == [3, 3]  # each rank read 3 of the 12 rows
    metrics = [json.loads(x) for x in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3]  # logged once (rank 0), not once per rank
