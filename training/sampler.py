"""Rollouts for GRPO: n completions per prompt from the policy, and per-token log-probs under any model.

Generation uses transformers ``generate`` (CPU or GPU). One prompt's n samples share one image, so they are
generated as ``num_return_sequences=n`` from a single unpadded prompt, which sidesteps left-padding rules of
multimodal position ids. ``grpo.backend: vllm`` samples through ``training.vllm_rollout`` instead (GPU hosts with
vLLM installed; refused clearly elsewhere); both backends hand back the same ``Rollout`` via ``assemble``, and
the log-probs the loss uses are always recomputed here by the policy itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from training.data import Rendered, Renderer


@dataclass
class Rollout:
    """n completions of one prompt, as tensors ready for a log-prob forward pass."""

    rendered: Rendered
    input_ids: torch.Tensor  # [n, P + T] prompt + completion, right-padded
    attention_mask: torch.Tensor  # [n, P + T]
    completion_mask: torch.Tensor  # [n, T] 1 on real completion tokens (through the end token)
    prompt_len: int
    pixel_values: torch.Tensor
    image_grid_thw: torch.Tensor
    texts: list[str]
    sampler_logp: torch.Tensor | None = None  # [n, T] log-probs the rollout engine reported (vLLM), for drift checks


def check_backend(name: str) -> None:
    if name == "transformers":
        return
    if name == "vllm":
        try:
            import vllm  # noqa: F401
        except ImportError:
            raise RuntimeError("grpo.backend is 'vllm' but vLLM is not installed here (it needs a CUDA host: "
                               "pip install vllm); use grpo.backend: transformers") from None
        return
    raise ValueError(f"grpo.backend: unknown backend {name!r} (transformers, vllm)")


# Tokens a completion must never contain. A sampled <|image_pad|> makes the next forward pass fail ("image
# features and image tokens do not match": the model counts placeholders against the pixels it was given), and
# the other vision / chat-structure tokens are meaningless inside an answer. TRL suppresses the image token the
# same way; trajforge suppresses the whole family.
SUPPRESSED_TOKENS = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                     "<|im_start|>", "<|endoftext|>")


def suppressed_ids(tok: Any) -> list[int]:
    """Ids of ``SUPPRESSED_TOKENS`` this tokenizer has (special tokens it lacks are skipped)."""
    unk = getattr(tok, "unk_token_id", None)
    vocab = tok.get_vocab()
    ids = {vocab[t] for t in SUPPRESSED_TOKENS if t in vocab}
    return sorted(i for i in ids if i is not None and i != unk)


@torch.no_grad()
def generate(model: Any, tok: Any, renderer: Renderer, r: Rendered, n: int, max_new_tokens: int,
             temperature: float, top_p: float, device: torch.device) -> Rollout:
    ids = prompt_ids(tok, r, device)
    pv, thw = renderer.pixels(r.image)
    pv, thw = pv.to(device), thw.to(device)
    image_id = model.config.image_token_id
    out = model.generate(
        input_ids=ids, attention_mask=torch.ones_like(ids), mm_token_type_ids=(ids == image_id).long(),
        pixel_values=pv, image_grid_thw=thw, do_sample=True, temperature=temperature, top_p=top_p, top_k=0,
        num_return_sequences=n, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"), suppress_tokens=suppressed_ids(tok),
    )
    comp = out[:, ids.shape[1]:]
    return assemble(tok, r, ids, comp, torch.ones_like(comp, dtype=torch.bool), pv, thw)


def prompt_ids(tok: Any, r: Rendered, device: torch.device) -> torch.Tensor:
    """The rendered prompt (image placeholder already expanded) as a [1, P] id tensor."""
    return torch.tensor([tok(r.prompt, add_special_tokens=False)["input_ids"]], device=device)


def assemble(tok: Any, r: Rendered, ids: torch.Tensor, comp: torch.Tensor, valid: torch.Tensor, pv: torch.Tensor,
             thw: torch.Tensor, sampler_logp: torch.Tensor | None = None) -> Rollout:
    """A ``Rollout`` from a [1, P] prompt and [n, T] sampled ids (``valid`` marks real positions of ragged ones).

    Each completion keeps its tokens up to and including the first end token; later positions become padding and
    are masked out of the loss, whichever backend sampled them.
    """
    n, p = comp.shape[0], ids.shape[1]
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    is_end = (comp == eos).int()
    after_end = (torch.cumsum(is_end, dim=1) - is_end) > 0
    # Defence in depth for any backend: a suppressed token that slipped through ends the completion before it
    # (it is replaced by padding), so the log-prob forward pass never sees a stray image placeholder.
    banned = torch.zeros_like(comp, dtype=torch.bool)
    for t in suppressed_ids(tok):
        banned |= comp == t
    after_end |= torch.cumsum(banned.int(), dim=1) > 0
    cmask = (valid & ~after_end).long()
    comp = torch.where(cmask.bool(), comp, torch.full_like(comp, tok.pad_token_id))
    texts = tok.batch_decode(comp * cmask + (1 - cmask) * tok.pad_token_id, skip_special_tokens=True)
    full = torch.cat([ids.expand(n, -1), comp], dim=1)
    attn = torch.cat([torch.ones(n, p, dtype=torch.long, device=ids.device), cmask], dim=1)
    return Rollout(r, full, attn, cmask, p, pv.repeat(n, 1), thw.repeat(n, 1), texts, sampler_logp)


def token_logps(model: Any, ro: Rollout, image_token_id: int, temperature: float = 1.0) -> torch.Tensor:
    """log π(token) for every completion position, [n, T] (gradients flow when the caller allows them).

    The logits are divided by the sampling ``temperature`` first, as TRL and verl do: the rollouts were drawn from
    softmax(z / τ), so that is the policy whose ratio and KL the loss must see (at τ ≠ 1 the τ = 1 log-probs
    would describe a different distribution from the one that produced the samples).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    logits = model(
        input_ids=ro.input_ids, attention_mask=ro.attention_mask,
        mm_token_type_ids=(ro.input_ids == image_token_id).long(),
        pixel_values=ro.pixel_values, image_grid_thw=ro.image_grid_thw,
    ).logits
    logits = logits[:, ro.prompt_len - 1 : -1].float()
    if temperature != 1.0:
        logits = logits / temperature
    targets = ro.input_ids[:, ro.prompt_len :]
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
