"""An action as shapes to draw over its screenshot: point, target box, swipe / scroll arrow, typed text.

The shapes are in screenshot pixels, and the page draws them as SVG with ``viewBox = 0 0 width height`` laid
exactly over the image, so an overlay is pixel-true at any display size and a browser test can read it from the
DOM. Pure function of the action: no I/O, easy to test.

Shapes that sit at the action's point carry ``group="point"`` (a swipe's end handle ``group="end"``), so the page
can move them together while the annotator drags the point; the page draws points as outlines (a ring with a
halo and ticks outside it), which keep the label under the point readable.

Desktop mouse actions must not look like plain clicks to a reviewer: a right / middle / double / triple click
draws one ring per click (role ``click_ring``) and a label naming the variant (role ``click_kind``, e.g.
``right-click``, ``double-click``); a hover is a hollow-looking ring of its own role (``hover``) and a label.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas import Action

# A type without a point shows as a small badge on a filmstrip thumbnail (and typed text as a keyboard): a
# reviewer scanning the strip sees what each step did without opening it.
GLYPHS = {"type": "⌨ type", "select": "☰ select", "key": "⏎ key", "open_app": "▶ app", "answer": "❝ answer",
          "navigate_back": "← back", "navigate_home": "⌂ home", "wait": "◷ wait", "done": "✓ done"}
# How far a direction-only swipe or scroll arrow reaches, as a fraction of the shorter image side.
ARROW_FRACTION = 0.25
DIRECTION_VECTORS = {"up": (0.0, -1.0), "down": (0.0, 1.0), "left": (-1.0, 0.0), "right": (1.0, 0.0)}


@dataclass(frozen=True)
class Shape:
    """One SVG primitive. ``kind`` is circle | rect | arrow | text; unused coordinates stay 0."""

    kind: str
    role: str  # point | long_press | hover | click_ring | click_kind | target | swipe | scroll | typed_text
    x: float = 0.0
    y: float = 0.0
    x2: float = 0.0
    y2: float = 0.0
    r: float = 0.0
    text: str = ""
    group: str = ""  # "point": moves with the action's point; "end": with a swipe's end point


def _radius(width: int, height: int) -> float:
    return max(8.0, min(width, height) * 0.025)


def shapes_for(action: Action, width: int, height: int) -> list[Shape]:
    """The shapes that show what ``action`` does on a ``width`` × ``height`` screenshot."""
    out: list[Shape] = []
    r = _radius(width, height)
    t = action.type
    pt = action.point
    if action.target_bbox is not None:
        b = action.target_bbox
        out.append(Shape("rect", "target", b.x1, b.y1, b.x2, b.y2))
    if t in ("swipe", "scroll"):
        start, end = _arrow(action, width, height)
        out.append(Shape("arrow", t, start[0], start[1], end[0], end[1]))
        out.append(Shape("circle", "point", start[0], start[1], r=r * 0.6, group="point"))
        if action.x2 is not None:
            out.append(Shape("circle", "swipe_end", end[0], end[1], r=r * 0.6, group="end"))
    elif t == "hover" and pt is not None:
        out.append(Shape("circle", "hover", pt[0], pt[1], r=r, group="point"))
        out.append(_label("hover", pt, width, height, r))
    elif pt is not None:
        variant = t == "click" and (action.button is not None or action.clicks is not None)
        if variant:
            # One ring per further click, largest first so the point stays on top; the label names the button.
            out += [Shape("circle", "click_ring", pt[0], pt[1], r=r * (1 + 0.6 * k), group="point")
                    for k in range((action.clicks or 1) - 1, 0, -1)]
        out.append(Shape("circle", "long_press" if t == "long_press" else "point", pt[0], pt[1], r=r,
                         group="point"))
        if t == "long_press":
            out.append(Shape("circle", "long_press", pt[0], pt[1], r=r * 1.8, group="point"))
        if variant:
            out.append(_label(variant_label(action), pt, width, height, r))
    if action.text:
        # Typed text goes next to the point when there is one, else in the top-left corner.
        tx, ty = (pt[0] + r * 1.5, pt[1] - r * 1.5) if pt is not None else (r, r * 2)
        tx = min(max(tx, 0.0), width * 0.6)
        ty = min(max(ty, r * 2), height - r)
        out.append(Shape("text", "typed_text", tx, ty, text=action.text,
                         group="point" if pt is not None else ""))
    elif action.key:
        out.append(Shape("text", "typed_text", r, r * 2, text=f"key: {action.key}"))
    return out


def variant_label(action: Action) -> str:
    """``right-click``, ``double-click``, ``double right-click``: the click variant as a reviewer reads it."""
    return action.full_type.replace("_click", "-click").replace("_", " ")


def _label(text: str, pt: tuple[float, float], width: int, height: int, r: float) -> Shape:
    """A variant label below-right of the point (typed text goes above-right), kept inside the image."""
    x = min(max(pt[0] + r * 1.5, 0.0), width * 0.6)
    y = min(max(pt[1] + r * 3.0, r * 2), height - r)
    return Shape("text", "click_kind", x, y, text=text, group="point")


def _arrow(action: Action, width: int, height: int) -> tuple[tuple[float, float], tuple[float, float]]:
    pt = action.point
    if pt is not None and action.x2 is not None and action.y2 is not None:
        return pt, (action.x2, action.y2)
    start = pt if pt is not None else (width / 2, height / 2)
    dx, dy = DIRECTION_VECTORS.get(action.direction or "down", (0.0, 1.0))
    reach = min(width, height) * ARROW_FRACTION
    end = (min(max(start[0] + dx * reach, 0.0), width), min(max(start[1] + dy * reach, 0.0), height))
    return start, end


def glyph_for(action: Action) -> str:
    """The badge a thumbnail shows for ``action`` ('' when its point, box or arrow says it all)."""
    if action.type in GLYPHS:
        return GLYPHS[action.type]
    if action.point is None and action.type not in ("swipe", "scroll") and action.target_bbox is None:
        return action.full_type.replace("_", " ")  # a pointed type without its point: say what it is
    return ""
