"""The GRPO objective, as small pure tensor functions (no trainer state), so each piece is checkable by hand.

- ``group_advantages``: A = (r − μ_group) / (σ_group + 1e-6) over the n samples of one prompt (σ unbiased, as
  verl / EasyR1 compute it), then GUI-Libra's success-adaptive negative gradient scaling (SNGS, EasyR1's
  ``grpo_weighted_positive_negative``): a negative advantage is multiplied by clamp(0.5 + 1.5·μ_group, 0, 1) —
  failures are pushed down less in groups that mostly fail, where the "negative" samples are least informative.
- ``kl_penalty``: per-token KL to the frozen reference. ``low_var_kl`` is verl / EasyR1's k3 with its clamps,
  kl = clamp(ref − logp, ±20), term = clamp(exp(kl) − kl − 1, ±10); ``k3`` is TRL's, unclamped; ``k1`` is
  logp − ref.
- ``grpo_loss``: the PPO-clipped ratio with EasyR1's safeguards — the log-ratio is clamped to ±20 before ``exp``
  (an overflowing ratio would turn the loss into inf/NaN), asymmetric clip (1 − ε_low, 1 + ε_high) and, when
  ``clip_ratio_c`` is set, dual-clip PPO: for A < 0 the loss is also capped at −A·c, so one sample whose
  probability fell sharply cannot dominate the update — plus β·KL, summed with per-token aggregation weights.
- ``aggregation_weights``: how per-token losses become one scalar. The modes differ in what each token weighs:

  ============ ====================================================== ===========================================
  mode         weight of token t of sequence i                        whose convention
  ============ ====================================================== ===========================================
  token-mean   1 / (completion tokens in the whole step, all ranks)   verl ``token-mean``, EasyR1 ``loss_avg_mode
                                                                      token`` (GUI-Libra's recipe)
  dapo         same as token-mean                                     TRL ``loss_type="dapo"`` (its default)
  bnpo         1 / (tokens in i's micro-batch) / micro-batches         TRL ``loss_type="bnpo"``
  grpo         1 / (tokens in sequence i) / sequences                  TRL ``loss_type="grpo"`` (the paper's)
  dr_grpo      1 / (sequences in i's micro-batch · max_new_tokens)    TRL ``loss_type="dr_grpo"``
               / micro-batches
  ============ ====================================================== ===========================================

  With mixed completion lengths these give different losses and gradients (``bnpo`` and ``grpo`` weigh a token
  of a short completion more), which is why the mode is a named config choice rather than an accident of how
  the loop happens to accumulate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

LOSS_AGGREGATIONS = ("token-mean", "dapo", "bnpo", "grpo", "dr_grpo")
KL_ESTIMATORS = ("low_var_kl", "k3", "k1")
LOG_RATIO_CLAMP = 20.0


def group_advantages(
    rewards: torch.Tensor, n: int, sngs: bool = True, eps: float = 1e-6, sngs_base: float = 0.5,
    sngs_coef: float = 1.5,
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
        scale = torch.clamp(sngs_base + sngs_coef * mu, 0.0, 1.0).expand_as(adv)
        adv = torch.where(adv < 0, adv * scale, adv)
    return adv.reshape(-1), mu.expand_as(g).reshape(-1)


def zero_variance(rewards: torch.Tensor, tol: float = 1e-8) -> bool:
    """True when every sample of one group got the same reward: all advantages are 0 and the group teaches nothing
    (its tokens would only dilute the token-mean and pull toward the reference through the KL term)."""
    return bool(rewards.numel() < 2 or (rewards.max() - rewards.min()).abs() <= tol)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str = "low_var_kl") -> torch.Tensor:
    """Per-token estimate of KL(π‖π_ref) from sampled-token log-probs."""
    logp, ref_logp = logp.float(), ref_logp.float()
    if estimator == "low_var_kl":
        kl = torch.clamp(ref_logp - logp, -20.0, 20.0)
        return torch.clamp(torch.exp(kl) - kl - 1.0, -10.0, 10.0)
    if estimator == "k3":
        d = ref_logp - logp
        return torch.exp(d) - d - 1.0
    if estimator == "k1":
        return logp - ref_logp
    raise ValueError(f"unknown KL estimator {estimator!r} ({', '.join(KL_ESTIMATORS)})")


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π‖π_ref), clamped as verl's ``low_var_kl``."""
    return kl_penalty(logp, ref_logp, "low_var_kl")


@dataclass(frozen=True)
class PolicyLoss:
    """The knobs of the per-token objective (a recipe fills them; see ``training.config``)."""

    clip_low: float = 0.2
    clip_high: float = 0.2
    clip_ratio_c: float | None = 3.0  # dual-clip constant (EasyR1's default); None turns dual clip off
    kl_coef: float = 0.001
    kl_estimator: str = "low_var_kl"


@dataclass
class LossStats:
    policy: float
    kl: float
    clip_fraction: float  # tokens where the ε clip cut the gradient
    dual_clip_fraction: float  # tokens (A < 0) where the dual clip −A·c capped the loss
    ratio_mean: float


def aggregation_weights(
    masks: Sequence[torch.Tensor], mode: str, micro_batches: Sequence[Sequence[int]] | None = None,
    global_tokens: float | None = None, world: int = 1, max_new_tokens: int | None = None,
) -> list[torch.Tensor]:
    """Per-token weights (one [n, T] tensor per group) that turn a step's per-token losses into its scalar loss.

    ``masks`` are the groups' completion masks (1 on real tokens) in the order the loop will backpropagate them;
    ``micro_batches`` lists which groups form each micro-batch (default: each group alone); ``global_tokens`` is
    the completion-token count of the whole step across all ranks (default: these masks' sum) and ``world`` the
    number of data-parallel ranks whose gradients are averaged — for ``token-mean`` each weight is multiplied by
    ``world`` so that the average of the ranks' gradients is the global token mean (EasyR1 does the same).

    >>> m = [torch.tensor([[1., 1., 1.], [1., 0., 0.]])]  # one group: a 3-token and a 1-token completion
    >>> [w.tolist() for w in aggregation_weights(m, "token-mean")]
    [[[0.25, 0.25, 0.25], [0.25, 0.0, 0.0]]]
    >>> [[[round(x, 3) for x in r] for r in w.tolist()] for w in aggregation_weights(m, "grpo")]
    [[[0.167, 0.167, 0.167], [0.5, 0.0, 0.0]]]
    """
    if mode not in LOSS_AGGREGATIONS:
        raise ValueError(f"unknown loss aggregation {mode!r} ({', '.join(LOSS_AGGREGATIONS)})")
    masks = [m.float() for m in masks]
    units = [list(u) for u in micro_batches] if micro_batches is not None else [[i] for i in range(len(masks))]
    if sorted(i for u in units for i in u) != list(range(len(masks))):
        raise ValueError("micro_batches must list every group exactly once")
    out: list[torch.Tensor] = [torch.zeros_like(m) for m in masks]
    if mode in ("token-mean", "dapo"):
        total = float(global_tokens) if global_tokens is not None else float(sum(m.sum() for m in masks))
        for i, m in enumerate(masks):
            out[i] = m * world / max(total, 1.0)
        return out
    n_units = len(units)
    for unit in units:
        unit_tokens = float(sum(masks[i].sum() for i in unit))
        unit_seqs = sum(masks[i].shape[0] for i in unit)
        for i in unit:
            m = masks[i]
            if mode == "bnpo":
                out[i] = m / max(unit_tokens, 1.0) / n_units
            elif mode == "grpo":  # TRL: mean over each micro-batch's sequences of per-sequence means, / accumulation
                out[i] = m / m.sum(dim=1, keepdim=True).clamp(min=1.0) / unit_seqs / n_units
            else:  # dr_grpo
                if not max_new_tokens:
                    raise ValueError("dr_grpo needs max_new_tokens")
                out[i] = m / (unit_seqs * max_new_tokens) / n_units
    return out


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    objective: PolicyLoss | None = None,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """Clipped (optionally dual-clipped) policy loss + β·KL, summed with ``weights`` ([B, T] tensors, ``advantages``
    [B] or [B, T]). Without ``weights`` the tokens of ``mask`` are averaged (one micro-batch's token mean)."""
    o = objective or PolicyLoss()
    mask = mask.float()
    w = mask / mask.sum().clamp(min=1.0) if weights is None else weights.float()
    adv = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
    log_ratio = torch.clamp(logp - old_logp, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    ratio = torch.exp(log_ratio)
    clipped = torch.clamp(ratio, 1 - o.clip_low, 1 + o.clip_high)
    pg1, pg2 = -adv * ratio, -adv * clipped
    per_token = torch.max(pg1, pg2)
    dual = torch.zeros_like(per_token, dtype=torch.bool)
    if o.clip_ratio_c is not None:
        if o.clip_ratio_c <= 1.0:
            raise ValueError(f"clip_ratio_c must be > 1 (dual-clip PPO), got {o.clip_ratio_c}")
        pg3 = -adv * o.clip_ratio_c
        dual = (adv < 0) & (per_token > pg3)
        per_token = torch.where(adv < 0, torch.min(per_token, pg3), per_token)
    if ref_logp is not None and o.kl_coef != 0.0:
        kl = kl_penalty(logp, ref_logp, o.kl_estimator)
    else:
        kl = torch.zeros_like(per_token)
    total = per_token + o.kl_coef * kl
    loss = (total * w).sum()
    with torch.no_grad():
        m = (w > 0).float() * mask
        denom = m.sum().clamp(min=1.0)
        was_clipped = (pg1 < pg2).float()  # the ε clip is active (its branch is the max, gradient cut)
        stats = LossStats(
            policy=float((per_token * w).sum()),
            kl=float((kl * m).sum() / denom),
            clip_fraction=float((was_clipped * m).sum() / denom),
            dual_clip_fraction=float((dual.float() * m).sum() / denom),
            ratio_mean=float((ratio * m).sum() / denom),
        )
    return loss, stats

