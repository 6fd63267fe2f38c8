#!/usr/bin/env bash
# GPU check for training (run on a lent GPU machine via the `device` tool; NOT run in CI, NOT run by default).
# Needs a Python with CUDA torch + transformers 5.x + pyyaml + tokenizers (set PYTHON=...). Under 10 minutes:
# builds a mid-size Qwen2-VL from a config (hidden 1024, 8 layers, random weights), runs 20 SFT steps and
# 4 GRPO steps in bf16, and prints BENCH lines (gpu_sft_step_s, gpu_grpo_step_s, gpu_sft_tokens_per_s).
# Where vLLM is importable it then runs 3 GRPO steps (μ = 2) with grpo.backend: vllm on the same model and prints
# gpu_grpo_vllm_step_s, gpu_vllm_weight_sync_s and gpu_vllm_logp_gap (mean |log π_policy − log π_vLLM| on
# sampled tokens: small when the weight sync works); without vLLM it says so and skips that part.
# Not done yet: the tokens/s comparison against TRL's SFTTrainer/GRPOTrainer on the same model.
set -euo pipefail
PY="${PYTHON:-python}"
WORK="$(mktemp -d)"
"$PY" - "$WORK" <<'PY'
import json, sys, time
from pathlib import Path
sys.path.insert(0, "tests")
import torch
from transformers import Qwen2VLForConditionalGeneration
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
from tiny_model import write_dataset
from training.config import TrainConfig
from training.loop import train_grpo, train_sft
from training.metrics import read_metrics
from training.tiny import build_tokenizer, tiny_config

assert torch.cuda.is_available(), "no CUDA device"
work = Path(sys.argv[1])
tok = build_tokenizer()
cfg = tiny_config(tok, hidden=1024, layers=8)
model = Qwen2VLForConditionalGeneration(cfg)
model_dir = work / "mid"
model.save_pretrained(model_dir); tok.save_pretrained(model_dir)
Qwen2VLImageProcessorPil(min_pixels=784, max_pixels=28 * 28 * 512).save_pretrained(model_dir)
data, n = write_dataset(work / "ds", n_traj=16, steps=3, files=2)
tc = TrainConfig()
tc.run.max_steps, tc.run.save_every, tc.run.progress = 20, 1000, False
tc.optim.batch_size = 8
tc.data.max_pixels = 28 * 28 * 512
t = time.perf_counter(); train_sft(tc, data, model_dir, work / "sft", resume=False); sft = time.perf_counter() - t
ms = read_metrics(work / "sft")
toks = sum(m["target_tokens"] for m in ms); secs = sum(m["step_seconds"] for m in ms)
tc.run.max_steps, tc.optim.batch_size = 4, 2
tc.grpo.num_generations, tc.grpo.max_new_tokens = 8, 64
t = time.perf_counter(); train_grpo(tc, data, model_dir, work / "grpo", resume=False); grpo = time.perf_counter() - t
print(f"BENCH gpu_sft_step_s={secs / len(ms):.4f}")
print(f"BENCH gpu_sft_tokens_per_s={toks / secs:.1f}")
print(f"BENCH gpu_grpo_step_s={grpo / 4:.3f}")
print(json.dumps({"gpu": torch.cuda.get_device_name(0), "sft_total_s": sft, "grpo_total_s": grpo}))
PY
if "$PY" -c "import vllm" 2>/dev/null; then
"$PY" - "$WORK" <<'PY'
import json, sys, time
from pathlib import Path
sys.path.insert(0, "tests")
from training.config import TrainConfig
from training.loop import train_grpo
from training.metrics import read_metrics

work = Path(sys.argv[1])
tc = TrainConfig()
tc.run.max_steps, tc.run.save_every, tc.run.progress = 3, 1000, False
tc.optim.batch_size = 2
tc.data.max_pixels = 28 * 28 * 512
tc.grpo.backend, tc.grpo.updates_per_rollout = "vllm", 2
tc.grpo.num_generations, tc.grpo.max_new_tokens = 8, 64
t = time.perf_counter(); train_grpo(tc, work / "ds", work / "mid", work / "grpo-vllm", resume=False)
total = time.perf_counter() - t  # includes starting the engine once
ms = read_metrics(work / "grpo-vllm")
print(f"BENCH gpu_grpo_vllm_step_s={sum(m['step_seconds'] for m in ms) / len(ms):.3f}")
print(f"BENCH gpu_vllm_weight_sync_s={sum(m['weight_sync_s'] for m in ms) / len(ms):.3f}")
print(f"BENCH gpu_vllm_logp_gap={max(m['sampler_logp_gap'] for m in ms):.4f}")
print(json.dumps({"vllm_total_s": total, "clip_fraction": [m["clip_fraction"] for m in ms]}))
PY
else
  echo "vLLM is not importable with $PY: skipping the grpo.backend=vllm check"
fi
rm -rf "$WORK"
