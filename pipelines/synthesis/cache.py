"""A content-addressed, on-disk cache of backend answers, so a nightly rerun never pays twice for a call.

The key is the sha256 of (backend, model, prompt version, call digest); the call digest covers the payload
and the screenshots' sha256, so any change to what the model would see is a new key. Entries are written to
a temporary file and renamed, so a killed run leaves either a whole entry or none. Failures are not cached:
a timeout tonight is retried tomorrow.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pipelines.synthesis.backends.base import Completion
from pipelines.synthesis.calls import Call
from schemas.fileio import write_json_atomic


def cache_key(backend: str, model: str, prompt_version: str, call: Call, revision: str = "") -> str:
    """``revision`` is the backend's own code digest where that decides the text (``Backend.revision``)."""
    parts = (backend, model, prompt_version, call.digest()) + ((revision,) if revision else ())
    body = "\x1f".join(parts)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class CallCache:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError):
            return None  # an unreadable entry is a miss, and the next put replaces it
        return Completion(text=data["text"], prompt_tokens=data.get("prompt_tokens", 0),
                          completion_tokens=data.get("completion_tokens", 0), cached=True)

    def put(self, key: str, completion: Completion) -> None:
        # Not fsynced: a lost entry after a power cut is only a repeated call, and a run writes thousands.
        write_json_atomic(self._path(key), {"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                                            "completion_tokens": completion.completion_tokens}, indent=None,
                          durable=False)

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json"))
