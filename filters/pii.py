"""PII redaction: emails, phone numbers and card-like numbers in text, and the screen regions showing them.

Redaction happens on kept samples right before the writer, so no shard, reject payload of a kept record, or
redacted blob ever holds the original. Text is replaced by typed placeholders (``[EMAIL]``) so a model still
learns *that* an email goes into the field. Card numbers must pass the Luhn check, so order numbers and
timestamps survive. On screenshots, the boxes of elements whose text matched are blurred (a strong Gaussian
blur, then pixelation, so the text cannot be recovered by sharpening).
"""

from __future__ import annotations

import io
import re
from typing import Any

from PIL import Image, ImageFilter

from schemas import Observation, Sample

EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
PHONE = re.compile(
    r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?)?\d{3,4}[\s.-]?\d{3,4}(?:[\s.-]?\d{2,4})?(?![\w.])"
)


def luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for k, ch in enumerate(digits):
        d = int(ch)
        if k % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group(0))
    return "[CARD]" if 13 <= len(digits) <= 19 and luhn_ok(digits) else m.group(0)


def _phone(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group(0))
    return "[PHONE]" if 7 <= len(digits) <= 15 else m.group(0)


def redact_text(text: str) -> tuple[str, int]:
    """Text with PII replaced, and how many replacements were made."""
    if not text:
        return text, 0
    out = EMAIL.sub("[EMAIL]", text)
    out = CARD.sub(_card, out)
    out = PHONE.sub(_phone, out)
    if out == text:
        return text, 0
    return out, sum(out.count(tag) - text.count(tag) for tag in ("[EMAIL]", "[CARD]", "[PHONE]"))


def has_pii(text: str) -> bool:
    return redact_text(text)[1] > 0


def blur_regions(png: bytes, boxes: list[tuple[float, float, float, float]]) -> bytes:
    """The PNG with each box blurred beyond recognition (boxes clipped to the image)."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    w, h = img.size
    for x1, y1, x2, y2 in boxes:
        box = (max(0, int(x1)), max(0, int(y1)), min(w, int(x2 + 0.999)), min(h, int(y2 + 0.999)))
        if box[2] - box[0] < 1 or box[3] - box[1] < 1:
            continue
        region = img.crop(box).filter(ImageFilter.GaussianBlur(radius=12))
        small = region.resize((max(1, region.width // 16), max(1, region.height // 16)), Image.Resampling.BILINEAR)
        img.paste(small.resize(region.size, Image.Resampling.NEAREST), box)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def redact_sample(s: Sample) -> Sample:
    """The sample with PII replaced in every text field (task, instruction, reasoning, history, typed text)."""
    updates: dict[str, Any] = {}
    for name in ("task", "instruction", "reasoning"):
        value = getattr(s, name)
        if value:
            new, n = redact_text(value)
            if n:
                updates[name] = new
    history = [redact_text(h)[0] for h in s.history]
    if history != s.history:
        updates["history"] = history
    if s.action.text and has_pii(s.action.text):
        updates["action"] = s.action.model_copy(update={"text": redact_text(s.action.text)[0]})
    if any(a.text and has_pii(a.text) for a in s.accepted_actions):
        updates["accepted_actions"] = [a.model_copy(update={"text": redact_text(a.text)[0]}) if a.text else a
                                       for a in s.accepted_actions]
    return s.model_copy(update=updates) if updates else s


def pii_boxes(obs: Observation) -> list[tuple[float, float, float, float]]:
    """Boxes of the visible elements whose text or description holds PII (blurred on the screenshot)."""
    return [e.bbox.as_tuple() for e in obs.elements if e.visible and (has_pii(e.text) or has_pii(e.content_desc))]
