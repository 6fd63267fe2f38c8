"""KL-regularized GRPO on curated steps: rollouts from the policy itself, group advantages with SNGS, a clipped
token-weighted objective against a frozen reference.

One step: choose ``optim.batch_size × optim.grad_accum`` prompts (the success-band curriculum, ``training.curriculum``),
sample n completions each (transformers or vLLM, vision tokens suppressed), score them with a reward preset
(``training.rewards``), and turn each group's rewards into advantages. Groups whose rewards are all equal teach
nothing: ``grpo.zero_variance`` drops them (default), resamples replacement prompts as DAPO's dynamic sampling
does, or keeps them (GUI-Libra's shipped run). Then ``grpo.updates_per_rollout`` (μ) optimizer updates run over the
kept groups against the log-probs of the policy that generated them (with μ > 1 the ratio and its clip are live).
Per-token losses are combined with ``training.grpo_loss.aggregation_weights`` (``grpo.loss_agg``), so the
aggregation is exactly the named convention however the groups are split into forward passes, and under several
processes the token count is global (gradients are accumulated locally and averaged once per update).

Log-probs are always taken at the sampling temperature. A step in which no group is informative on any rank makes
no optimizer update (it is logged with ``updated: 0``) — the run goes on rather than dying or pretending.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import random
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from schemas import Sample
from training.config import TrainConfig
from training.data import Rendered, Renderer, ShardStream, exclusion, shard_files
from training.loop import Setup, save, save_final, setup
from training.metrics import RejectsLog


def load_pool(cfg: TrainConfig, files: list[Path], rejects: RejectsLog | None, limit: int) -> list[Sample]:
    """The prompt pool: up to ``limit`` validated samples (GRPO needs random access, so the pool is bounded)."""
    from training.data import Rejected

    pool: list[Sample] = []
    excluded: Counter[str] = Counter()
    for item in ShardStream(files, cfg.data.batch_rows, 0, cfg.data.seed):
        if isinstance(item, Rejected):
            if rejects is not None:
                rejects.write([item.reject])
            continue
        reason = exclusion(item, cfg.data.include_negatives)
        if reason is not None:
            excluded[reason] += 1  # a wrong action is no ground truth to reward against
        elif len(pool) < limit:
            pool.append(item)
    if not pool:
        why = f" ({', '.join(f'{n} {r}' for r, n in sorted(excluded.items()))} excluded)" if excluded else ""
        raise ValueError(f"no valid samples to build GRPO prompts from{why}")
    return pool


def reward_columns(r: Rendered, n: int, renderer: Renderer | None = None) -> dict[str, list[Any]]:
    """The TRL-style ground-truth columns for n completions of one rendered prompt."""
    s, f = r.sample, r.frame
    return {
        "action": [s.action] * n,
        "accepted_actions": [s.accepted_actions] * n,
        "image_width": [s.image_width] * n,
        "image_height": [s.image_height] * n,
        "coord_convention": [str(f.convention)] * n,
        "min_pixels": [f.min_pixels] * n,
        "max_pixels": [f.max_pixels] * n,
        "factor": [f.factor] * n,
        "platform": [s.platform] * n,
        "is_grounding": [not r.reasoning] * n,  # a direct-action prompt: r1gui penalises reasoning there
        "think_tag": [renderer.style.think_tag if renderer is not None else "think"] * n,
    }


def rollout_data_config(cfg: TrainConfig, mix: str) -> Any:
    """The data config with the rollout prompt style (direct action or reasoning-then-action)."""
    if mix not in ("direct", "reasoning"):
        raise ValueError(f"grpo.mix: expected direct or reasoning, got {mix!r}")
    return dataclasses.replace(cfg.data, mix=mix)


@dataclass
class Group:
    """One prompt's n rollouts with everything the updates reuse; ``old_logp`` is filled by the first update."""

    task: str
    rollout: Any
    rewards: torch.Tensor
    advantages: torch.Tensor
    accuracy: list[float]
    format: list[float]
    ref_logp: torch.Tensor | None = None
    old_logp: torch.Tensor | None = None

    @property
    def informative(self) -> bool:
        from training.grpo_loss import zero_variance

        return not zero_variance(self.rewards)


class Rollouts:
    """Prompt → scored ``Group`` with the policy (transformers ``generate``) or a vLLM engine."""

    def __init__(self, s: Setup, cfg: TrainConfig, renderer: Renderer, engine: Any, judge: Any = None):
        from training.rewards import PRESETS, accuracy_reward, format_reward

        self.s, self.cfg, self.renderer, self.engine, self.judge = s, cfg, renderer, engine, judge
        self.reward_fn = PRESETS[cfg.grpo.reward]
        self.accuracy, self.format = accuracy_reward, format_reward

    def group(self, task: str, sample: Any) -> Group:
        from training.grpo_loss import group_advantages
        from training.sampler import generate

        g, s = self.cfg.grpo, self.s
        r = self.renderer.render(sample)[0]
        if self.engine is not None:
            ro = self.engine.generate(r, g.num_generations, g.max_new_tokens, g.temperature, g.top_p, s.device)
        else:
            s.core.eval()
            with s.autocast():
                ro = generate(s.core, s.tokenizer, self.renderer, r, g.num_generations, g.max_new_tokens,
                              g.temperature, g.top_p, s.device)
            s.model.train()
        cols = reward_columns(r, g.num_generations, self.renderer)
        if self.judge is not None:
            from training.rewards import predicted_action

            cols["progress"] = [self.judge.score(sample, predicted_action(t, r.frame)) for t in ro.texts]
        rewards = torch.tensor([math.nan if v is None else v for v in self.reward_fn(None, ro.texts, **cols)],
                               dtype=torch.float32)
        rewards = torch.nan_to_num(rewards, nan=0.0)
        adv, _ = group_advantages(rewards, g.num_generations, sngs=g.sngs)
        # Reward functions may answer None ("no score", TRL's convention); these two never do, and None would
        # count as 0 as it does in the composite rewards.
        accuracy = [float(a or 0.0) for a in self.accuracy(None, ro.texts, **cols)]
        fmt = [float(f or 0.0) for f in self.format(None, ro.texts, **cols)]
        return Group(task, ro, rewards, adv.to(s.device), accuracy, fmt)


def train_grpo(cfg: TrainConfig, data: Path, model_path: Path, out: Path, resume: bool = True,
               pool_limit: int = 10000) -> dict[str, Any]:
    """KL-regularized GRPO with SNGS on curated steps; returns a summary."""
    from training.curriculum import CurriculumSampler, backward_window, task_difficulties
    from training.models import load_model_and_processor
    from training.rewards import PRESETS
    from training.sampler import check_backend, token_logps

    g = cfg.grpo
    check_backend(g.backend)
    if g.reward not in PRESETS:
        raise ValueError(f"grpo.reward: unknown preset {g.reward!r} ({', '.join(PRESETS)})")
    s = setup(cfg, model_path, out, resume, "grpo")
    bf16 = cfg.run.bf16 if cfg.run.bf16 is not None else s.device.type == "cuda"
    ref = None
    if g.kl_coef != 0.0:  # the frozen reference is the starting policy (not needed at β = 0, as in TRL)
        ref, _, _ = load_model_and_processor(model_path, dtype=torch.bfloat16 if bf16 else torch.float32)
        ref.to(s.device).eval().requires_grad_(False)
    renderer = Renderer(s.tokenizer, s.image_processor, s.core.config.model_type, rollout_data_config(cfg, g.mix))
    pool = load_pool(cfg, shard_files(data), s.rejects, pool_limit)
    by_task: dict[str, list[Any]] = {}
    for smp in pool:
        by_task.setdefault(smp.task_id or smp.trajectory_id, []).append(smp)
    difficulties = task_difficulties(by_task)
    curriculum = CurriculumSampler(band=g.band, seed=cfg.run.seed)
    curriculum.load(s.state.get("curriculum", {}))
    image_id = s.core.config.image_token_id
    engine = None
    if g.backend == "vllm":
        from training.vllm_rollout import VLLMRollouts

        engine = VLLMRollouts.start(
            model_path, s.tokenizer, renderer, seed=cfg.run.seed + s.dist.rank, bf16=bf16,
            gpu_memory_utilization=g.vllm_gpu_memory_utilization, max_model_len=cfg.data.max_length + g.max_new_tokens)
        if s.state["step"] > 0:
            engine.sync_weights(s.core)  # resumed: the engine started from --model, the policy from a checkpoint
    judge = None
    if g.reward == "computerrl":
        from training.progress import GraphDistanceJudge

        judge = GraphDistanceJudge.load(str(g.progress_graph), str(g.progress_trajectories))
    roll = Rollouts(s, cfg, renderer, engine, judge)
    micro = cfg.optim.batch_size * cfg.optim.grad_accum
    epoch_steps = max(1, math.ceil(len(by_task) / (micro * s.dist.world)))
    reestimate = g.reestimate_every or epoch_steps
    rng = random.Random(cfg.run.seed)
    bar = tqdm(total=cfg.run.max_steps, initial=s.state["step"], desc="grpo",
               disable=not cfg.run.progress or not s.dist.is_main)
    last: dict[str, Any] = {}

    def pick(k: int, salt: str) -> list[str]:
        if g.curriculum:
            return curriculum.choose(difficulties, k, salt=f"{s.dist.rank}:{salt}")
        return rng.choices(list(by_task), k=k)

    def prompt_for(task: str) -> Any:
        steps = by_task[task]
        if g.backward:
            first = backward_window(max(x.num_steps for x in steps), s.state["step"] / cfg.run.max_steps)
            steps = [x for x in steps if x.step_index >= first] or steps
        return rng.choice(steps)

    while s.state["step"] < cfg.run.max_steps:
        t0 = time.perf_counter()
        step0 = s.state["step"]
        rng.seed(f"{cfg.run.seed}:{s.dist.rank}:{step0}")
        reestimated = 0
        if g.curriculum and step0 > 0 and step0 % reestimate == 0:  # MobileRL: every task, in band or not
            reestimated = reestimate_rates(s, cfg, roll, curriculum, by_task, prompt_for)
        tasks = pick(micro, str(step0))
        in_band = sum(curriculum.in_band(t) for t in tasks) / len(tasks)
        # 1. Rollouts and rewards; zero-variance groups dropped, or replaced by fresh prompts (DAPO).
        groups = [roll.group(t, prompt_for(t)) for t in tasks]
        kept = groups if g.zero_variance == "keep" else [x for x in groups if x.informative]
        extra = 0
        while g.zero_variance == "resample" and len(kept) < micro and extra < g.max_resample:
            (task,) = pick(1, f"{step0}:resample:{extra}")
            extra += 1
            grp = roll.group(task, prompt_for(task))
            groups.append(grp)
            if grp.informative:
                kept.append(grp)
        kept = kept[:micro]
        # Every rank folds every rank's outcomes in, so the curriculum tables stay identical.
        outcomes = [(x.task, x.rewards.tolist()) for x in groups]
        for part in s.dist.gather(outcomes) if s.dist.world > 1 else [outcomes]:
            for task, rewards in part:
                curriculum.update(task, rewards)
        # 2. Reference log-probs for the groups that will be trained on (once; reused by every update).
        if ref is not None:
            with torch.no_grad(), s.autocast():
                for grp in kept:
                    grp.ref_logp = token_logps(ref, grp.rollout, image_id, g.temperature).float()
        # 3. μ optimizer updates over the same kept groups.
        n_kept_global = s.dist.all_sum([float(len(kept))])[0]
        updates = []
        if n_kept_global > 0:
            updates = [policy_update(s, cfg, kept, image_id) for _ in range(g.updates_per_rollout)]
            sync = engine.sync_weights(s.core) if engine is not None else {}  # next rollouts: the updated policy
        else:
            sync = {}
        lr = s.scheduler.get_last_lr()[0]
        with warnings.catch_warnings():  # a step with no update still advances the schedule (it counts as a step)
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
            s.scheduler.step()
        s.state["step"] += 1
        step = s.state["step"]
        rewards_all = [r for x in groups for r in x.rewards.tolist()]
        acc_all = [a for x in groups for a in x.accuracy]
        fmt_all = [f for x in groups for f in x.format]
        sums = s.dist.all_sum([sum(rewards_all), sum(acc_all), sum(fmt_all), float(len(rewards_all)),
                               float(len(groups)), float(len(kept)), float(extra), in_band])
        n = max(sums[3], 1.0)
        last = {"reward": sums[0] / n, "accuracy": sums[1] / n, "format": sums[2] / n,
                "in_band": sums[7] / s.dist.world, "groups": int(sums[4]), "groups_kept": int(sums[5]),
                "resampled": int(sums[6]), "updated": int(bool(updates)), "reestimated": reestimated, "lr": lr,
                "completion_tokens": int(s.dist.all_sum([float(sum(float(x.rollout.completion_mask.sum())
                                                                  for x in groups))])[0])}
        for key in ("loss", "kl", "clip_fraction", "dual_clip_fraction", "ratio_mean", "grad_norm"):
            last[key] = sum(u[key] for u in updates) / len(updates) if updates else 0.0
        if updates and "sampler_logp_gap" in updates[0]:
            last["sampler_logp_gap"] = updates[0]["sampler_logp_gap"]
        last.update(sync)
        last["step_seconds"] = time.perf_counter() - t0
        if g.updates_per_rollout > 1 and updates:
            for key in ("loss", "clip_fraction", "ratio_mean"):
                last[f"{key}_by_update"] = [u[key] for u in updates]
        if step % cfg.run.log_every == 0 or step == cfg.run.max_steps:
            s.log(step, last)
        if step % cfg.run.save_every == 0 or step == cfg.run.max_steps:
            save(s, cfg, out, {"curriculum": curriculum.state()})
        bar.update(1)
        bar.set_postfix(reward=f"{last['reward']:.3f}", kept=f"{last['groups_kept']}/{last['groups']}")
    bar.close()
    if s.metrics is not None:
        s.metrics.close()
    final = save_final(s, cfg, out)
    return {"steps": s.state["step"], **last, "final": str(final)}


def reestimate_rates(s: Setup, cfg: TrainConfig, roll: Rollouts, curriculum: Any, by_task: dict[str, list[Any]],
                     prompt_for: Any) -> int:
    """MobileRL's per-epoch re-estimation: measure the success rate of every task outside the band afresh with the
    current policy (``grpo.reestimate_rollouts`` samples each); returns how many were measured.

    Without it a task that left the band (too easy or too hard when last seen) is never drawn again, so its rate
    is never corrected as the policy improves; with it, the band is recomputed from current evidence. Tasks are
    split across ranks and the measured rates gathered, so every rank holds the same table.
    """
    g = cfg.grpo
    # In-band tasks are measured by training itself every time they are drawn; the ones outside the band are the
    # ones that would otherwise never be looked at again.
    stale = [t for t in sorted(by_task) if not curriculum.in_band(t)]
    tasks = stale[s.dist.rank :: s.dist.world]
    measured: dict[str, list[float]] = {}
    sub = dataclasses.replace(g, num_generations=max(2, g.reestimate_rollouts))
    saved, roll.cfg = roll.cfg, dataclasses.replace(cfg, grpo=sub)
    try:
        with torch.no_grad():
            for task in tasks:
                measured[task] = roll.group(task, prompt_for(task)).rewards.tolist()
    finally:
        roll.cfg = saved
    count = 0
    for part in s.dist.gather(measured) if s.dist.world > 1 else [measured]:
        for task, rewards in part.items():
            curriculum.reset(task, rewards)
            count += 1
    return count


def policy_update(s: Setup, cfg: TrainConfig, groups: list[Group], image_id: int) -> dict[str, float]:
    """One optimizer update over a step's kept groups (gradients accumulated group by group, then averaged
    across ranks once), with per-token weights from ``grpo.loss_agg``."""
    from training.grpo_loss import PolicyLoss, aggregation_weights, grpo_loss
    from training.sampler import token_logps
    from training.vllm_rollout import sampler_gap

    g = cfg.grpo
    objective = PolicyLoss(g.clip_low, g.clip_high, g.clip_ratio_c, g.kl_coef, g.kl_estimator)
    masks = [x.rollout.completion_mask.float() for x in groups]
    local_tokens = float(sum(m.sum() for m in masks))
    global_tokens = s.dist.all_sum([local_tokens])[0]
    per = max(1, cfg.optim.batch_size)
    units = [list(range(i, min(i + per, len(groups)))) for i in range(0, len(groups), per)]
    weights = aggregation_weights(masks, g.loss_agg, units, global_tokens=global_tokens, world=s.dist.world,
                                  max_new_tokens=g.max_new_tokens) if groups else []
    s.optimizer.zero_grad(set_to_none=True)
    total = torch.zeros((), device=s.device)
    kls, clips, duals, ratios, gaps, counts = [], [], [], [], [], []
    for grp, w in zip(groups, weights, strict=True):
        with s.dist.no_sync(s.model) if s.dist.world > 1 else contextlib.nullcontext():
            with s.autocast():
                logp = token_logps(s.model, grp.rollout, image_id, g.temperature).float()
            if grp.old_logp is None:
                grp.old_logp = logp.detach()  # the pre-update policy: ratio exactly 1 on the first update
                if grp.rollout.sampler_logp is not None and g.temperature == 1.0:  # vLLM reports τ = 1 log-probs
                    gaps.append(sampler_gap(grp.old_logp, grp.rollout.sampler_logp, grp.rollout.completion_mask))
            loss, st = grpo_loss(logp, grp.old_logp, grp.ref_logp, grp.advantages, grp.rollout.completion_mask,
                                 objective, w.to(logp.device))
            loss.backward()
        total += loss.detach()
        kls.append(st.kl)
        clips.append(st.clip_fraction)
        duals.append(st.dual_clip_fraction)
        ratios.append(st.ratio_mean)
        counts.append(float(grp.rollout.completion_mask.sum()))
    params = [p for p in s.model.parameters() if p.requires_grad]
    s.dist.average_gradients(params)
    grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.optim.max_grad_norm)
    if torch.isfinite(grad_norm):
        s.optimizer.step()  # EasyR1 skips a non-finite update rather than poisoning the weights
    c = sum(counts) or 1.0
    loss_sum = s.dist.all_sum([float(total)])[0] / s.dist.world
    out = {"loss": loss_sum, "kl": sum(k * n for k, n in zip(kls, counts, strict=True)) / c,
           "clip_fraction": sum(k * n for k, n in zip(clips, counts, strict=True)) / c,
           "dual_clip_fraction": sum(k * n for k, n in zip(duals, counts, strict=True)) / c,
           "ratio_mean": sum(k * n for k, n in zip(ratios, counts, strict=True)) / c, "grad_norm": float(grad_norm)}
    if gaps:
        out["sampler_logp_gap"] = sum(gaps) / len(gaps)
    return out
