"""Training run configuration: one YAML file, validated on load, errors that name the key.

Sections mirror the modules: ``data`` (``training.data.DataConfig``), ``optim`` and ``run`` (the loop), ``grpo``
(rollouts, loss, rewards, curriculum). Every key has a default, so an empty file is a valid SFT config.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ConfigDict, TypeAdapter, ValidationError

from training.data import DataConfig


@dataclass
class OptimConfig:
    lr: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 0
    warmup_ratio: float | None = None  # fraction of run.max_steps (GUI-Libra's SFT: 0.01); warmup_steps wins
    schedule: str = "cosine"  # after warmup: cosine / linear decay to min_lr_ratio·lr, or constant (EasyR1's RL)
    min_lr_ratio: float = 0.0
    max_grad_norm: float = 1.0
    batch_size: int = 2  # examples (SFT) or prompts (GRPO) per micro-batch
    grad_accum: int = 1  # micro-batches per optimizer step
    freeze_vision: bool = False


@dataclass
class RunConfig:
    max_steps: int = 100  # optimizer steps
    save_every: int = 50
    log_every: int = 1
    keep_checkpoints: int = 2
    num_workers: int = 0
    seed: int = 0
    bf16: bool | None = None  # bf16 autocast over fp32 master weights; None: on for CUDA, off on CPU
    gradient_checkpointing: bool = False  # recompute activations in the backward pass (needed for real VLMs)
    attn_implementation: str | None = None  # e.g. flash_attention_2 / sdpa; None: transformers' default
    save_dtype: str = "auto"  # dtype of <out>/final: auto = what the starting checkpoint shipped (bf16 for Qwen)
    device: str | None = None  # None: cuda when available
    progress: bool = True
    tensorboard: bool = True  # also write <out>/tensorboard event files (needs the tensorboard package)


@dataclass
class GRPOConfig:
    """GRPO settings. ``recipe`` fills every objective key the YAML leaves out (see ``RECIPES``): ``guilibra`` is
    GUI-Libra's EasyR1 run (token-mean, ε 0.2/0.2, dual clip 3, low_var_kl β 0.001, SNGS, top_p 0.98); ``trl`` is
    TRL 1.16 ``GRPOTrainer``'s defaults (``dapo`` aggregation, no dual clip, k3, β 0, no SNGS). The dataclass
    defaults are the ``guilibra`` recipe, so a config built in code starts from it too."""

    recipe: str = "guilibra"
    num_generations: int = 8  # n samples per prompt
    max_new_tokens: int = 96
    temperature: float = 1.0
    top_p: float = 0.98
    loss_agg: str = "token-mean"  # token-mean | dapo | bnpo | grpo | dr_grpo (training.grpo_loss)
    clip_low: float = 0.2
    clip_high: float = 0.2
    clip_ratio_c: float | None = 3.0  # dual-clip PPO constant; null turns it off
    kl_coef: float = 0.001
    kl_estimator: str = "low_var_kl"  # low_var_kl (clamped k3, verl/EasyR1) | k3 (TRL) | k1
    sngs: bool = True  # success-adaptive negative gradient scaling
    # Groups whose n rewards are all equal have zero advantage everywhere. drop: leave them out of the loss
    # (DAPO); resample: also draw replacement prompts, up to max_resample extra draws per step (DAPO's dynamic
    # sampling); keep: train on them anyway (GUI-Libra's shipped config: online_filtering false).
    zero_variance: str = "drop"
    max_resample: int = 8
    reward: str = "guilibra"  # a preset of training.rewards.PRESETS: guilibra (r1gui), uitars2, computerrl
    # computerrl's offline progress judge: the crawled graph and the synthesized trajectories (their goals)
    progress_graph: str | None = None
    progress_trajectories: str | None = None
    mix: str = "direct"  # prompt style for rollouts: "direct" or "reasoning"
    backend: str = "transformers"  # or "vllm" where vLLM is installed (GPU hosts)
    vllm_gpu_memory_utilization: float = 0.3  # GPU share the colocated vLLM engine may take (policy + ref share it)
    updates_per_rollout: int = 1  # μ: optimizer updates over each batch of rollouts (PPO epochs; ratio ≠ 1 when > 1)
    curriculum: bool = True
    band: tuple[float, float] = (0.3, 0.7)
    reestimate_every: int = 0  # MobileRL: re-measure every task's success rate every N steps (0: once per epoch)
    reestimate_rollouts: int = 4  # samples per task when re-estimating
    backward: bool = False  # backward curriculum: start from the late steps of each trajectory


# What each recipe sets (only keys the YAML does not set itself). Sources: GUI-Libra's EasyR1/examples/gui_grpo.sh
# and config.yaml (EasyR1's actor defaults for what they leave out, e.g. clip_ratio_dual 3.0); TRL's GRPOConfig.
RECIPES: dict[str, dict[str, Any]] = {
    "guilibra": {"loss_agg": "token-mean", "clip_low": 0.2, "clip_high": 0.2, "clip_ratio_c": 3.0,
                 "kl_coef": 0.001, "kl_estimator": "low_var_kl", "sngs": True, "temperature": 1.0, "top_p": 0.98,
                 "num_generations": 8},
    "trl": {"loss_agg": "dapo", "clip_low": 0.2, "clip_high": 0.2, "clip_ratio_c": None, "kl_coef": 0.0,
            "kl_estimator": "k3", "sngs": False, "temperature": 1.0, "top_p": 1.0, "num_generations": 8},
}


def apply_recipe(g: GRPOConfig, name: str, explicit: set[str] | None = None) -> GRPOConfig:
    """``g`` with recipe ``name``'s values for every key not in ``explicit`` (keys the user set)."""
    if name not in RECIPES:
        raise ConfigError(f"grpo.recipe: unknown recipe {name!r} (known: {', '.join(RECIPES)})")
    keep = explicit or set()
    return dataclasses.replace(g, recipe=name, **{k: v for k, v in RECIPES[name].items() if k not in keep})


@dataclass
class TrainConfig:
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)


class ConfigError(ValueError):
    """A config problem, naming the offending key (``optim.lr``) and what was wrong."""


# One config technique across trajforge: pydantic validates every config file (explorers and nightly use its
# models; training keeps plain dataclasses, which the loops build in code too, and validates them through a
# TypeAdapter). JSON-strict: a YAML string is never a number, a number never a bool, unknown keys are errors.
_STRICT = ConfigDict(extra="forbid", strict=True)
_CONFIG_CLASSES: tuple[type, ...] = (DataConfig, OptimConfig, RunConfig, GRPOConfig, TrainConfig)
for _cls in _CONFIG_CLASSES:
    # pydantic reads this dunder from stdlib dataclasses, which do not declare it.
    _cls.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]
_ADAPTER: TypeAdapter[TrainConfig] = TypeAdapter(TrainConfig)
_SECTIONS: dict[str, type] = {"data": DataConfig, "optim": OptimConfig, "run": RunConfig, "grpo": GRPOConfig}


def _error(exc: ValidationError) -> ConfigError:
    """The first problem as one line naming its key (``grpo.clip_low: …``)."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"] if not str(p).isdigit()]
    key = ".".join(loc) or "<root>"
    if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        section = _SECTIONS.get(loc[0]) if len(loc) > 1 else TrainConfig
        known = sorted(f.name for f in dataclasses.fields(section)) if section is not None else []
        return ConfigError(f"{key}: unknown key (known: {', '.join(known)})")
    return ConfigError(f"{key}: {err['msg'].lower()}, got {err.get('input')!r}")


def _build(data: dict[str, Any]) -> TrainConfig:
    try:
        return _ADAPTER.validate_json(json.dumps(data, default=str))
    except ValidationError as exc:
        raise _error(exc) from None


def load_config(path: str | Path | None) -> TrainConfig:
    """Read and validate a YAML config; ``None`` gives the defaults."""
    if path is None:
        return TrainConfig()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"<root>: expected a mapping, got {type(data).__name__}")
    grpo = data.get("grpo") or {}
    if isinstance(grpo, dict) and "clip_eps" in grpo:  # the older single-ε key: both sides of the clip
        grpo = {k: v for k, v in grpo.items() if k != "clip_eps"}
        grpo.setdefault("clip_low", data["grpo"]["clip_eps"])
        grpo.setdefault("clip_high", data["grpo"]["clip_eps"])
        data = {**data, "grpo": grpo}
    cfg = _build(data)
    if isinstance(grpo, dict):
        cfg.grpo = apply_recipe(cfg.grpo, cfg.grpo.recipe, set(grpo))
    validate(cfg)
    return cfg


def validate(cfg: TrainConfig) -> None:
    """Cross-key checks, each naming the key (also run on configs built in code, by the training loops)."""
    from training.grpo_loss import KL_ESTIMATORS, LOSS_AGGREGATIONS
    from training.schedule import SCHEDULES

    g = cfg.grpo
    if g.num_generations < 2:
        raise ConfigError("grpo.num_generations: needs at least 2 samples per prompt for group advantages")
    if not (0 < g.clip_low < 1) or g.clip_high <= 0:
        raise ConfigError(f"grpo.clip_low / clip_high: need 0 < clip_low < 1 and clip_high > 0, got "
                          f"{g.clip_low} / {g.clip_high}")
    if g.clip_ratio_c is not None and g.clip_ratio_c <= 1:
        raise ConfigError(f"grpo.clip_ratio_c: the dual-clip constant must be > 1 (or null), got {g.clip_ratio_c}")
    if g.loss_agg not in LOSS_AGGREGATIONS:
        raise ConfigError(f"grpo.loss_agg: expected one of {', '.join(LOSS_AGGREGATIONS)}, got {g.loss_agg!r}")
    if g.kl_estimator not in KL_ESTIMATORS:
        raise ConfigError(f"grpo.kl_estimator: expected one of {', '.join(KL_ESTIMATORS)}, got {g.kl_estimator!r}")
    if g.zero_variance not in ("drop", "resample", "keep"):
        raise ConfigError(f"grpo.zero_variance: expected drop / resample / keep, got {g.zero_variance!r}")
    if g.temperature <= 0 or not 0 < g.top_p <= 1:
        raise ConfigError(f"grpo.temperature / top_p: need temperature > 0 and 0 < top_p <= 1, got "
                          f"{g.temperature} / {g.top_p}")
    if g.reward == "computerrl" and not (g.progress_graph and g.progress_trajectories):
        raise ConfigError("grpo.progress_graph / grpo.progress_trajectories: the computerrl reward needs the crawled "
                          "graph directory and the synthesized trajectories file for its progress judge")
    if g.recipe not in RECIPES:
        raise ConfigError(f"grpo.recipe: unknown recipe {g.recipe!r} (known: {', '.join(RECIPES)})")
    if cfg.optim.schedule not in SCHEDULES:
        raise ConfigError(f"optim.schedule: expected one of {', '.join(SCHEDULES)}, got {cfg.optim.schedule!r}")
    if not 0.0 <= cfg.optim.min_lr_ratio <= 1.0:
        raise ConfigError(f"optim.min_lr_ratio: must be in [0, 1], got {cfg.optim.min_lr_ratio}")
    if cfg.data.target_layout not in ("compact", "guilibra"):
        raise ConfigError(f"data.target_layout: expected compact or guilibra, got {cfg.data.target_layout!r}")
    if cfg.run.save_dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise ConfigError(f"run.save_dtype: expected auto / float32 / bfloat16 / float16, got {cfg.run.save_dtype!r}")
    if cfg.grpo.updates_per_rollout < 1:
        raise ConfigError(f"grpo.updates_per_rollout: must be at least 1, got {cfg.grpo.updates_per_rollout}")
    if cfg.optim.grad_accum < 1 or cfg.optim.batch_size < 1:
        raise ConfigError("optim.batch_size / optim.grad_accum: must be at least 1")
    if isinstance(cfg.data.mix, str) and cfg.data.mix not in ("both", "reasoning", "direct"):
        raise ConfigError(f"data.mix: expected both / reasoning / direct or a fraction, got {cfg.data.mix!r}")


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)
