"""GRPO rollouts through vLLM's offline engine (``grpo.backend: vllm``), for GPU hosts where vLLM is installed.

Why: sampling n completions per prompt is the slow half of GRPO, and vLLM's paged-attention batching is several
times faster at it than transformers ``generate``. The engine holds its own copy of the weights, so the trainer
pushes the policy's parameters into it after every step (``sync_weights``) — otherwise rollouts would come from
a stale policy and the importance ratio would be wrong.

How it plugs in:
- one ``LLM.generate`` call per prompt with ``SamplingParams(n=…, logprobs=0)``; the prompt goes in as text with
  a single ``<|image_pad|>`` and the (already resized) screenshot as ``multi_modal_data``, and vLLM's Qwen-VL
  processor expands the placeholder itself. The expanded prompt it reports must equal ours token for token,
  otherwise the loss would score different positions than were sampled: that is checked, not assumed;
- the sampled ids become the same ``Rollout`` the transformers backend builds (``training.sampler.assemble``); the
  loss's log-probs are recomputed by the policy, and vLLM's own are kept only to report the sampler–policy gap;
- the engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, tensor parallel 1), so weights are loaded
  with the model's ``load_weights`` on the driver worker, the path TRL's colocate mode uses.

vLLM cannot run without a GPU; ``tests/test_grpo_vllm.py`` drives this glue with a stand-in ``LLM`` and
``benchmarks/gpu_check.sh`` runs it for real where vLLM is importable.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import torch

from training.data import IMAGE_PAD, Rendered, Renderer
from training.sampler import Rollout, assemble, prompt_ids, suppressed_ids

_PADS = re.compile(f"(?:{re.escape(IMAGE_PAD)})+")


def _vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise RuntimeError("grpo.backend is 'vllm' but vLLM is not installed here (it needs a CUDA host: "
                           "pip install vllm); use grpo.backend: transformers") from None
    return vllm


def engine_model(llm: Any) -> Any:
    """The vLLM-side model object of an in-process engine (where ``load_weights`` lives)."""
    worker = llm.llm_engine.model_executor.driver_worker
    runner = getattr(worker, "model_runner", None) or worker.worker.model_runner  # V1 wraps the worker once more
    return runner.model


class VLLMRollouts:
    """n sampled completions per prompt from a vLLM engine kept in step with the policy."""

    def __init__(self, llm: Any, tok: Any, renderer: Renderer):
        self.llm = llm
        self.tok = tok
        self.renderer = renderer
        self.eos = tok.convert_tokens_to_ids("<|im_end|>")

    @classmethod
    def start(cls, model_path: str | Path, tok: Any, renderer: Renderer, *, seed: int, bf16: bool,
              gpu_memory_utilization: float, max_model_len: int) -> VLLMRollouts:
        """Build an in-process engine over the starting weights (the local model directory; nothing downloads)."""
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engine in this process: weights reachable
        vllm = _vllm()
        llm = vllm.LLM(
            model=str(model_path), tokenizer=str(model_path), dtype="bfloat16" if bf16 else "auto", seed=seed,
            gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, tensor_parallel_size=1,
            limit_mm_per_prompt={"image": 1},
            mm_processor_kwargs={"min_pixels": renderer.cfg.min_pixels, "max_pixels": renderer.cfg.max_pixels},
        )
        return cls(llm, tok, renderer)

    def sampling_params(self, n: int, max_new_tokens: int, temperature: float, top_p: float) -> Any:
        # logit_bias −100 on the vision / chat-structure tokens: the same suppression as the transformers backend.
        return _vllm().SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=max_new_tokens,
                                      logprobs=0, stop_token_ids=[self.eos], skip_special_tokens=True,
                                      logit_bias={i: -100.0 for i in suppressed_ids(self.tok)})

    def generate(self, r: Rendered, n: int, max_new_tokens: int, temperature: float, top_p: float,
                 device: torch.device) -> Rollout:
        request = {"prompt": _PADS.sub(IMAGE_PAD, r.prompt), "multi_modal_data": {"image": r.image}}
        (out,) = self.llm.generate([request], sampling_params=self.sampling_params(n, max_new_tokens, temperature,
                                                                                    top_p), use_tqdm=False)
        ids = prompt_ids(self.tok, r, device)
        if list(out.prompt_token_ids) != ids[0].tolist():
            raise RuntimeError(
                f"sample {r.sample.id}: vLLM expanded the prompt to {len(out.prompt_token_ids)} tokens, the trainer "
                f"to {ids.shape[1]}: the engine's image processor disagrees with data.min_pixels/max_pixels")
        seqs = [list(c.token_ids) for c in out.outputs]
        if len(seqs) != n:
            raise RuntimeError(f"vLLM returned {len(seqs)} completions, expected n={n}")
        t = max(1, max(len(x) for x in seqs))
        comp = torch.full((n, t), self.tok.pad_token_id, dtype=torch.long)
        valid = torch.zeros((n, t), dtype=torch.bool)
        logp = torch.zeros((n, t))
        for i, (seq, c) in enumerate(zip(seqs, out.outputs, strict=True)):
            comp[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            valid[i, : len(seq)] = True
            for j, (token, lp) in enumerate(zip(seq, c.logprobs or [], strict=False)):
                logp[i, j] = float(lp[token].logprob)
        pv, thw = self.renderer.pixels(r.image)
        return assemble(self.tok, r, ids, comp.to(device), valid.to(device), pv.to(device), thw.to(device),
                        logp.to(device))

    @torch.no_grad()
    def sync_weights(self, model: Any) -> dict[str, float]:
        """Push every policy parameter into the engine; drop its prefix cache (computed with the old weights)."""
        t0 = time.perf_counter()
        target = engine_model(self.llm)
        count = 0
        for name, param in model.named_parameters():  # one tensor at a time: no second full copy in memory
            target.load_weights([(name, param.data)])
            count += 1
        self.llm.reset_prefix_cache()
        return {"weight_sync_s": time.perf_counter() - t0, "weight_sync_tensors": count}


def sampler_gap(old_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor) -> float:
    """Mean |log π_policy − log π_sampler| over completion tokens: how far the engine drifts from the policy."""
    m = mask.float()
    return float(((old_logp.float() - sampler_logp.float()).abs() * m).sum() / m.sum().clamp(min=1.0))
