"""Turn the injected script's result into widgets in screenshot pixels (web platform).

Pure functions over the script's JSON, so the conversion (CSS px → screenshot px via the device pixel
ratio, stable element ids) is tested without a browser.
"""

from __future__ import annotations

from typing import Any

from graph.screen import Widget
from schemas import BBox, Element
from schemas.base import stable_id


def element_id(tag: str, rid: str, role: str, path: str) -> str:
    """Stable across visits: identity attributes plus the DOM path (never the on-screen position)."""
    return stable_id("web", tag, rid, role, path)


def _s(value: object) -> str:
    """A string field of the script's result; anything else (an element the page smuggled in) reads as empty."""
    return value if isinstance(value, str) else ""


def _i(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else -1


def _options(raw: Any) -> tuple[list[str], list[str]]:
    """(values, labels) of a <select>'s enabled options; accepts the older plain list of values too."""
    values: list[str] = []
    labels: list[str] = []
    for o in raw or []:
        if isinstance(o, str):
            values.append(o)
            labels.append(o)
        elif isinstance(o, (list, tuple)) and len(o) >= 2 and not (len(o) > 2 and o[2]):
            values.append(_s(o[0]))
            labels.append(_s(o[1]))
    return values, labels


def parse_web_elements(result: dict[str, Any], width: int, height: int) -> list[Widget]:
    """Widgets from ``EXTRACT_JS``'s result; rects are scaled from CSS px to a ``width``×``height`` screenshot."""
    css_w = max(1.0, float(result.get("w") or width))
    css_h = max(1.0, float(result.get("h") or height))
    sx, sy = width / css_w, height / css_h
    widgets: list[Widget] = []
    for raw in result.get("elements") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("rect"), list) or len(raw["rect"]) != 4:
            continue  # a malformed entry is one element lost, never the whole screen
        x1, y1, x2, y2 = (float(v) for v in raw["rect"])
        box = BBox(
            x1=round(min(width, max(0.0, x1 * sx)), 1),
            y1=round(min(height, max(0.0, y1 * sy)), 1),
            x2=round(min(width, max(0.0, x2 * sx)), 1),
            y2=round(min(height, max(0.0, y2 * sy)), 1),
        )
        tag, typ = _s(raw.get("tag")), _s(raw.get("type"))
        values, labels = _options(raw.get("options"))
        el = Element(
            id=element_id(tag, _s(raw.get("rid")), _s(raw.get("role")), _s(raw.get("path"))),
            role=_s(raw.get("role")),
            class_name=f"{tag}:{typ}" if typ else tag,
            text=_s(raw.get("text")),
            content_desc=_s(raw.get("desc")),
            resource_id=_s(raw.get("rid")),
            path=_s(raw.get("path")),
            bbox=box,
            clickable=bool(raw.get("clickable")),
            long_clickable=False,
            editable=bool(raw.get("editable")),
            scrollable=bool(raw.get("scrollable")),
            checkable=bool(raw.get("checkable")),
            checked=bool(raw.get("checked")),
            enabled=bool(raw.get("enabled", True)),
            visible=bool(raw.get("visible", True)),
        )
        widgets.append(
            Widget(
                element=el,
                tag=tag,
                href=_s(raw.get("href")),
                input_type=typ,
                form_action=_s(raw.get("form_action")),
                form_method=_s(raw.get("form_method")),
                input_name=_s(raw.get("input_name")),
                autocomplete=_s(raw.get("autocomplete")),
                required=bool(raw.get("required")),
                value=_s(raw.get("value")),
                options=values,
                option_labels=labels,
                in_dialog=bool(raw.get("dialog")),
                pattern=_s(raw.get("pattern")),
                min=_s(raw.get("min")),
                max=_s(raw.get("max")),
                step=_s(raw.get("step")),
                min_length=_i(raw.get("minlength")),
                max_length=_i(raw.get("maxlength")),
                placeholder=_s(raw.get("placeholder")),
                suggestions=[_s(v) for v in raw.get("suggest") or [] if _s(v)],
            )
        )
    return widgets
