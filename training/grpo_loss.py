"""The GRPO objective, as small pure tensor functions (no trainer state), so each piece is checkable by hand.

- ``group_advantages``: A = (r − μ_group) / (σ_group + 1e-6) over the n samples of one prompt (σ unbiased, as
  verl computes it), then GUI-Libra's success-adaptive negative gradient scaling (SNGS): a negative advantage is
  multiplied by clamp(0.5 + 1.5·μ_group, 0, 1) — failures are pushed down less in groups that mostly fail, where
  the "negative" samples are least informative.
- ``k3_kl``: the low-variance KL estimator to the frozen reference, with verl's clamps:
  kl = clamp(ref − logp, ±20); term = clamp(exp(kl) − kl − 1, ±10).
- ``grpo_loss``: PPO-clipped ratio (ε = 0.2) plus β·KL per token, averaged over all completion tokens of the
  micro-batch ("token-mean", TRL's ``bnpo``), so long completions are not down-weighted per token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def group_advantages(
    rewards: torch.Tensor, n: int, sngs: bool = True, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, per-sample group mean) for rewards laid out prompt-major: [p0s0, p0s1, …, p1s0, …].

    >>> a, mu = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), 4)  # μ=0.25, σ=0.5, SNGS scale 0.875
    >>> [round(x, 4) for x in a.tolist()]
    [1.5, -0.4375, -0.4375, -0.4375]
    >>> a, _ = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), 4, sngs=False)
    >>> [round(x, 4) for x in a.tolist()]
    [1.5, -0.5, -0.5, -0.5]
    """
    if rewards.numel() % n:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {n}")
    g = rewards.float().view(-1, n)
    mu = g.mean(dim=1, keepdim=True)
    sigma = g.std(dim=1, keepdim=True)  # unbiased, as torch.std / verl
    adv = (g - mu) / (sigma + eps)
    if sngs:
        scale = torch.clamp(0.5 + 1.5 * mu, 0.0, 1.0).expand_as(adv)
        adv = torch.where(adv < 0, adv * scale, adv)
    return adv.reshape(-1), mu.expand_as(g).reshape(-1)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π‖π_ref), clamped as verl's ``low_var_kl``."""
    kl = torch.clamp(ref_logp - logp, -20.0, 20.0)
    return torch.clamp(torch.exp(kl) - kl - 1.0, -10.0, 10.0)


@dataclass
class LossStats:
    policy: float
    kl: float
    clip_fraction: float
    ratio_mean: float


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    kl_coef: float = 0.001,
) -> tuple[torch.Tensor, LossStats]:
    """Token-mean clipped policy loss + β·k3 KL over completion tokens ([B, T] tensors, ``advantages`` [B])."""
    mask = mask.float()
    adv = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    per_token = -torch.min(ratio * adv, clipped * adv)
    kl = k3_kl(logp, ref_logp) if ref_logp is not None and kl_coef else torch.zeros_like(logp)
    total = per_token + kl_coef * kl
    denom = mask.sum().clamp(min=1.0)
    loss = (total * mask).sum() / denom
    with torch.no_grad():
        # The clip is active (the gradient is cut) when A > 0 and r > 1 + ε, or A < 0 and r < 1 − ε.
        was_clipped = (((ratio > 1 + clip_eps) & (adv > 0)) | ((ratio < 1 - clip_eps) & (adv < 0))).float()
        stats = LossStats(
            policy=float((per_token * mask).sum() / denom),
            kl=float((kl * mask).sum() / denom),
            clip_fraction=float((was_clipped * mask).sum() / denom),
            ratio_mean=float((ratio * mask).sum() / denom),
        )
    return loss, stats
