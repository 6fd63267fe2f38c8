"""Filters and search over a dataset version: app, action type, reject reason, flags, free text or id.

One ``Filters`` value travels with the annotator through a queue (it is part of every queue, sample and label
URL), so "work through the Settings app's swipes" or "audit every ``point_outside_bbox`` reject" is one click.
The static part (app, action, gate reason, flags, text) depends only on the dataset version and is matched once
per queue ordering and cached; the reason filter also matches human reject reasons, which depend on labels and
are checked per candidate — the annotator's own rejects only, unless they adjudicate (blind overlap: an
annotator must not learn others' verdicts by filtering on them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from urllib.parse import urlencode

from review.dataset import SampleRef

MAX_QUERY = 200
FLAGS = {"recovery": "Recovery mistake steps (context, not training targets)",
         "negative": "Noise copies (negatives)",
         "targets": "Ordinary training targets only"}
STATUSES = {"todo": "Not labelled by me", "done": "Labelled by me"}


@dataclass(frozen=True)
class Filters:
    app: str = ""
    action: str = ""
    reason: str = ""  # a gate reason (``point_outside_bbox`` or ``stage:reason``) or a human reason code
    flag: str = ""
    q: str = ""  # case-insensitive substring of id, trajectory id, task or instruction
    status: str = ""  # browse only: todo | done

    @classmethod
    def from_params(cls, params: Mapping[str, object], prefix: str = "") -> Filters:
        """From query (``app=…``) or form (``f_app=…``, with ``prefix="f_"``) parameters; unknown flags and
        statuses are ignored, text is capped."""
        def get(name: str) -> str:
            return str(params.get(prefix + name) or "").strip()[:MAX_QUERY]

        flag, status = get("flag"), get("status")
        return cls(app=get("app"), action=get("action"), reason=get("reason"),
                   flag=flag if flag in FLAGS else "", q=get("q"), status=status if status in STATUSES else "")

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def items(self) -> list[tuple[str, str]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self) if getattr(self, f.name)]

    def query(self, **extra: object) -> str:
        """``app=…&q=…`` plus ``extra`` (e.g. ``pos``), URL-encoded; empty values left out."""
        pairs = self.items() + [(k, str(v)) for k, v in extra.items() if v is not None and v != ""]
        return urlencode(pairs)

    def static_key(self) -> tuple[str, ...]:
        return (self.app, self.action, self.reason, self.flag, self.q.casefold())

    def matches_static(self, ref: SampleRef) -> bool:
        """Everything that depends on the dataset alone. A reason filter passes here when the gate reason
        matches *or* could still match a human reject (checked per candidate by ``matches_labels``)."""
        if self.app and ref.app_id != self.app:
            return False
        if self.action and ref.action_type != self.action:
            return False
        if self.flag == "recovery" and ref.train_target:
            return False
        if self.flag == "negative" and not ref.negative:
            return False
        if self.flag == "targets" and (not ref.train_target or ref.negative):
            return False
        if self.q:
            needle = self.q.casefold()
            if needle not in ref.search_text:
                return False
        return True

    def gate_reason_matches(self, ref: SampleRef) -> bool:
        r = self.reason
        return bool(ref.reject_reason) and r in (ref.reject_reason, f"{ref.reject_stage}:{ref.reject_reason}",
                                                 ref.reject_stage)

    def matches_labels(self, ref: SampleRef, human_reasons: Callable[[SampleRef], set[str]],
                       mine: Callable[[SampleRef], bool]) -> bool:
        """The label-dependent part: reason (gate or visible human reject) and status."""
        if self.reason and not self.gate_reason_matches(ref) and self.reason not in human_reasons(ref):
            return False
        if self.status == "todo" and mine(ref):
            return False
        return not (self.status == "done" and not mine(ref))
