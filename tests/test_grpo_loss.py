"""GRPO loss: numerically equal to TRL 1.16's GRPO loss where settings coincide (SNGS off), and to hand math."""

from __future__ import annotations

import doctest
import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

import training.curriculum
import training.grpo_loss
import training.weights
from training.grpo_loss import group_advantages, grpo_loss, k3_kl


def _trl_loss(logp, old_logp, ref_logp, adv, mask, beta, eps):
    """Call TRL's own ``GRPOTrainer._compute_loss`` on prepared log-probs (no model, no accelerate)."""
    from trl.trainer.grpo_trainer import GRPOTrainer

    class Acc:
        sync_gradients = True
        num_processes = 1

        def gather(self, x):
            return x

        gather_for_metrics = gather

        def reduce(self, x, reduction="sum"):
            return x

    fake = SimpleNamespace(
        top_entropy_quantile=1.0, off_policy_mask_threshold=None, importance_sampling_level="token", beta=beta,
        args=SimpleNamespace(use_bias_correction_kl=False, delta=None), loss_type="bnpo", epsilon_low=eps,
        epsilon_high=eps, use_vllm=False, vllm_importance_sampling_correction=False,
        model=SimpleNamespace(training=True), current_gradient_accumulation_steps=1,
        _entropy_bonus_enabled=False, aux_loss_enabled=False, _metrics={"train": defaultdict(list)},
        accelerator=Acc(),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
    )
    b, t = logp.shape
    inputs = {
        "prompt_ids": torch.zeros(b, 2, dtype=torch.long), "prompt_mask": torch.ones(b, 2, dtype=torch.long),
        "completion_ids": torch.zeros(b, t, dtype=torch.long), "completion_mask": mask,
        "advantages": adv, "old_per_token_logps": old_logp, "ref_per_token_logps": ref_logp,
    }
    return GRPOTrainer._compute_loss(fake, None, inputs)


def _case(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    b, t = 8, 7
    logp = (-torch.rand(b, t, generator=g) * 3).requires_grad_(True)
    old = logp.detach() + torch.randn(b, t, generator=g) * 0.3  # ratios on both sides of the clip range
    ref = logp.detach() + torch.randn(b, t, generator=g) * 0.5
    mask = (torch.rand(b, t, generator=g) > 0.25).long()
    mask[:, 0] = 1
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.9, 0.1, 0.0, 0.0])
    return logp, old, ref, mask, rewards


@pytest.mark.parametrize("beta", [0.0, 0.04, 0.5])
def test_matches_trl_grpo_loss_and_gradients_with_sngs_off(beta):
    logp, old, ref, mask, rewards = _case()
    adv, _ = group_advantages(rewards, 4, sngs=False)
    ours, _ = grpo_loss(logp, old, ref, adv, mask, clip_eps=0.2, kl_coef=beta)
    (g_ours,) = torch.autograd.grad(ours, logp)
    theirs = _trl_loss(logp, old, ref, adv, mask.float(), beta, 0.2)
    (g_theirs,) = torch.autograd.grad(theirs, logp)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6, abs=1e-7)
    torch.testing.assert_close(g_ours, g_theirs, rtol=1e-5, atol=1e-7)


def test_sngs_advantages_and_loss_by_hand():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])  # group means 0.25 and 0.75
    adv, mu = group_advantages(rewards, 4, sngs=True)
    # Group 1: σ (unbiased) = 0.5 → A = [1.5, -0.5, -0.5, -0.5]; negatives × clamp(0.5 + 1.5·0.25) = 0.875.
    # Group 2: A = [0.5, 0.5, 0.5, -1.5]; negatives × clamp(0.5 + 1.5·0.75, 0, 1) = 1.
    expected = [1.5, -0.4375, -0.4375, -0.4375, 0.5, 0.5, 0.5, -1.5]
    assert adv.tolist() == pytest.approx(expected, abs=1e-5)
    assert mu.tolist() == [0.25] * 4 + [0.75] * 4
    # Loss with ratio r on 1 token per sequence, ref = logp (KL 0): -min(rA, clip(r)A) averaged.
    r = torch.tensor([1.5, 1.5, 0.5, 1.0, 1.1, 0.7, 1.0, 1.3])
    old = torch.zeros(8, 1)
    logp = torch.log(r).unsqueeze(1)
    loss, stats = grpo_loss(logp, old, logp, adv, torch.ones(8, 1), clip_eps=0.2, kl_coef=0.1)
    terms = []
    for ri, ai in zip(r.tolist(), expected, strict=True):
        terms.append(-min(ri * ai, min(max(ri, 0.8), 1.2) * ai))
    assert loss.item() == pytest.approx(sum(terms) / 8, rel=1e-5)
    # The clip is active on row 0 (A > 0, r = 1.5 > 1.2) and row 2 (A < 0, r = 0.5 < 0.8) only.
    assert stats.clip_fraction == pytest.approx(2 / 8)


def test_k3_kl_by_hand_and_clamps():
    logp = torch.tensor([-1.0, -2.0, -50.0])
    ref = torch.tensor([-1.5, -1.0, 0.0])
    d = [-0.5, 1.0]
    expected = [math.exp(x) - x - 1 for x in d] + [10.0]  # the last difference is clamped to 20, the term to 10
    assert k3_kl(logp, ref).tolist() == pytest.approx(expected, rel=1e-6)


def test_module_doctests():
    for mod in (training.grpo_loss, training.weights, training.curriculum):
        result = doctest.testmod(mod)
        assert result.failed == 0 and result.attempted > 0, mod.__name__
