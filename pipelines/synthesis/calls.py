"""What a synthesizer is asked: one *step call* per distinct graph edge and one *task call* per path.

A call's payload is plain JSON built only from the graph (never from a previous model output except the
step instructions a task call summarizes), so the same edge met in fifty paths is one call, and the payload's
digest is the cache key. Crawled UI text is untrusted: it lives only in the payload, and ``render_data``
quotes it as JSON whose ``<`` and ``>`` are escaped, so screen text can never close the data block in a
prompt and pose as an instruction.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from pipelines.synthesis.graph_input import AppGraph
from pipelines.synthesis.injection import looks_like_injection
from schemas import Action, Observation, Transition
from schemas.exporters.guilibra import action_value, guilibra_type
from schemas.geometry import bbox_to_norm

MAX_TEXTS = 25
MAX_TEXT_CHARS = 80


@dataclass(frozen=True)
class Call:
    """One request to a backend: ``kind`` is ``step`` or ``task``; ``images`` are screenshot sha256s."""

    kind: str
    payload: dict[str, Any]
    images: tuple[str, ...] = field(default_factory=tuple)

    def digest(self) -> str:
        body = json.dumps({"kind": self.kind, "payload": self.payload, "images": self.images},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def render_data(data: Any) -> str:
    """Untrusted data as JSON text that cannot contain a tag: ``<``/``>`` become ``\\u003c``/``\\u003e``."""
    text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _clip(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= MAX_TEXT_CHARS else s[: MAX_TEXT_CHARS - 1] + "…"


def screen_name(obs: Observation) -> str:
    """A short name for a screen: its first heading, else the last URL path segment / activity name."""
    for el in obs.elements:
        if el.role == "heading" and el.text.strip() and not looks_like_injection(el.text):
            return _clip(el.text)
    loc = obs.location
    path = urlparse(loc).path if "://" in loc else loc
    tail = [p for p in path.replace(".", "/").split("/") if p and not p.isdigit()]
    return tail[-1].replace("_", " ").replace("-", " ") if tail else "home"


def screen_summary(obs: Observation) -> dict[str, Any]:
    texts: list[str] = []
    for el in obs.elements:
        label = _clip(el.label)
        if el.visible and label and label not in texts:
            texts.append(label)
        if len(texts) >= MAX_TEXTS:
            break
    loc = obs.location
    return {"screen": screen_name(obs), "location": urlparse(loc).path if "://" in loc else loc, "texts": texts}


def action_payload(action: Action) -> dict[str, Any]:
    return {
        "action_type": guilibra_type(action),
        "value": action_value(action),
        "point_2d": [action.x_norm, action.y_norm] if action.point is not None else None,
    }


def target_payload(obs: Observation, action: Action) -> dict[str, Any] | None:
    el = obs.element(action.target_element_id) if action.target_element_id else None
    if el is None:
        return None
    return {
        "role": el.role,
        "text": _clip(el.text),
        "description": _clip(el.content_desc),
        "resource_id": el.resource_id,
        "label": _clip(el.label),
        "bbox_2d": list(bbox_to_norm(el.bbox.as_tuple(), obs.width, obs.height)),
    }


def step_call(graph: AppGraph, edge: Transition, language: str) -> Call:
    before = graph.observation(edge.from_observation_id)
    after = graph.observation(edge.to_observation_id)
    summary_after = screen_summary(after)
    before_texts = set(screen_summary(before)["texts"])
    summary_after["new_texts"] = [t for t in summary_after["texts"] if t not in before_texts][:10]
    payload = {
        "language": language,
        "app_id": graph.app_id,
        "action": action_payload(edge.action),
        "target": target_payload(before, edge.action),
        "before": screen_summary(before),
        "after": summary_after,
    }
    return Call("step", payload, (before.screenshot_sha256, after.screenshot_sha256))


def task_call(graph: AppGraph, edges: tuple[Transition, ...], step_instructions: list[str], language: str,
              step_payloads: list[dict[str, Any]]) -> Call:
    first = graph.observation(edges[0].from_observation_id)
    last = graph.observation(edges[-1].to_observation_id)
    payload = {
        "language": language,
        "app_id": graph.app_id,
        "steps": step_instructions,
        "actions": [{"action": p["action"], "target": p["target"]} for p in step_payloads],
        "start": screen_summary(first),
        "end": screen_summary(last),
    }
    return Call("task", payload, (first.screenshot_sha256, last.screenshot_sha256))
