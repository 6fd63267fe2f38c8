"""Versioned prompt files, shipped as package data.

A prompt set is a directory (``v1/``): ``system.txt``, ``step.txt`` and ``task.txt`` for model backends and
``offline.json`` for the rule-based one. The version that goes into every record's lineage is the directory
name plus a digest of the files, so editing a prompt without bumping the directory still changes the lineage
and the cache key (a nightly rerun never reuses an answer to a different prompt).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

DEFAULT_VERSION = "v2"
FILES = ("system.txt", "step.txt", "task.txt", "offline.json")


@dataclass(frozen=True)
class PromptSet:
    version: str  # e.g. "v1+3fa2c1d0"
    system: str
    step: str
    task: str
    offline: dict[str, Any]

    def language_name(self, language: str) -> str:
        return self.offline["language_names"].get(language, language)

    def render(self, template: str, **values: str) -> str:
        out = template
        for k, v in values.items():
            out = out.replace("{{" + k + "}}", v)
        return out


def load_prompts(version: str = DEFAULT_VERSION) -> PromptSet:
    """Read a prompt set from the package; unknown versions fail with the versions that exist."""
    root = resources.files(__name__)
    folder = root.joinpath(version)
    if not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_"))
        raise ValueError(f"unknown prompt version {version!r}; available: {', '.join(known)}")
    texts = {name: folder.joinpath(name).read_text(encoding="utf-8") for name in FILES}
    digest = hashlib.sha256("\x1f".join(texts[n] for n in FILES).encode("utf-8")).hexdigest()[:8]
    return PromptSet(
        version=f"{version}+{digest}",
        system=texts["system.txt"].strip(),
        step=texts["step.txt"].strip(),
        task=texts["task.txt"].strip(),
        offline=json.loads(texts["offline.json"]),
    )
