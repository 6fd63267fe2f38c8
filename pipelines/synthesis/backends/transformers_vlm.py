"""An in-process transformers VLM (Qwen2-VL / Qwen2.5-VL / Qwen3-VL class) loaded from a local directory.

Loading goes through ``training.models.load_model_and_processor`` — the same ``from_pretrained`` path the
trainer uses — so a tiny test model and real weights take one road. The chat template renders each image as
one ``<|image_pad|>``; like Qwen's processor we expand it to the number of merged patches the image processor
produced (``grid_t·grid_h·grid_w / merge²``). Calls are generated one at a time with greedy decoding, on the
GPU when there is one (``device="auto"``); for throughput on a GPU host the OpenAI-compatible backend (vLLM) is
the scalable path.

The model's identity in cache keys and lineage is its directory name *and* a digest of its weight files'
contents, so retrained weights saved over the same directory never reuse yesterday's cached answers.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipelines.synthesis.backends.base import (
    Backend,
    BackendUnavailable,
    Completion,
    Failure,
    Result,
    load_images,
    user_text,
)
from pipelines.synthesis.calls import Call
from pipelines.synthesis.prompts import PromptSet

IMAGE_PAD = "<|image_pad|>"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def weights_digest(model_dir: Path, chunk: int = 1 << 22) -> str:
    """sha256 over the weight files' names and contents (config and tokenizer files too: they change outputs)."""
    h = hashlib.sha256()
    files = sorted(p for p in model_dir.rglob("*") if p.is_file() and (
        p.suffix in WEIGHT_SUFFIXES or p.suffix == ".json" or p.name.endswith((".model", ".txt"))))
    for p in files:
        h.update(str(p.relative_to(model_dir)).encode() + b"\0")
        with p.open("rb") as f:
            while block := f.read(chunk):
                h.update(block)
    return h.hexdigest()


def pick_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class TransformersBackend(Backend):
    name = "transformers"
    needs_images = True

    def __init__(self, prompts: PromptSet, model_dir: str | Path, max_new_tokens: int = 256,
                 max_pixels: int | None = None, device: str = "auto"):
        model_dir = Path(model_dir)
        digest = weights_digest(model_dir)[:12] if model_dir.is_dir() else "missing"
        super().__init__(prompts, f"{model_dir.name}@{digest}")
        self.model_dir = model_dir
        self.max_new_tokens = max_new_tokens
        self.max_pixels = max_pixels
        self.device = device
        self._loaded: tuple[Any, Any, Any] | None = None

    def check(self) -> None:
        if not (self.model_dir / "config.json").exists():
            raise BackendUnavailable(f"{self.model_dir}: not a model directory (no config.json)")
        self._load()

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            from training.models import load_model_and_processor

            try:
                model, tok, ip = load_model_and_processor(self.model_dir)
            except (OSError, ValueError) as exc:
                raise BackendUnavailable(f"cannot load a VLM from {self.model_dir}: {exc}") from None
            if self.max_pixels is not None:
                ip.max_pixels = self.max_pixels
                if hasattr(ip, "size") and isinstance(ip.size, dict):
                    ip.size["longest_edge"] = self.max_pixels
            self.device = pick_device(self.device)
            model.to(self.device)
            model.eval()
            self._loaded = (model, tok, ip)
        return self._loaded

    def _generate(self, call: Call) -> Result:
        import torch
        from PIL import Image

        images = load_images(self, call)
        if isinstance(images, Failure):
            return images
        model, tok, ip = self._load()
        pil = [Image.open(io.BytesIO(png)).convert("RGB") for png in images]
        content: list[dict[str, Any]] = [{"type": "image"} for _ in pil]
        content.append({"type": "text", "text": user_text(self.prompts, call)})
        messages = [{"role": "system", "content": self.prompts.system}, {"role": "user", "content": content}]
        prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        vision = ip(images=pil, return_tensors="pt")
        merge = int(getattr(ip, "merge_size", 2))
        for thw in vision["image_grid_thw"]:
            n = int(thw.prod().item()) // (merge * merge)
            prompt = prompt.replace(IMAGE_PAD, "\x00" * n, 1)
        prompt = prompt.replace("\x00", IMAGE_PAD)
        ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
        eos = tok.convert_tokens_to_ids("<|im_end|>")
        ids = ids.to(self.device)
        with torch.no_grad():
            out = model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids),
                mm_token_type_ids=(ids == model.config.image_token_id).long(),
                pixel_values=vision["pixel_values"].to(self.device, dtype=model.dtype),
                image_grid_thw=vision["image_grid_thw"].to(self.device),
                do_sample=False, max_new_tokens=self.max_new_tokens, eos_token_id=eos,
                pad_token_id=tok.pad_token_id,
            )
        new = out[0, ids.shape[1]:]
        text = tok.decode(new, skip_special_tokens=True)
        return Completion(text, prompt_tokens=int(ids.shape[1]), completion_tokens=int(new.shape[0]))

    def run(self, calls: Sequence[Call]) -> list[Result]:
        results: list[Result] = []
        for call in calls:
            try:
                results.append(self._generate(call))
            except (RuntimeError, ValueError) as exc:  # a shape or memory error on one input, not the run
                results.append(Failure("generation_error", f"{type(exc).__name__}: {exc}"[:500]))
        return results

    def close(self) -> None:
        self._loaded = None
