"""Turn the injected script's result into widgets in screenshot pixels (web platform).

Pure functions over the script's JSON, so the conversion (CSS px → screenshot px via the device pixel
ratio, stable element ids) is tested without a browser.
"""

from __future__ import annotations

from typing import Any

from explorers.screen import Widget
from schemas import BBox, Element
from schemas.base import stable_id


def element_id(tag: str, rid: str, role: str, path: str) -> str:
    """Stable across visits: identity attributes plus the DOM path (never the on-screen position)."""
    return stable_id("web", tag, rid, role, path)


def parse_web_elements(result: dict[str, Any], width: int, height: int) -> list[Widget]:
    """Widgets from ``EXTRACT_JS``'s result; rects are scaled from CSS px to a ``width``×``height`` screenshot."""
    css_w = max(1.0, float(result.get("w") or width))
    css_h = max(1.0, float(result.get("h") or height))
    sx, sy = width / css_w, height / css_h
    widgets: list[Widget] = []
    for raw in result.get("elements") or []:
        x1, y1, x2, y2 = raw["rect"]
        box = BBox(
            x1=round(min(width, max(0.0, x1 * sx)), 1),
            y1=round(min(height, max(0.0, y1 * sy)), 1),
            x2=round(min(width, max(0.0, x2 * sx)), 1),
            y2=round(min(height, max(0.0, y2 * sy)), 1),
        )
        tag, typ = raw.get("tag", ""), raw.get("type", "")
        el = Element(
            id=element_id(tag, raw.get("rid", ""), raw.get("role", ""), raw.get("path", "")),
            role=raw.get("role", ""),
            class_name=f"{tag}:{typ}" if typ else tag,
            text=raw.get("text", ""),
            content_desc=raw.get("desc", ""),
            resource_id=raw.get("rid", ""),
            path=raw.get("path", ""),
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
                href=raw.get("href", ""),
                input_type=typ,
                form_action=raw.get("form_action", ""),
                form_method=raw.get("form_method", ""),
                input_name=raw.get("input_name", ""),
                autocomplete=raw.get("autocomplete", ""),
                required=bool(raw.get("required")),
                value=raw.get("value", ""),
                options=list(raw.get("options") or []),
                in_dialog=bool(raw.get("dialog")),
            )
        )
    return widgets
