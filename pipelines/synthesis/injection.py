"""Recognizing crawled text that tries to act as an instruction to a model.

Crawled UI text is data. Prompts already quote it so it cannot escape its block (``calls.render_data``);
this module is the second line: screen names are never taken from such text, and a synthesized task or step
that repeats it is rejected (``parse``), so an app cannot steer what ends up in a training set.
"""

from __future__ import annotations

import re

INJECTION_RE = re.compile(
    r"ignore\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|preceding)\s+(instructions|prompts?|rules)"
    r"|disregard\s+(all\s+|the\s+)?(previous|prior|above)"
    r"|(reveal|print|show)\s+(your|the)\s+system\s+prompt"
    r"|you\s+are\s+now\s+(a|an|in)\b"
    r"|new\s+instructions\s*:"
    r"|忽略(之前|以上|先前|上面)的?(所有)?(指令|指示|提示)",
    re.IGNORECASE,
)


def looks_like_injection(text: str) -> bool:
    return bool(text and INJECTION_RE.search(text))
