"""Build a backend by name, importing heavy dependencies (httpx, torch/transformers) only when chosen."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pipelines.synthesis.backends.base import Backend
from pipelines.synthesis.prompts import DEFAULT_VERSION, load_prompts

# What `vllm serve` listens on by default; the one place this URL is written (CLI, nightly config and Beam
# workers read it from here).
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_CONCURRENCY = 32  # what one vLLM server batches well; lower it for rate-limited hosted APIs


def make_backend(name: str, *, model: str | None = None, base_url: str = DEFAULT_BASE_URL,
                 api_key: str | None = None, concurrency: int = DEFAULT_CONCURRENCY, timeout_s: float = 60.0,
                 retries: int = 3, prompt_version: str = DEFAULT_VERSION, guided: str = "auto",
                 max_images: int | None = None, device: str = "auto") -> Backend:
    prompts = load_prompts(prompt_version)
    if name == "offline":
        from pipelines.synthesis.backends.offline import OfflineBackend

        return OfflineBackend(prompts)
    if name == "openai":
        from pipelines.synthesis.backends.openai_client import OpenAIBackend

        if not model:
            raise ValueError("--model is required for the openai backend (the served model name)")
        return OpenAIBackend(prompts, model, base_url=base_url, api_key=api_key, concurrency=concurrency,
                             timeout_s=timeout_s, retries=retries, guided=guided, max_images=max_images)
    if name == "transformers":
        from pipelines.synthesis.backends.transformers_vlm import TransformersBackend

        if not model:
            raise ValueError("--model is required for the transformers backend (a local model directory)")
        if not Path(model).is_dir():
            raise FileNotFoundError(f"--model {model}: no such model directory")
        return TransformersBackend(prompts, model, device=device)
    raise ValueError(f"unknown backend {name!r}")


@dataclass(frozen=True)
class BackendSpec:
    """How to build a backend, as plain data: what a Beam worker receives instead of a live backend.

    A live backend holds sockets or model weights and cannot be pickled into a pipeline; a spec can, and
    each worker builds its own backend from it (once, see ``beam_inference``). The API key is read from the
    environment variable ``api_key_env`` when the backend is built, so the key itself never travels inside a
    serialized pipeline (on a remote runner, set that variable on the workers).
    """

    name: str = "offline"
    model: str | None = None
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    timeout_s: float = 60.0
    retries: int = 3
    prompt_version: str = DEFAULT_VERSION
    guided: str = "auto"
    max_images: int | None = None
    device: str = "auto"

    def __call__(self) -> Backend:
        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return make_backend(self.name, model=self.model, base_url=self.base_url, api_key=api_key,
                            concurrency=self.concurrency, timeout_s=self.timeout_s, retries=self.retries,
                            prompt_version=self.prompt_version, guided=self.guided, max_images=self.max_images,
                            device=self.device)
