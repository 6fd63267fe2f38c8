"""Axis-aligned boxes in screenshot pixels."""

from __future__ import annotations

from pydantic import model_validator

from schemas.base import Float, Record


class BBox(Record):
    """A box (x1, y1) top-left to (x2, y2) bottom-right, in screenshot pixels."""

    x1: Float
    y1: Float
    x2: Float
    y2: Float

    @model_validator(mode="after")
    def _ordered(self) -> BBox:
        if self.x2 < self.x1 or self.y2 < self.y1:
            raise ValueError(f"box corners out of order: ({self.x1},{self.y1})-({self.x2},{self.y2})")
        return self

    @property
    def center(self) -> tuple[float, float]:
        return (self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2

    @property
    def area(self) -> float:
        return (self.x2 - self.x1) * (self.y2 - self.y1)

    def as_tuple(self) -> tuple[float, float, float, float]:
        return self.x1, self.y1, self.x2, self.y2

    def contains(self, x: float, y: float, strict: bool = False) -> bool:
        if strict:
            return self.x1 < x < self.x2 and self.y1 < y < self.y2
        return self.x1 <= x <= self.x2 and self.y1 <= y <= self.y2

    def within(self, width: int, height: int) -> bool:
        """Whether the box lies inside a ``width`` × ``height`` image."""
        return self.x1 >= 0 and self.y1 >= 0 and self.x2 <= width and self.y2 <= height
