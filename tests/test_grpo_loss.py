"""GRPO loss: numerically equal to TRL 1.16's GRPO loss where settings coincide (SNGS off), and to hand math."""

from __future__ import annotations

import doctest
import math
from collections import defaultdict
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

import training.curriculum
import training.grpo_loss
import training.weights
from training.grpo_loss import PolicyLoss, aggregation_weights, group_advantages, grpo_loss, k3_kl, zero_variance


def _trl_loss(logp, old_logp, ref_logp, adv, mask, beta, eps, loss_type="bnpo", accum=1, num_items=None,
              max_len=None):
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
        args=SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=accum),
        loss_type=loss_type, epsilon_low=eps, epsilon_high=eps, use_vllm=False,
        vllm_importance_sampling_correction=False, max_completion_length=max_len,
        model=SimpleNamespace(training=True), current_gradient_accumulation_steps=accum,
        _entropy_bonus_enabled=False, aux_loss_enabled=False, _metrics={"train": defaultdict(list)},
        accelerator=Acc(),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
    )
    b, t = logp.shape
    inputs = {
        "prompt_ids": torch.zeros(b, 2, dtype=torch.long), "prompt_mask": torch.ones(b, 2, dtype=torch.long),
        "completion_ids": torch.zeros(b, t, dtype=torch.long), "completion_mask": mask,
        "advantages": adv, "old_per_token_logps": old_logp, "ref_per_token_logps": ref_logp,
        "num_items_in_batch": torch.tensor(float(num_items if num_items is not None else mask.sum())),
    }
    return GRPOTrainer._compute_loss(fake, None, inputs)


TRL_LIKE = PolicyLoss(clip_low=0.2, clip_high=0.2, clip_ratio_c=None, kl_estimator="k3")


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
    ours, _ = grpo_loss(logp, old, ref, adv, mask, replace(TRL_LIKE, kl_coef=beta))
    (g_ours,) = torch.autograd.grad(ours, logp)
    theirs = _trl_loss(logp, old, ref, adv, mask.float(), beta, 0.2)
    (g_theirs,) = torch.autograd.grad(theirs, logp)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6, abs=1e-7)
    torch.testing.assert_close(g_ours, g_theirs, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", ["bnpo", "grpo", "dapo", "dr_grpo"])
def test_each_trl_aggregation_over_accumulated_micro_batches(mode):
    """Three groups (mixed lengths) in two micro-batches: our weighted sum equals TRL's per-micro-batch losses,
    accumulated over the two micro-batches, in value and gradient."""
    logp, old, ref, mask, rewards = _case(3)
    adv, _ = group_advantages(rewards, 4, sngs=False)
    groups = [slice(0, 4), slice(4, 8)]
    extra = (-torch.rand(4, 7, generator=torch.Generator().manual_seed(9)) * 2).requires_grad_(True)
    lps = [logp[groups[0]], logp[groups[1]], extra]
    olds = [old[groups[0]], old[groups[1]], extra.detach() + 0.1]
    refs = [ref[groups[0]], ref[groups[1]], extra.detach() - 0.2]
    masks = [mask[groups[0]].float(), mask[groups[1]].float(), torch.tensor([[1.0] * 7, [1.0] + [0.0] * 6] * 2)]
    advs = [adv[groups[0]], adv[groups[1]], torch.tensor([0.7, -0.3, 1.1, -1.5])]
    units = [[0, 1], [2]]
    weights = aggregation_weights(masks, mode, units, max_new_tokens=7)
    obj = replace(TRL_LIKE, kl_coef=0.04)
    ours = sum(grpo_loss(lp, o, r, a, m, obj, w)[0] for lp, o, r, a, m, w in
               zip(lps, olds, refs, advs, masks, weights, strict=True))
    total_tokens = float(sum(m.sum() for m in masks))
    theirs = 0.0
    for unit in units:
        cat = [torch.cat([x[i] for i in unit]) for x in (lps, olds, refs, advs, masks)]
        theirs = theirs + _trl_loss(*cat[:4], cat[4], 0.04, 0.2, loss_type=mode, accum=len(units),
                                    num_items=total_tokens, max_len=7)
    assert ours.detach().item() == pytest.approx(theirs.detach().item(), rel=1e-6)
    g1 = torch.autograd.grad(ours, [logp, extra], retain_graph=True)
    g2 = torch.autograd.grad(theirs, [logp, extra])
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def _easyr1_step_loss(lps, olds, refs, advs, masks, clip=0.2, c=3.0, beta=0.001):
    """EasyR1's update as its dp_actor does it, re-derived token by token in plain Python: per micro-batch
    token-mean of the dual-clipped policy loss plus β·token-mean of low_var_kl, each micro-batch scaled by
    its share of the mini-batch's response tokens."""
    total = sum(float(m.sum()) for m in masks)
    out = 0.0
    for lp, o, r, a, m in zip(lps, olds, refs, advs, masks, strict=True):
        pg_sum = kl_sum = 0.0
        n = float(m.sum())
        for i in range(lp.shape[0]):
            for t in range(lp.shape[1]):
                if not m[i, t]:
                    continue
                ratio = math.exp(max(-20.0, min(20.0, float(lp[i, t] - o[i, t]))))
                adv = float(a[i])
                l1, l2 = -adv * ratio, -adv * min(max(ratio, 1 - clip), 1 + clip)
                loss = max(l1, l2)
                if adv < 0:
                    loss = min(loss, -adv * c)
                pg_sum += loss
                k = max(-20.0, min(20.0, float(r[i, t] - lp[i, t])))
                kl_sum += max(-10.0, min(10.0, math.exp(k) - k - 1))
        micro = pg_sum / n + beta * kl_sum / n
        out += micro * n / total
    return out


def test_guilibra_objective_equals_easyr1_token_mean_with_dual_clip():
    g = torch.Generator().manual_seed(5)
    lps, olds, refs, advs, masks = [], [], [], [], []
    for length in (3, 9):
        lp = -torch.rand(4, length, generator=g) * 3
        lps.append(lp)
        olds.append(lp + torch.randn(4, length, generator=g) * 1.5)  # ratios far outside the clip and dual clip
        refs.append(lp + torch.randn(4, length, generator=g))
        m = (torch.rand(4, length, generator=g) > 0.3).float()
        m[:, 0] = 1
        masks.append(m)
        advs.append(torch.tensor([1.2, -2.0, -0.4, 0.9]))
    weights = aggregation_weights(masks, "token-mean")
    obj = PolicyLoss()  # GUI-Libra's recipe: ε 0.2/0.2, dual clip c = 3, low_var_kl, β = 0.001
    ours = sum(float(grpo_loss(lp, o, r, a, m, obj, w)[0]) for lp, o, r, a, m, w in
               zip(lps, olds, refs, advs, masks, weights, strict=True))
    assert ours == pytest.approx(_easyr1_step_loss(lps, olds, refs, advs, masks), rel=1e-5)
    # The dual clip fired somewhere, so the check above really covers it.
    stats = [grpo_loss(lp, o, r, a, m, obj, w)[1] for lp, o, r, a, m, w in
             zip(lps, olds, refs, advs, masks, weights, strict=True)]
    assert max(s.dual_clip_fraction for s in stats) > 0
    without = sum(float(grpo_loss(lp, o, r, a, m, replace(obj, clip_ratio_c=None), w)[0]) for lp, o, r, a, m, w
                  in zip(lps, olds, refs, advs, masks, weights, strict=True))
    assert without > ours  # capping −A·r at −A·c only ever lowers the loss


def test_token_mean_differs_from_bnpo_with_mixed_lengths_and_scales_for_ranks():
    masks = [torch.ones(2, 10), torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])]
    tm = aggregation_weights(masks, "token-mean")
    bn = aggregation_weights(masks, "bnpo")
    # token-mean: every token 1/23; bnpo (each group its own micro-batch): 1/(20·2) vs 1/(3·2).
    assert float(tm[0][0, 0]) == pytest.approx(1 / 23) and float(tm[1][0, 0]) == pytest.approx(1 / 23)
    assert float(bn[0][0, 0]) == pytest.approx(1 / 40) and float(bn[1][0, 0]) == pytest.approx(1 / 6)
    # Two ranks with these masks each: the average of their gradients is the global token mean (46 tokens).
    w = aggregation_weights(masks, "token-mean", global_tokens=46, world=2)
    assert float(w[0][0, 0]) / 2 == pytest.approx(1 / 46)
    assert sum(float(x.sum()) for x in w) * 2 / 2 == pytest.approx(1.0)


def test_log_ratio_is_clamped_before_exp():
    logp = torch.tensor([[0.0, -1.0]], requires_grad=True)
    old = torch.tensor([[-200.0, -1.0]])  # a ratio of e^200 would overflow float32
    loss, st = grpo_loss(logp, old, None, torch.tensor([1.0]), torch.ones(1, 2), PolicyLoss(kl_coef=0.0))
    loss.backward()
    assert math.isfinite(loss.item()) and math.isfinite(st.ratio_mean)
    assert torch.isfinite(logp.grad).all()


def test_zero_variance_groups():
    assert zero_variance(torch.tensor([0.0, 0.0, 0.0]))
    assert zero_variance(torch.tensor([0.1, 0.1]))
    assert not zero_variance(torch.tensor([0.1, 1.0]))


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
    loss, stats = grpo_loss(logp, old, logp, adv, torch.ones(8, 1), PolicyLoss(clip_ratio_c=None, kl_coef=0.1))
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
