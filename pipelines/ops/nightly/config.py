"""The nightly job's config (YAML): where it works, what it crawls, how it synthesizes, curates and keeps.

One file per job, validated on load; every error names its key (``synthesis.backend: ...``,
``crawl.apps[0].entry: ...``). The ``crawl`` section is an ordinary crawl config (``explorers.config``) minus
``run_id``/``output``/``blob_root``, which the job owns; its ``budget.max_steps`` is the number of *new* actions
per app and device profile each night (the crawl continues from the stored graph). ``${chromedriver}`` and
``${demo_app}`` in the crawl section are replaced by the URLs of servers the job starts itself (``servers``).

Paths are relative to the config file's directory unless absolute, so a config and its workspace can move
together. ``output`` is a local directory (tested); ``mirror`` optionally copies each published version to an
fsspec URL (s3://, gs://, ...; only ``memory://`` and ``file://`` are exercised by the tests).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from explorers.config import ConfigError as CrawlConfigError
from explorers.config import CrawlConfig, anchor_paths, parse_config
from pipelines.curation.config import REMOVED_SETTINGS, CurateConfig
from pipelines.synthesis.factory import DEFAULT_BASE_URL, DEFAULT_CONCURRENCY
from pipelines.synthesis.prompts import DEFAULT_VERSION
from pipelines.synthesis.settings import PlanConfig
from schemas.base import ConfigModel, validation_problems

PLACEHOLDERS = ("${chromedriver}", "${demo_app}")
CURATION_OWNED = ("inputs", "out", "blobs")  # set by the job, not the config


class DemoAppServer(ConfigModel):
    port: int = Field(default=8765, ge=0, le=65535)  # fixed: screen locations include host:port


class ServersConfig(ConfigModel):
    chromedriver: bool = False
    demo_app: DemoAppServer | None = None


class ProbeSection(ConfigModel):
    """Shortcut probing before synthesis (``pipelines.synthesis.probe``): a short targeted crawl that tries the
    shortcuts the plans lack and the list items nobody opened. Without it most of a real app's plans are
    detours (refused) and lists yield one or two item tasks."""

    enabled: bool = True
    max_probes: int = Field(default=40, ge=1)  # requests per graph and round
    rounds: int = Field(default=3, ge=1)  # re-plan and probe again while a round finds something


class SynthesisConfig(ConfigModel):
    backend: Literal["offline", "openai", "transformers"] = "offline"
    model: str | None = None
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str | None = None  # name of the environment variable holding the key (never the key itself)
    prompt_version: str = DEFAULT_VERSION
    concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1)
    replay: bool = True  # replay new trajectories on the first crawl device (executability)
    languages: list[str] | None = None
    plans: PlanConfig = Field(default_factory=PlanConfig)  # the synthesis stage's own settings model
    probe: ProbeSection = Field(default_factory=ProbeSection)
    price_in_per_mtok: float = Field(default=0.0, ge=0)
    price_out_per_mtok: float = Field(default=0.0, ge=0)


class DriftConfig(ConfigModel):
    enabled: bool = True
    sample: int = Field(default=20, ge=0)  # trajectories of the last version replayed per night


class RetentionConfig(ConfigModel):
    keep_versions: int = Field(default=5, ge=1)
    prune_blobs: bool = True


class NightlyConfig(ConfigModel):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    workspace: str = Field(min_length=1)
    output: str | None = None  # default <workspace>/dataset
    mirror: str | None = None
    servers: ServersConfig = Field(default_factory=ServersConfig)
    crawl: dict[str, Any]
    synthesis: SynthesisConfig = Field(default_factory=SynthesisConfig)
    curation: dict[str, Any] = Field(default_factory=dict)
    drift: DriftConfig = Field(default_factory=DriftConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)

    @field_validator("output")
    @classmethod
    def _local_output(cls, v: str | None) -> str | None:
        if v is not None and "://" in v and not v.startswith("file://"):
            raise ValueError("must be a local directory (curation publishes by rename); use mirror: for fsspec URLs")
        return v

    def fingerprint(self) -> str:
        """sha256 of the validated config: a resumed run warns when the file changed since it started."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Loaded:
    """A validated config plus the directory its relative paths are resolved against."""

    config: NightlyConfig
    base: Path
    source: str

    @property
    def workspace(self) -> Path:
        return _resolve(self.base, self.config.workspace)

    @property
    def output(self) -> Path:
        return _resolve(self.base, self.config.output) if self.config.output else self.workspace / "dataset"

    def crawl_config(self, run_id: str, target_steps: int, urls: dict[str, str]) -> CrawlConfig:
        """The crawl config for one night: the job's graph store, run id and cumulative step target."""
        data = _fill(self.config.crawl, urls)
        data = {**data, "run_id": run_id, "output": str(self.workspace / "graph"),
                "blob_root": str(self.workspace / "graph" / "blobs")}
        data["budget"] = {**data.get("budget", {}), "max_steps": target_steps}
        return anchor_paths(parse_config(data, f"{self.source}: crawl"), self.base)

    def curate_config(self, inputs: list[Path]) -> CurateConfig:
        return CurateConfig(inputs=inputs, out=self.output, blobs=str(self.workspace / "graph" / "blobs"),
                            **self.config.curation)

    def steps_per_run(self) -> int:
        return int(self.config.crawl.get("budget", {}).get("max_steps", 200))


def _resolve(base: Path, p: str) -> Path:
    path = Path(p.removeprefix("file://")).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def _fill(value: Any, urls: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, url in urls.items():
            value = value.replace("${" + key + "}", url)
        return value
    if isinstance(value, list):
        return [_fill(v, urls) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, urls) for k, v in value.items()}
    return value


class NightlyConfigError(ValueError):
    """The nightly config is invalid; the message lists every problem by key."""


def parse_nightly(data: Any, source: str = "<config>", base: Path | None = None) -> Loaded:
    """Validate a config mapping (also the crawl and curation sections, with placeholders standing in)."""
    if not isinstance(data, dict):
        raise NightlyConfigError(f"{source}: expected a mapping at the top level")
    try:
        cfg = NightlyConfig.model_validate(data)
    except ValidationError as exc:
        lines = validation_problems(exc, "<config>")
        raise NightlyConfigError(f"{source}: invalid nightly config\n  " + "\n  ".join(lines)) from None
    problems: list[str] = []
    for key in ("run_id", "output", "blob_root"):
        if key in cfg.crawl:
            problems.append(f"crawl.{key}: set by the nightly job; remove it")
    if not problems:
        try:
            parse_config(_fill(cfg.crawl, {"chromedriver": "http://127.0.0.1:1", "demo_app": "http://127.0.0.1:1"}),
                         "crawl")
        except CrawlConfigError as exc:
            problems += ["crawl." + line.strip() for line in str(exc).splitlines()[1:]]
    fields = {f.name for f in dataclasses.fields(CurateConfig)}
    for key in cfg.curation:
        if key in CURATION_OWNED:
            problems.append(f"curation.{key}: set by the nightly job; remove it")
        elif key in REMOVED_SETTINGS:
            problems.append(f"curation.{key}: {REMOVED_SETTINGS[key]}")
        elif key not in fields:
            known = ", ".join(sorted(fields - set(CURATION_OWNED)))
            problems.append(f"curation.{key}: unknown setting (known: {known})")
    if cfg.synthesis.backend != "offline" and not cfg.synthesis.model:
        problems.append(f"synthesis.model: required for the {cfg.synthesis.backend} backend")
    text = json.dumps(cfg.crawl)
    if "${chromedriver}" in text and not cfg.servers.chromedriver:
        problems.append("servers.chromedriver: the crawl section uses ${chromedriver}; set servers.chromedriver: true")
    if "${demo_app}" in text and cfg.servers.demo_app is None:
        problems.append("servers.demo_app: the crawl section uses ${demo_app}; set servers.demo_app: {port: N}")
    if problems:
        raise NightlyConfigError(f"{source}: invalid nightly config\n  " + "\n  ".join(problems))
    return Loaded(cfg, (base or Path(".")).resolve(), source)


def load_nightly(path: str | Path) -> Loaded:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise NightlyConfigError(f"{p}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise NightlyConfigError(f"{p}: not valid YAML: {exc}") from None
    return parse_nightly(data, str(p), p.parent)
