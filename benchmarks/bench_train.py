"""Training benchmarks on CPU with the tiny Qwen2-VL: input pipeline throughput vs a plain HF loop, step times.

Prints ``BENCH input_samples_per_s``, ``BENCH hf_samples_per_s``, ``BENCH sft_step_s``, ``BENCH grpo_step_s``,
``BENCH grpo_mu2_step_s`` (GRPO with ``updates_per_rollout: 2``) and, last, ``BENCH input_vs_hf=<ratio>``
(goal ≥ 1). Usage: ``python benchmarks/bench_train.py [--traj N]``.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from PIL import Image
from tiny_model import write_dataset

from schemas.exporters.coords import Frame
from schemas.exporters.guilibra import format_target
from schemas.recordio import iter_records
from training.config import TrainConfig
from training.data import DataConfig, Renderer, SFTStream, ShardStream, chat_prompt, shard_files
from training.loop import train_grpo, train_sft
from training.models import load_model_and_processor
from training.tiny import make_tiny_model
from training.weights import asft_token_weights


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traj", type=int, default=24)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-train-"))
    model_dir = make_tiny_model(tmp / "tiny", max_pixels=28 * 28 * 256)
    data, _ = write_dataset(tmp / "ds", n_traj=args.traj, steps=3, files=2)
    _, tok, ip = load_model_and_processor(model_dir)
    cfg = DataConfig(mix="direct", max_pixels=28 * 28 * 256, min_pixels=28 * 28 * 4)

    t = time.perf_counter()
    count = sum(1 for _ in SFTStream(ShardStream(shard_files(data)), Renderer(tok, ip, "qwen2_vl", cfg)))
    ours = count / (time.perf_counter() - t)

    # The plain way: read records, decode, let the HF image processor resize + patchify, tokenize, weight.
    t = time.perf_counter()
    hf = 0
    for f in shard_files(data):
        for p in iter_records(f):
            s = p.record
            img = Image.open(io.BytesIO(s.image)).convert("RGB")
            px = ip(images=[img], return_tensors="pt", size={"shortest_edge": cfg.min_pixels,
                                                             "longest_edge": cfg.max_pixels})
            n_tok = int(px["image_grid_thw"][0].prod()) // 4
            target = format_target(s.action, s.instruction, None, Frame(s.image_width, s.image_height))
            prompt = chat_prompt(s, n_tok, True)
            enc = tok(prompt + target + "<|im_end|>", return_offsets_mapping=True, add_special_tokens=False)
            asft_token_weights(target, [(a - len(prompt), b - len(prompt)) for a, b in enc["offset_mapping"]])
            hf += 1
    base = hf / (time.perf_counter() - t)

    tc = TrainConfig()
    tc.run.max_steps, tc.run.save_every, tc.run.progress = 6, 1000, False
    tc.optim.batch_size, tc.data = 4, cfg
    t = time.perf_counter()
    train_sft(tc, data, model_dir, tmp / "sft", resume=False)
    sft_step = (time.perf_counter() - t) / 6
    tc.run.max_steps, tc.optim.batch_size = 2, 1
    tc.grpo.num_generations, tc.grpo.max_new_tokens = 4, 32
    t = time.perf_counter()
    train_grpo(tc, data, model_dir, tmp / "grpo", resume=False)
    grpo_step = (time.perf_counter() - t) / 2
    tc.grpo.updates_per_rollout = 2  # μ = 2: the same rollouts, one more forward/backward/optimizer update
    t = time.perf_counter()
    train_grpo(tc, data, model_dir, tmp / "grpo-mu2", resume=False)
    grpo_mu2_step = (time.perf_counter() - t) / 2

    print(f"BENCH input_samples_per_s={ours:.1f}")
    print(f"BENCH hf_samples_per_s={base:.1f}")
    print(f"BENCH sft_step_s={sft_step:.3f}")
    print(f"BENCH grpo_step_s={grpo_step:.3f}")
    print(f"BENCH grpo_mu2_step_s={grpo_mu2_step:.3f}")
    print(f"BENCH input_vs_hf={ours / base:.2f}")


if __name__ == "__main__":
    main()
