"""The training loops, nanoGPT-style: set up, then one readable ``while step < max_steps`` loop per method.

``train_sft`` runs action-aware SFT over curated shards; ``train_grpo`` runs KL-regularized GRPO with rollouts
from the policy itself: each step generates and scores one batch of rollouts, then makes
``grpo.updates_per_rollout`` (μ) optimizer updates over it against the log-probs of the policy that generated
it, so with μ > 1 the importance ratio and its clip are live (one GRPO step = μ optimizer updates, one
scheduler step). Both share the same skeleton: load (from the newest checkpoint when resuming), build
the optimizer, iterate micro-batches with gradient accumulation, log a JSONL line per step, checkpoint every
``save_every`` steps and at the end, and write ``<out>/final`` as a loadable model directory.

Resume is exact on one process with ``num_workers: 0``: the data position (epoch, stream items consumed) and
the RNG states are in the checkpoint, so the next step sees the same batch and gives the same loss.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from training import checkpoint
from training.config import TrainConfig, config_dict
from training.data import Batch, Renderer, SFTStream, ShardStream, collate, shard_files
from training.metrics import MetricsLog, RejectsLog
from training.tiny import load_model_and_processor
from training.weights import asft_loss


@dataclass
class Setup:
    model: Any
    tokenizer: Any
    image_processor: Any
    optimizer: torch.optim.Optimizer
    scheduler: Any
    device: torch.device
    autocast: Any
    state: dict[str, Any]
    metrics: MetricsLog
    rejects: RejectsLog


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device(cfg: TrainConfig) -> torch.device:
    if cfg.run.device:
        return torch.device(cfg.run.device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def setup(cfg: TrainConfig, model_path: Path, out: Path, resume: bool, kind: str) -> Setup:
    """Load model (from the newest checkpoint when resuming), optimizer, schedule, logs."""
    seed_all(cfg.run.seed)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = checkpoint.latest(out) if resume else None
    device = pick_device(cfg)
    bf16 = cfg.run.bf16 if cfg.run.bf16 is not None else device.type == "cuda"
    model, tok, ip = load_model_and_processor(ckpt or model_path)
    model.to(device)
    if cfg.optim.freeze_vision:
        for name, p in model.named_parameters():
            if ".visual." in f".{name}":
                p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    warm = max(cfg.optim.warmup_steps, 0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
    state: dict[str, Any] = {"step": 0, "epoch": 0, "consumed": 0, "kind": kind}
    if ckpt is not None:
        state = checkpoint.restore(ckpt, opt, sched)
        if state.get("kind", kind) != kind:
            raise ValueError(f"{out}: holds a {state.get('kind')} run; use a new --out for {kind}")
    autocast = (partial(torch.autocast, device_type=device.type, dtype=torch.bfloat16) if bf16
                else contextlib.nullcontext)
    metrics = MetricsLog(out, state["step"], cfg.run.tensorboard)
    return Setup(model, tok, ip, opt, sched, device, autocast, state, metrics, RejectsLog(out))


def save(s: Setup, cfg: TrainConfig, out: Path, extra: dict[str, Any] | None = None) -> Path:
    state = {**s.state, **(extra or {}), "config": config_dict(cfg)}
    return checkpoint.save(out, s.state["step"], s.model, s.tokenizer, s.image_processor, s.optimizer,
                           s.scheduler, state, cfg.run.keep_checkpoints)


def save_final(s: Setup, out: Path) -> Path:
    final = out / "final"
    s.model.save_pretrained(final)
    s.tokenizer.save_pretrained(final)
    s.image_processor.save_pretrained(final)
    return final


def model_inputs(t: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    keys = ("input_ids", "attention_mask", "mm_token_type_ids", "pixel_values", "image_grid_thw")
    return {k: t[k].to(device) for k in keys}


# --- SFT --------------------------------------------------------------------------------------------------------

def sft_batches(cfg: TrainConfig, files: list[Path], renderer: Renderer, tok: Any, image_token_id: int,
                epoch: int, consumed: int) -> Iterator[tuple[int, Batch]]:
    """(epoch, batch) forever, starting ``consumed`` stream items into ``epoch``."""
    while True:
        rows = ShardStream(files, cfg.data.batch_rows, cfg.data.shuffle_buffer, cfg.data.seed, epoch)
        loader = torch.utils.data.DataLoader(
            SFTStream(rows, renderer), batch_size=cfg.optim.batch_size, num_workers=cfg.run.num_workers,
            collate_fn=partial(collate, pad_id=tok.pad_token_id, image_token_id=image_token_id),
        )
        seen, examples, excluded = 0, 0, Counter[str]()
        for batch in loader:
            seen += batch.n_items
            examples += batch.size
            excluded.update(batch.excluded)
            if seen <= consumed:
                continue  # already trained on before the resume point
            yield epoch, batch
        if seen == 0:
            raise ValueError("the dataset yielded no rows")
        if examples == 0:
            why = ", ".join(f"{n} {reason}" for reason, n in sorted(excluded.items())) or "every row was rejected"
            raise ValueError(f"the dataset has no trainable rows ({why}; noise negatives are used only with "
                             "data.include_negatives: true, and train_target=false steps never)")
        epoch, consumed = epoch + 1, 0


def train_sft(cfg: TrainConfig, data: Path, model_path: Path, out: Path, resume: bool = True) -> dict[str, Any]:
    """Action-aware SFT; returns a summary (steps, last loss, final model path)."""
    s = setup(cfg, model_path, out, resume, "sft")
    renderer = Renderer(s.tokenizer, s.image_processor, s.model.config.model_type, cfg.data)
    image_token_id = s.model.config.image_token_id
    batches = sft_batches(cfg, shard_files(data), renderer, s.tokenizer, image_token_id, s.state["epoch"],
                          s.state["consumed"])
    s.model.train()
    bar = tqdm(total=cfg.run.max_steps, initial=s.state["step"], desc="sft", disable=not cfg.run.progress)
    loss_value = math.nan
    while s.state["step"] < cfg.run.max_steps:
        t0 = time.perf_counter()
        s.optimizer.zero_grad(set_to_none=True)
        total, n_tokens, n_examples = 0.0, 0, 0
        micro = 0
        while micro < cfg.optim.grad_accum:  # batches of only rejects / exclusions do not count as micro-batches
            epoch, batch = next(batches)
            s.rejects.write(batch.rejects)
            if epoch != s.state["epoch"]:
                s.state["epoch"], s.state["consumed"] = epoch, 0
            s.state["consumed"] += batch.n_items
            for reason, n in batch.excluded.items():
                s.state.setdefault("excluded", {})[reason] = s.state.get("excluded", {}).get(reason, 0) + n
            if not batch.size:
                continue
            micro += 1
            t = batch.tensors
            with s.autocast():
                logits = s.model(**model_inputs(t, s.device)).logits
            loss = asft_loss(logits, t["labels"].to(s.device), t["weights"].to(s.device)) / cfg.optim.grad_accum
            loss.backward()
            total += loss.item()
            n_tokens += int((t["labels"] != -100).sum())
            n_examples += batch.size
        grad_norm = torch.nn.utils.clip_grad_norm_(s.model.parameters(), cfg.optim.max_grad_norm)
        s.optimizer.step()
        s.scheduler.step()
        s.state["step"] += 1
        step, loss_value = s.state["step"], total
        if step % cfg.run.log_every == 0 or step == cfg.run.max_steps:
            s.metrics.log(step, {"loss": total, "grad_norm": float(grad_norm), "lr": s.scheduler.get_last_lr()[0],
                                 "examples": n_examples, "target_tokens": n_tokens, "epoch": s.state["epoch"],
                                 "step_seconds": time.perf_counter() - t0})
        if step % cfg.run.save_every == 0 or step == cfg.run.max_steps:
            save(s, cfg, out)
        bar.update(1)
        bar.set_postfix(loss=f"{total:.4f}")
    bar.close()
    s.metrics.close()
    final = save_final(s, out)
    return {"steps": s.state["step"], "loss": loss_value, "excluded": s.state.get("excluded", {}),
            "final": str(final)}


# --- GRPO -------------------------------------------------------------------------------------------------------

def load_pool(cfg: TrainConfig, files: list[Path], rejects: RejectsLog, limit: int) -> list[Any]:
    """The prompt pool: up to ``limit`` validated samples (GRPO needs random access, so the pool is bounded)."""
    from training.data import Rejected, exclusion

    pool = []
    excluded: Counter[str] = Counter()
    for item in ShardStream(files, cfg.data.batch_rows, 0, cfg.data.seed):
        if isinstance(item, Rejected):
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


def reward_columns(r: Any, n: int, renderer: Renderer) -> dict[str, list[Any]]:
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
    }


def train_grpo(cfg: TrainConfig, data: Path, model_path: Path, out: Path, resume: bool = True,
               pool_limit: int = 10000) -> dict[str, Any]:
    """KL-regularized GRPO with SNGS on curated steps; returns a summary."""
    from training.curriculum import CurriculumSampler, backward_window, difficulty
    from training.grpo_loss import group_advantages
    from training.rewards import PRESETS, accuracy_reward, format_reward
    from training.sampler import check_backend, generate, token_logps
    from training.tiny import load_model_and_processor as load

    g = cfg.grpo
    check_backend(g.backend)
    if g.reward not in PRESETS:
        raise ValueError(f"grpo.reward: unknown preset {g.reward!r} ({', '.join(PRESETS)})")
    s = setup(cfg, model_path, out, resume, "grpo")
    ref, _, _ = load(model_path)  # the frozen reference is the starting policy
    ref.to(s.device).eval().requires_grad_(False)
    renderer = Renderer(s.tokenizer, s.image_processor, s.model.config.model_type,
                        rollout_data_config(cfg, g.mix))
    pool = load_pool(cfg, shard_files(data), s.rejects, pool_limit)
    by_task: dict[str, list[Any]] = {}
    for smp in pool:
        by_task.setdefault(smp.task_id or smp.trajectory_id, []).append(smp)
    difficulties = {t: difficulty(steps) for t, steps in by_task.items()}
    curriculum = CurriculumSampler(band=g.band, seed=cfg.run.seed)
    curriculum.load(s.state.get("curriculum", {}))
    image_id = s.model.config.image_token_id
    reward_fn = PRESETS[g.reward]
    engine = None
    if g.backend == "vllm":
        from training.vllm_rollout import VLLMRollouts

        engine = VLLMRollouts.start(
            model_path, s.tokenizer, renderer, seed=cfg.run.seed,
            bf16=cfg.run.bf16 if cfg.run.bf16 is not None else s.device.type == "cuda",
            gpu_memory_utilization=g.vllm_gpu_memory_utilization, max_model_len=cfg.data.max_length + g.max_new_tokens)
        if s.state["step"] > 0:
            engine.sync_weights(s.model)  # resumed: the engine started from --model, the policy from a checkpoint
    rng = random.Random(cfg.run.seed)
    bar = tqdm(total=cfg.run.max_steps, initial=s.state["step"], desc="grpo", disable=not cfg.run.progress)
    last: dict[str, Any] = {}
    while s.state["step"] < cfg.run.max_steps:
        t0 = time.perf_counter()
        rng.seed(f"{cfg.run.seed}:{s.state['step']}")
        micro = cfg.optim.batch_size * cfg.optim.grad_accum
        tasks = curriculum.choose(difficulties, micro) if g.curriculum else rng.choices(list(by_task), k=micro)
        in_band = sum(curriculum.in_band(t) for t in tasks) / len(tasks)
        # 1. Rollouts, rewards, advantages and reference log-probs: once per step, reused by every update.
        scored: list[Scored] = []
        rewards_all, acc_all, fmt_all = [], [], []
        for task in tasks:
            steps = by_task[task]
            if g.backward:
                first = backward_window(max(x.num_steps for x in steps), s.state["step"] / cfg.run.max_steps)
                steps = [x for x in steps if x.step_index >= first] or steps
            r = renderer.render(rng.choice(steps))[0]
            if engine is not None:
                ro = engine.generate(r, g.num_generations, g.max_new_tokens, g.temperature, g.top_p, s.device)
            else:
                s.model.eval()
                ro = generate(s.model, s.tokenizer, renderer, r, g.num_generations, g.max_new_tokens, g.temperature,
                              g.top_p, s.device)
                s.model.train()
            cols = reward_columns(r, g.num_generations, renderer)
            rewards = torch.tensor(reward_fn(None, ro.texts, **cols), dtype=torch.float32)
            adv, _ = group_advantages(rewards, g.num_generations, sngs=g.sngs)
            with torch.no_grad():
                ref_logp = token_logps(ref, ro, image_id)
            scored.append(Scored(ro, adv.to(s.device), ref_logp))
            curriculum.update(task, rewards.tolist())
            rewards_all += rewards.tolist()
            acc_all += accuracy_reward(None, ro.texts, **cols)
            fmt_all += format_reward(None, ro.texts, **cols)
        # 2. μ = updates_per_rollout optimizer updates over the same rollouts (PPO epochs). The old log-probs are
        # the policy's own before its first update, held fixed, so from the second update on the ratio moves
        # away from 1 and the clip bounds how far one batch of rollouts can push the policy.
        updates = [policy_update(s, cfg, scored, image_id, micro) for _ in range(g.updates_per_rollout)]
        sync = engine.sync_weights(s.model) if engine is not None else {}  # next rollouts from the updated policy
        s.scheduler.step()
        s.state["step"] += 1
        step = s.state["step"]
        last = {"reward": sum(rewards_all) / len(rewards_all), "accuracy": sum(acc_all) / len(acc_all),
                "format": sum(fmt_all) / len(fmt_all), "in_band": in_band}
        for key in ("loss", "kl", "clip_fraction", "ratio_mean", "grad_norm"):
            last[key] = sum(u[key] for u in updates) / len(updates)
        if "sampler_logp_gap" in updates[0]:
            last["sampler_logp_gap"] = updates[0]["sampler_logp_gap"]
        last.update(sync)
        last["step_seconds"] = time.perf_counter() - t0
        if g.updates_per_rollout > 1:
            for key in ("loss", "clip_fraction", "ratio_mean"):
                last[f"{key}_by_update"] = [u[key] for u in updates]
        if step % cfg.run.log_every == 0 or step == cfg.run.max_steps:
            s.metrics.log(step, last)
        if step % cfg.run.save_every == 0 or step == cfg.run.max_steps:
            save(s, cfg, out, {"curriculum": curriculum.state()})
        bar.update(1)
        bar.set_postfix(reward=f"{last['reward']:.3f}")
    bar.close()
    s.metrics.close()
    final = save_final(s, out)
    return {"steps": s.state["step"], **last, "final": str(final)}


@dataclass
class Scored:
    """One prompt's rollouts with everything the updates reuse; ``old_logp`` is filled by the first update."""

    rollout: Any
    advantages: torch.Tensor
    ref_logp: torch.Tensor
    old_logp: torch.Tensor | None = None


def policy_update(s: Setup, cfg: TrainConfig, scored: list[Scored], image_id: int, micro: int) -> dict[str, float]:
    """One optimizer update over all of a step's rollouts (gradients accumulated prompt by prompt)."""
    from training.grpo_loss import grpo_loss
    from training.sampler import token_logps
    from training.vllm_rollout import sampler_gap

    g = cfg.grpo
    s.optimizer.zero_grad(set_to_none=True)
    losses, kls, clips, ratios, gaps = [], [], [], [], []
    for item in scored:
        with s.autocast():
            logp = token_logps(s.model, item.rollout, image_id)
        if item.old_logp is None:
            item.old_logp = logp.detach()  # the pre-update policy: ratio exactly 1 on the first update
            if item.rollout.sampler_logp is not None:
                gaps.append(sampler_gap(item.old_logp, item.rollout.sampler_logp, item.rollout.completion_mask))
        loss, st = grpo_loss(logp, item.old_logp, item.ref_logp, item.advantages, item.rollout.completion_mask,
                             g.clip_eps, g.kl_coef)
        (loss / micro).backward()
        losses.append(loss.item())
        kls.append(st.kl)
        clips.append(st.clip_fraction)
        ratios.append(st.ratio_mean)
    grad_norm = torch.nn.utils.clip_grad_norm_(s.model.parameters(), cfg.optim.max_grad_norm)
    s.optimizer.step()
    n = len(scored)
    out = {"loss": sum(losses) / n, "kl": sum(kls) / n, "clip_fraction": sum(clips) / n,
           "ratio_mean": sum(ratios) / n, "grad_norm": float(grad_norm)}
    if gaps:
        out["sampler_logp_gap"] = sum(gaps) / len(gaps)
    return out


def rollout_data_config(cfg: TrainConfig, mix: str) -> Any:
    """The data config with the rollout prompt style (direct action or reasoning-then-action)."""
    import dataclasses

    if mix not in ("direct", "reasoning"):
        raise ValueError(f"grpo.mix: expected direct or reasoning, got {mix!r}")
    return dataclasses.replace(cfg.data, mix=mix)
