"""The trajectory strip beside a sample's screenshot: the ±3 neighbouring steps, each with its action drawn.

Why: an annotator judges a step by what came before and after it — a click that only makes sense after the
previous step's typing, a `done` that comes too early. Each thumbnail therefore carries its step's action as a
mark (a ring at the point, the target box, the swipe arrow) or, for a type without a point, a badge (typed text
as a keyboard, ``done`` as a tick, …), so the strip reads without opening any step. Marks are built from three
cells of the step's row (``SampleReader.action``), never from whole samples, so a page stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from review.dataset import SampleReader, SampleRef
from review.overlay import Shape, glyph_for, shapes_for

RADIUS = 3  # steps each side of the current one
MARK_FRACTION = 0.07  # a thumbnail's point ring, as a fraction of the image's longer side (legible when small)


@dataclass
class FilmStep:
    """One cell of the strip: a step of this version (``ref``) or a gap where the version lacks it."""

    index: int
    current: bool
    ref: SampleRef | None = None
    width: int = 0
    height: int = 0
    marks: list[Shape] = field(default_factory=list)
    glyph: str = ""


def thumbnail_marks(shapes: list[Shape], width: int, height: int) -> list[Shape]:
    """The shapes worth drawing at thumbnail size: the box, the arrow and one ring at the point (and one at a
    swipe's end), rings enlarged so they stay visible; text is left to the badge."""
    r = max(width, height) * MARK_FRACTION
    out = [s for s in shapes if s.kind in ("rect", "arrow")]
    for group in ("point", "end"):
        ring = next((s for s in shapes if s.kind == "circle" and s.group == group), None)
        if ring is not None:
            out.append(Shape("circle", ring.role, ring.x, ring.y, r=r, group=group))
    return out


def filmstrip(reader: SampleReader, by_trajectory: dict[str, list[SampleRef]], current: SampleRef) -> list[FilmStep]:
    """The steps within ``RADIUS`` of ``current`` (fewer at a trajectory's ends); steps missing from this
    version are gaps."""
    present = {r.step_index: r for r in by_trajectory.get(current.trajectory_id, [])}
    present[current.step_index] = current  # an audited gate reject is not in the data but is on screen
    lo = max(0, current.step_index - RADIUS)
    hi = min(current.num_steps - 1, current.step_index + RADIUS)
    out = []
    for i in range(lo, hi + 1):
        step = FilmStep(index=i, current=i == current.step_index, ref=present.get(i))
        got = reader.action(step.ref) if step.ref is not None else None
        if got is not None:
            action, step.width, step.height = got
            step.marks = thumbnail_marks(shapes_for(action, step.width, step.height), step.width, step.height)
            step.glyph = glyph_for(action)
            if not step.marks and not step.glyph:
                step.glyph = action.full_type.replace("_", " ")
        out.append(step)
    return out
