"""Is this screen the app's error page? Signals that hold in any web app, never one app's wording.

Why: a value a field rejects, a link to a removed record or a filter the server cannot parse all end on the app's
error page, and every such page is a "new state" to an explorer that does not know better (an accounting UI's
crawl: 32 of 125 states were its error page). The crawl records the verdict on each observation, the benchmark
counts it (``error_state_rate``) and the form filler never types a value that led there into that field again.

Signals, strongest first:
- the HTTP status the document was served with (``PerformanceNavigationTiming.responseStatus`` in Chromium): 4xx
  or 5xx is an error page, whatever it says;
- the document title or the top heading being an HTTP reason phrase ("404 Not Found", "Internal Server Error",
  "Bad Request"): what servers and frameworks put on their generic error pages (a page served 200 by a
  single-page app's router that draws "Page not found" too);
- an uncaught-exception page: a stack trace in the page text (Python's "Traceback (most recent call last)", a
  Java/.NET "Exception ... at ..." trace, a PHP "Fatal error: Uncaught").
"""

from __future__ import annotations

import re

from graph.screen import Screen

# The reason phrases of RFC 9110's 4xx/5xx codes servers show on their own error pages, and the two generic
# headings frameworks add ("Page not found", "Server error").
REASONS = (
    "bad request", "unauthorized", "payment required", "forbidden", "not found", "page not found",
    "method not allowed", "not acceptable", "request timeout", "conflict", "gone", "length required",
    "precondition failed", "content too large", "payload too large", "uri too long", "unsupported media type",
    "unprocessable entity", "unprocessable content", "too many requests", "internal server error", "server error",
    "not implemented", "bad gateway", "service unavailable", "gateway timeout", "access denied",
)
_REASON = re.compile(r"^\s*(?:(?:error|http)\s*)?(?:[45]\d\d\s*[:\-–—|]?\s*)?(?:" + "|".join(
    re.escape(r) for r in REASONS) + r")\s*(?:\([^)]*\))?\s*[.!]?\s*$", re.IGNORECASE)
_CODE_ONLY = re.compile(r"^\s*(?:error\s*)?[45]\d\d(?:\s+error)?\s*$", re.IGNORECASE)
_TRACE = re.compile(r"Traceback \(most recent call last\)|Fatal error: Uncaught|"
                    r"\b[A-Z]\w*(?:Exception|Error)\b[^\n]{0,200}\n?\s*at [\w.$<>]+\(", re.MULTILINE)
TITLE_SPLIT = re.compile(r"\s+[|\-–—·:»]\s+")  # "Not Found - My Site": the site's name after a separator


def _is_reason(text: str) -> bool:
    t = text.strip()
    if not t or len(t) > 80:
        return False
    return bool(_REASON.match(t) or _CODE_ONLY.match(t))


def error_page(screen: Screen) -> str:
    """Why ``screen`` is an error page ("http 400", "title 'Not Found'", "heading …", "stack trace"), or ""."""
    if screen.http_status >= 400:
        return f"http {screen.http_status}"
    title = screen.title.strip()
    parts = [title, *TITLE_SPLIT.split(title)] if title else []
    for part in parts:
        if _is_reason(part):
            return f"title {part.strip()[:60]!r}"
    top: tuple[float, str] | None = None
    texts: list[str] = []
    for w in screen.widgets:
        e = w.element
        if e.role == "heading" and e.text and (top is None or e.bbox.y1 < top[0]):
            top = (e.bbox.y1, e.text)
        if not e.clickable and e.text:
            texts.append(e.text)
    if top is not None and _is_reason(top[1]):
        return f"heading {top[1].strip()[:60]!r}"
    if _TRACE.search("\n".join(texts)):
        return "stack trace"
    return ""
