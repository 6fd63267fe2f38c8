"""Action quality gates: the point lands in its target, stays on the image, and the platform can do it."""

from __future__ import annotations

import math

from filters.base import Drop, RecordFilter, Verdict
from filters.item import Item


class PointInTarget(RecordFilter[Item]):
    """A pointed action with a target box must hit the box (GUI-Libra keeps only such steps).

    Not applied to noise negatives: a "moved element" negative misses its box by construction."""

    name = "point_outside_bbox"
    applies_to_negatives = False

    def decide(self, item: Item) -> Verdict:
        a = item.sample.action
        if a.point_in_target() is False:
            b = a.target_bbox
            assert b is not None  # point_in_target is None without a box
            return Drop(self.name, f"point ({a.x}, {a.y}) outside target ({b.x1}, {b.y1})-({b.x2}, {b.y2})")
        return True


class CoordsInImage(RecordFilter[Item]):
    """Every point (action and accepted alternatives) must be finite and inside the screenshot."""

    name = "coords_outside_image"

    def decide(self, item: Item) -> Verdict:
        s = item.sample
        for which, a in [("action", s.action), *((f"accepted_actions[{i}]", x) for i, x in
                                                  enumerate(s.accepted_actions))]:
            for x, y in ((a.x, a.y), (a.x2, a.y2)):
                if x is None or y is None:
                    continue
                if not (math.isfinite(x) and math.isfinite(y)):
                    return Drop("non_finite_number", f"{which} point ({x}, {y})")
                if not (0 <= x <= s.image_width and 0 <= y <= s.image_height):
                    return Drop(self.name, f"{which} point ({x}, {y}) outside {s.image_width}x{s.image_height}")
        return True


class ActionValidForPlatform(RecordFilter[Item]):
    """The action type must be executable on the sample's platform (no HOME button on the web)."""

    name = "action_invalid_for_platform"

    def decide(self, item: Item) -> Verdict:
        a = item.sample.action
        if a.valid_on(item.sample.platform):
            return True
        return Drop(self.name, f"{a.type} is not available on platform {item.sample.platform!r}")
