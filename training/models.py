"""Loading a vision-language model for training or inference: the one loader for tiny and real models alike.

Why a module of its own: training real checkpoints needs decisions the tiny test model never forced —

- **fp32 master weights.** Qwen2.5-VL ships bf16 weights. An AdamW step at lr 1e-6 moves a weight by about
  1e-6, far below bf16's resolution (a relative step of 2⁻⁸ ≈ 0.4 %), so training bf16 parameters in place
  rounds most updates away. ``load_for_training`` always materialises parameters in fp32 and the loop runs the
  forward pass under bf16 autocast (``run.bf16``), the arrangement HF Trainer uses with ``bf16=True``;
  ``source_dtype`` remembers what the checkpoint shipped so the final model can be saved in it again.
- **gradient checkpointing** (``run.gradient_checkpointing``): activations of a 7B model at 4k tokens do not fit
  otherwise; the non-reentrant variant works with frozen towers and autocast.
- **the image processor**: always the PIL backend, because transformers' torchvision backend cannot be imported
  beside the CPU torch wheel this stack pins.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


def _check_dir(path: Path) -> None:
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"{path}: not a model directory (no config.json)")


def load_model_and_processor(path: str | Path, dtype: torch.dtype | None = None,
                             attn_implementation: str | None = None) -> tuple[Any, Any, Any]:
    """(model, tokenizer, image_processor) from a local directory, through ``from_pretrained`` (nothing downloads).

    ``dtype`` None keeps transformers' default (fp32 parameters); pass the checkpoint's dtype for inference.
    """
    from transformers import AutoModelForImageTextToText, AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    path = Path(path)
    _check_dir(path)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    image_processor = Qwen2VLImageProcessorPil.from_pretrained(path, local_files_only=True)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    model = AutoModelForImageTextToText.from_pretrained(path, **kwargs)
    return model, tokenizer, image_processor


def source_dtype(path: str | Path) -> torch.dtype:
    """The dtype a checkpoint's weights were saved in (its config's ``dtype`` / ``torch_dtype``; fp32 if unsaid)."""
    cfg = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    for holder in (cfg, cfg.get("text_config") or {}):
        name = holder.get("dtype") or holder.get("torch_dtype")
        if isinstance(name, str) and name in DTYPES:
            return DTYPES[name]
    return torch.float32


def load_for_training(path: str | Path, gradient_checkpointing: bool = False,
                      attn_implementation: str | None = None) -> tuple[Any, Any, Any, torch.dtype]:
    """(model with fp32 master parameters, tokenizer, image processor, the checkpoint's own dtype)."""
    shipped = source_dtype(path)
    model, tok, ip = load_model_and_processor(path, dtype=torch.float32, attn_implementation=attn_implementation)
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False  # a KV cache is useless when activations are recomputed
    return model, tok, ip, shipped


def save_model(model: Any, tokenizer: Any, image_processor: Any, out: Path, dtype: torch.dtype | None = None,
               state_dict: dict[str, torch.Tensor] | None = None) -> Path:
    """Write a loadable model directory; ``dtype`` casts the saved weights (the live model is left untouched)."""
    out.mkdir(parents=True, exist_ok=True)
    sd = state_dict if state_dict is not None else model.state_dict()
    if dtype is not None:
        sd = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in sd.items()}
    model.save_pretrained(out, state_dict=sd)
    if dtype is not None:  # record the weights' dtype so loaders (and source_dtype) see what is on disk
        cfg_path = out / "config.json"
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        name = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype]
        cfg["dtype"] = name
        if isinstance(cfg.get("text_config"), dict):
            cfg["text_config"]["dtype"] = name
        cfg_path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    tokenizer.save_pretrained(out)
    image_processor.save_pretrained(out)
    return out
