"""The safety guard: actions the explorer must never execute, and the audit log of what it did execute.

A crawler that taps everything will eventually delete the account, pay, send a message or log itself out.
The deny-list is matched against everything that names an action's effect — the element's label and
description, its resource id, a link's target and the URL of the form it submits — in English and Chinese
by default, and extended per app in the crawl config. The policy only ever sees candidates that passed.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from explorers.screen import Widget

DEFAULT_DENY_LABELS = (
    r"\bdelete\b", r"\bremove\b", r"\bpay\b", r"\bbuy\b", r"\bpurchase\b", r"\bcheck ?out\b", r"\bsend\b",
    r"\btransfer\b", r"\blog ?out\b", r"\bsign ?out\b", r"\buninstall\b", r"\border now\b", r"\bsubscribe\b",
    r"\bfactory reset\b", "删除", "移除", "支付", "付款", "购买", "结算", "发送", "转账", "退出", "注销", "卸载",
)
DEFAULT_DENY_URLS = (r"/delete\b", r"/remove\b", r"/pay\b", r"/checkout\b", r"/send\b", r"/logout\b",
                     r"/signout\b", r"/transfer\b", r"/purchase\b")
# Resource ids are compound words (``pay-button``, ``btnSend``): match whole parts, not substrings of "display".
DEFAULT_DENY_IDS = tuple(
    rf"(?<![a-z]){w}(?![a-z])"
    for w in ("delete", "remove", "pay", "checkout", "send", "logout", "log-?out", "sign-?out", "transfer",
              "uninstall", "purchase", "buy")
)


def _compile(patterns: Iterable[str]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.IGNORECASE) for p in patterns]


@dataclass
class SafetyGuard:
    labels: list[str] = field(default_factory=lambda: list(DEFAULT_DENY_LABELS))
    urls: list[str] = field(default_factory=lambda: list(DEFAULT_DENY_URLS))
    resource_ids: list[str] = field(default_factory=lambda: list(DEFAULT_DENY_IDS))

    def __post_init__(self) -> None:
        self._labels = _compile(self.labels)
        self._urls = _compile(self.urls)
        self._ids = _compile(self.resource_ids)

    def blocked(self, widget: Widget | None, typed_text: str | None = None) -> str | None:
        """Why an action on ``widget`` is denied, or None when it is allowed."""
        if widget is None:
            return None
        e = widget.element
        for text in (e.text, e.content_desc):
            for p in self._labels:
                if text and p.search(text):
                    return f"label {text[:40]!r} matches deny pattern {p.pattern!r}"
        for p in self._ids:
            if e.resource_id and p.search(e.resource_id):
                return f"resource id {e.resource_id!r} matches deny pattern {p.pattern!r}"
        # A click inside a form submits it (Enter/submit buttons); typing alone does not.
        urls = [widget.href]
        if typed_text is None:
            urls.append(widget.form_action)
        for url in urls:
            for p in self._urls:
                if url and p.search(url):
                    return f"target URL {url!r} matches deny pattern {p.pattern!r}"
        return None

    def url_blocked(self, url: str) -> str | None:
        for p in self._urls:
            if p.search(url):
                return f"URL {url!r} matches deny pattern {p.pattern!r}"
        return None


class AuditLog:
    """Append-only JSON Lines: every executed (or refused) action with the reason it was chosen."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, **entry: Any) -> None:
        entry = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), **entry}
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line)

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill; everything before it is intact
        return out
