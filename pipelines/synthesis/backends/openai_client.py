"""A client for OpenAI-compatible chat-completions servers (what ``vllm serve <Qwen2.5-VL>`` exposes).

Screenshots travel as base64 ``data:`` URLs. Requests run on a bounded thread pool (``concurrency``) sharing
one HTTP connection pool; each has a timeout, and transient failures (connection errors, timeouts, 429 and
5xx) are retried with exponential backoff and jitter. A call that still fails is a ``Failure`` with a short
reason, so one bad request never sinks the run, while a server that cannot be reached at all is caught once,
up front, by ``check`` with a message that says where it looked.
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from pipelines.synthesis.backends.base import (
    Backend,
    BackendUnavailable,
    Completion,
    Failure,
    Result,
    load_images,
    user_text,
)
from pipelines.synthesis.calls import Call
from pipelines.synthesis.prompts import PromptSet

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class OpenAIBackend(Backend):
    name = "openai"
    needs_images = True

    def __init__(self, prompts: PromptSet, model: str, *, base_url: str, api_key: str | None = None,
                 concurrency: int = 4, timeout_s: float = 60.0, retries: int = 3, backoff_s: float = 0.5,
                 max_tokens: int = 512, temperature: float = 0.0):
        super().__init__(prompts, model)
        self.base_url = base_url.rstrip("/")
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s,
                                 limits=httpx.Limits(max_connections=self.concurrency))

    def check(self) -> None:
        try:
            r = self.http.get("/models", timeout=min(self.timeout_s, 10.0))
        except httpx.HTTPError as exc:
            raise BackendUnavailable(
                f"cannot reach the OpenAI-compatible server at {self.base_url} ({type(exc).__name__}: {exc}); "
                "start one (e.g. `vllm serve <model>`) or pass --base-url"
            ) from None
        if r.status_code == 401:
            raise BackendUnavailable(f"{self.base_url} refused the API key (HTTP 401); set it with --api-key-env")
        if r.status_code == 200:
            try:
                served = [m["id"] for m in r.json().get("data", [])]
            except (ValueError, KeyError, TypeError, AttributeError):
                served = []
            if served and self.model not in served:
                raise BackendUnavailable(f"{self.base_url} does not serve model {self.model!r} "
                                         f"(it serves: {', '.join(served)})")

    def messages(self, call: Call, images: list[bytes]) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": data_url(png)}} for png in images]
        content.append({"type": "text", "text": user_text(self.prompts, call)})
        return [{"role": "system", "content": self.prompts.system}, {"role": "user", "content": content}]

    def _one(self, call: Call) -> Result:
        images = load_images(self, call)
        if isinstance(images, Failure):
            return images
        body = {"model": self.model, "messages": self.messages(call, images), "max_tokens": self.max_tokens,
                "temperature": self.temperature}
        last = Failure("unreachable", "no attempt made")
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1) * (1 + random.random() / 2))
            try:
                r = self.http.post("/chat/completions", json=body)
            except httpx.TimeoutException as exc:
                last = Failure("timeout", f"no answer within {self.timeout_s:g}s ({type(exc).__name__})")
                continue
            except httpx.TransportError as exc:
                last = Failure("unreachable", f"{type(exc).__name__}: {exc}")
                continue
            if r.status_code in RETRY_STATUS:
                last = Failure("server_error", f"HTTP {r.status_code}: {r.text[:300]}")
                continue
            if r.status_code != 200:
                return Failure("http_error", f"HTTP {r.status_code}: {r.text[:300]}")
            try:
                data = r.json()
                text = data["choices"][0]["message"]["content"]
                usage = data.get("usage") or {}
            except (ValueError, KeyError, IndexError, TypeError):
                return Failure("bad_response", f"not a chat completion: {r.text[:300]}")
            if not isinstance(text, str):
                return Failure("bad_response", "message content is not text")
            return Completion(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
        last.detail = f"after {self.retries + 1} attempts: {last.detail}"
        return last

    def run(self, calls: Sequence[Call]) -> list[Result]:
        if len(calls) <= 1 or self.concurrency == 1:
            return [self._one(c) for c in calls]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(calls)), thread_name_prefix="synth") as pool:
            return list(pool.map(self._one, calls))

    def close(self) -> None:
        self.http.close()
