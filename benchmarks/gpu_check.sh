#!/usr/bin/env bash
# The one command for a GPU host: trajforge SFT and GRPO on a real (or mid-size) VLM, timed against TRL's
# SFTTrainer / GRPOTrainer on the same data, plus the vLLM rollout backend where vLLM is importable.
#
#   benchmarks/gpu_check.sh [MODEL_DIR]        # e.g. a local Qwen2.5-VL-3B-Instruct directory; nothing downloads
#
# Needs a Python with CUDA torch, transformers 5.x, trl, accelerate, datasets, pyyaml, tokenizers and this
# repository importable (PYTHON=... to choose it; default: .venv/bin/python if present, else python). Not run in
# CI and not by default; ~10 minutes on one H100-class GPU with the default sizes (SFT_STEPS, GRPO_STEPS, BATCH
# override them). Prints BENCH lines (see benchmarks/gpu_check.py) and exits non-zero if any part failed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python; fi
fi
"$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible to '
+ torch.__version__)"
args=(--sft-steps "${SFT_STEPS:-20}" --grpo-steps "${GRPO_STEPS:-4}" --batch "${BATCH:-4}")
if [[ $# -ge 1 ]]; then
  [[ -f "$1/config.json" ]] || { echo "gpu_check: $1 is not a model directory (no config.json)" >&2; exit 2; }
  args+=(--model "$1")
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" benchmarks/gpu_check.py "${args[@]}"
