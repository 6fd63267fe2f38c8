"""The one interface every synthesis backend implements, and what a call returns.

A backend turns a batch of ``Call``s into raw text, one result per call, in order. It never parses or
validates: that is ``parse``'s job, identical for every backend, so a rule-based answer and a VLM's answer
are judged by the same rules. A call that could not be answered is a ``Failure`` with a short reason (it
becomes a reject), while a backend that cannot work at all (server down, model directory missing) raises
``BackendUnavailable`` before the run starts, with a message that says what to fix.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.synthesis.calls import Call, render_data
from pipelines.synthesis.prompts import PromptSet


class BackendUnavailable(RuntimeError):
    """The backend cannot serve any call (unreachable server, missing model)."""


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


@dataclass
class Failure:
    reason: str  # short countable code: timeout, server_error, unreachable, generation_error
    detail: str = ""


Result = Completion | Failure


class Backend(ABC):
    """``name`` and ``model`` go into the cache key and every record's lineage."""

    name: str = "base"

    needs_images = False  # model backends read screenshots; the runner attaches the blob store's reader

    def __init__(self, prompts: PromptSet, model: str):
        self.prompts = prompts
        self.model = model
        self.image_source: Callable[[str], bytes] | None = None

    @property
    def prompt_version(self) -> str:
        return self.prompts.version

    @property
    def revision(self) -> str:
        """What else decides the text, for the call cache only (not lineage): "" for a model behind a server or
        a path (its name is the user's promise); the offline rules give a digest of their own code, so an
        upgraded trajforge never serves texts the old rules wrote."""
        return ""

    @property
    def model_id(self) -> str:
        return f"{self.name}:{self.model}"

    def check(self) -> None:  # noqa: B027 - optional hook
        """Raise ``BackendUnavailable`` if the backend cannot work (called once before a run)."""

    @abstractmethod
    def run(self, calls: Sequence[Call]) -> list[Result]:
        """One result per call, in order."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release servers' connections or model memory."""


def load_images(backend: Backend, call: Call) -> list[bytes] | Failure:
    """The call's screenshots as PNG bytes, or a ``Failure`` naming the first one that cannot be read."""
    if backend.image_source is None:
        return Failure("missing_screenshot", "no blob store attached (the graph directory has no blobs/)")
    out = []
    for sha in call.images:
        try:
            out.append(backend.image_source(sha))
        except Exception as exc:  # BlobNotFound, BlobCorrupt, an unreachable object store
            return Failure("missing_screenshot", f"screenshot {sha}: {type(exc).__name__}: {exc}")
    return out


# What the checks use but the model must not see: the executed action in full and the next screen's texts.
HIDDEN_KEYS = ("expect",)


def user_text(prompts: PromptSet, call: Call) -> str:
    """The user-turn text of a call for a model backend: the versioned template with the data quoted."""
    template = prompts.step if call.kind == "step" else prompts.task
    data: Any = {k: v for k, v in call.payload.items() if k not in HIDDEN_KEYS}
    text = prompts.render(
        template,
        data=render_data(data),
        language_name=prompts.language_name(call.payload.get("language", "en")),
        app_id=str(call.payload.get("app_id", "")).replace("<", "").replace(">", ""),
    )
    if call.attempt and call.feedback:
        reason = "".join(ch for ch in call.feedback if ch.isalnum() or ch == "_")[:60]
        text += (f"\nYour previous answer to this request was rejected ({reason}). Answer again, correcting that, "
                 "in exactly the format asked for.")
    return text
