"""A client for OpenAI-compatible chat-completions servers (what ``vllm serve <Qwen2.5-VL>`` exposes).

Screenshots travel as base64 ``data:`` URLs. Requests run on a bounded thread pool (``concurrency``, 32 by
default: a vLLM server batches that many well) sharing one HTTP connection pool; each has a timeout, and
transient failures (connection errors, timeouts, 429 and 5xx) are retried with exponential backoff and jitter,
waiting at least what a ``Retry-After`` header asks. A call that still fails is a ``Failure`` with a short
reason, so one bad request never sinks the run, while a server that cannot be reached at all is caught once,
up front, by ``check`` with a message that says where it looked.

Structured output: with ``guided="auto"`` (the default) every request carries an OpenAI ``response_format``
JSON schema — vLLM turns it into guided decoding, so a step answer cannot be malformed JSON — and the JSON
answer is rendered into GUI-Libra's ``<think>…</think><answer>{…}</answer>`` text the parser reads. A server
that refuses ``response_format`` (HTTP 400 naming it) is asked again without it, and the client stops sending
it for the rest of the run. ``guided="guided_json"`` uses vLLM's older ``guided_json`` extra parameter;
``"off"`` sends neither. ``max_images=1`` is for servers started with ``--limit-mm-per-prompt image=1``: a task
call then sends only the goal screen.
"""

from __future__ import annotations

import base64
import email.utils
import json
import random
import threading
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
MAX_RETRY_AFTER_S = 120.0
GUIDED_MODES = ("auto", "json_schema", "guided_json", "off")

STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thinking": {"type": "string"},
        "action_description": {"type": "string"},
        "action_type": {"type": "string"},
        "value": {"type": "string"},
        "point_2d": {"anyOf": [{"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                               {"type": "null"}]},
    },
    "required": ["thinking", "action_description", "action_type", "value", "point_2d"],
    "additionalProperties": False,
}
TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string"}},
    "required": ["task"],
    "additionalProperties": False,
}


def retry_after_s(header: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), capped; None if absent."""
    if not header:
        return None
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(header)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return min(MAX_RETRY_AFTER_S, max(0.0, when.timestamp() - time.time()))


def from_structured(kind: str, content: str) -> str:
    """A guided JSON answer in the text format ``parse`` reads (anything unparseable is passed through as is,
    so the parser names what is wrong)."""
    try:
        data = json.loads(content)
    except ValueError:
        return content
    if kind != "step" or not isinstance(data, dict) or "thinking" not in data:
        return content
    thinking = str(data.pop("thinking") or "")
    return f"<think>{thinking}</think><answer>{json.dumps(data, ensure_ascii=False)}</answer>"


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class OpenAIBackend(Backend):
    name = "openai"
    needs_images = True

    def __init__(self, prompts: PromptSet, model: str, *, base_url: str, api_key: str | None = None,
                 concurrency: int = 32, timeout_s: float = 60.0, retries: int = 3, backoff_s: float = 0.5,
                 max_tokens: int = 512, temperature: float = 0.0, guided: str = "auto",
                 max_images: int | None = None):
        super().__init__(prompts, model)
        if guided not in GUIDED_MODES:
            raise ValueError(f"guided must be one of {', '.join(GUIDED_MODES)}, not {guided!r}")
        self.guided = guided
        self.max_images = max_images
        self._guided_refused = threading.Event()
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

    def _structured(self, call: Call) -> dict[str, Any]:
        """The request fields asking for guided JSON output, per ``guided`` (none once the server refused)."""
        if self.guided == "off" or self._guided_refused.is_set():
            return {}
        schema = STEP_SCHEMA if call.kind == "step" else TASK_SCHEMA
        if self.guided == "guided_json":
            return {"guided_json": schema}
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": f"trajforge_{call.kind}", "schema": schema}}}

    def _body(self, call: Call, images: list[bytes]) -> dict[str, Any]:
        if self.max_images is not None and len(images) > self.max_images:
            images = images[-self.max_images:]  # the last image is the one a call is about (goal / current)
        return {"model": self.model, "messages": self.messages(call, images), "max_tokens": self.max_tokens,
                "temperature": self.temperature, **self._structured(call)}

    def _one(self, call: Call) -> Result:
        images = load_images(self, call)
        if isinstance(images, Failure):
            return images
        body = self._body(call, images)
        guided = any(k in body for k in ("response_format", "guided_json"))
        last = Failure("unreachable", "no attempt made")
        wait = 0.0
        attempt = -1
        while attempt < self.retries:
            attempt += 1
            if attempt:
                time.sleep(max(wait, self.backoff_s * 2 ** (attempt - 1) * (1 + random.random() / 2)))
            wait = 0.0
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
                wait = retry_after_s(r.headers.get("retry-after")) or 0.0
                continue
            if r.status_code == 400 and guided and any(k in r.text for k in ("response_format", "json_schema",
                                                                               "guided")):
                self._guided_refused.set()  # this server cannot decode to a schema: ask plainly from now on
                body = self._body(call, images)
                guided = False
                attempt -= 1  # a refused feature is not a failed attempt
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
            if guided:
                text = from_structured(call.kind, text)
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
