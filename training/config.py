"""Training run configuration: one YAML file, validated on load, errors that name the key.

Sections mirror the modules: ``data`` (``training.data.DataConfig``), ``optim`` and ``run`` (the loop), ``grpo``
(rollouts, loss, rewards, curriculum). Every key has a default, so an empty file is a valid SFT config.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

import yaml

from training.data import DataConfig


@dataclass
class OptimConfig:
    lr: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 0
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
    bf16: bool | None = None  # None: bf16 autocast on GPU, fp32 on CPU
    device: str | None = None  # None: cuda when available
    progress: bool = True
    tensorboard: bool = True  # also write <out>/tensorboard event files (needs the tensorboard package)


@dataclass
class GRPOConfig:
    num_generations: int = 8  # n samples per prompt
    max_new_tokens: int = 96
    temperature: float = 1.0
    top_p: float = 1.0
    clip_eps: float = 0.2
    kl_coef: float = 0.001
    sngs: bool = True  # success-adaptive negative gradient scaling
    reward: str = "guilibra"  # "guilibra" (0.9·accuracy + 0.1·format) or "uitars2"
    mix: str = "direct"  # prompt style for rollouts: "direct" or "reasoning"
    backend: str = "transformers"  # or "vllm" where vLLM is installed (GPU hosts)
    vllm_gpu_memory_utilization: float = 0.3  # GPU share the colocated vLLM engine may take (policy + ref share it)
    updates_per_rollout: int = 1  # μ: optimizer updates over each batch of rollouts (PPO epochs; ratio ≠ 1 when > 1)
    curriculum: bool = True
    band: tuple[float, float] = (0.3, 0.7)
    backward: bool = False  # backward curriculum: start from the late steps of each trajectory


@dataclass
class TrainConfig:
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)


class ConfigError(ValueError):
    """A config problem, naming the offending key (``optim.lr``) and what was wrong."""


def _coerce(key: str, value: Any, hint: Any) -> Any:
    text = str(hint)
    if value is None:
        if "None" in text:
            return None
        raise ConfigError(f"{key}: must not be null")
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, key)
    if hint is bool or text == "bool | None":
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true/false, got {value!r}")
        return value
    if "tuple" in text:
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise ConfigError(f"{key}: expected a pair [low, high], got {value!r}")
        return (float(value[0]), float(value[1]))
    if text == "str | float":
        return value if isinstance(value, str) else float(value)
    for typ in (int, float, str):
        if hint is typ or text == f"{typ.__name__} | None":
            if typ is int and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigError(f"{key}: expected an integer, got {value!r}")
            if typ is float and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ConfigError(f"{key}: expected a number, got {value!r}")
            if typ is str and not isinstance(value, str):
                raise ConfigError(f"{key}: expected a string, got {value!r}")
            return typ(value)
    return value


def _build(cls: type, data: Any, prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or '<root>'}: expected a mapping, got {type(data).__name__}")
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    dot = f"{prefix}." if prefix else ""
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{dot}{unknown[0]}: unknown key (known: {', '.join(sorted(names))})")
    kwargs = {k: _coerce(f"{dot}{k}", v, hints[k]) for k, v in data.items()}
    return cls(**kwargs)


def load_config(path: str | Path | None) -> TrainConfig:
    """Read and validate a YAML config; ``None`` gives the defaults."""
    if path is None:
        return TrainConfig()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    cfg = _build(TrainConfig, data, "")
    if cfg.grpo.clip_eps <= 0 or cfg.grpo.num_generations < 2:
        raise ConfigError("grpo.num_generations: needs at least 2 samples per prompt for group advantages")
    if cfg.grpo.updates_per_rollout < 1:
        raise ConfigError(f"grpo.updates_per_rollout: must be at least 1, got {cfg.grpo.updates_per_rollout}")
    if cfg.optim.grad_accum < 1 or cfg.optim.batch_size < 1:
        raise ConfigError("optim.batch_size / optim.grad_accum: must be at least 1")
    if isinstance(cfg.data.mix, str) and cfg.data.mix not in ("both", "reasoning", "direct"):
        raise ConfigError(f"data.mix: expected both / reasoning / direct or a fraction, got {cfg.data.mix!r}")
    return cfg


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)
