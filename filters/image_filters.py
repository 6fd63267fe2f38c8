"""Screenshot quality gates: the declared size is within bounds, the image exists, decodes, is not blank, and has
the size the record claims."""

from __future__ import annotations

from filters.base import Drop, RecordFilter, Verdict
from filters.item import Item, ScreenCheck


class ImageUsable(RecordFilter[ScreenCheck]):
    """Drop steps whose screenshot is missing, corrupt, undecodable, empty or blank (reason from inspection)."""

    name = "image_unusable"

    def decide(self, check: ScreenCheck) -> Verdict:
        facts = check.screen
        if facts is None:
            return Drop("image_not_inspected", "no screenshot facts attached")
        return True if not facts.problem else Drop(facts.problem, facts.detail)


class ImageSizeMatches(RecordFilter[ScreenCheck]):
    """The decoded size must equal the record's ``image_width x image_height``: every coordinate depends on it."""

    name = "image_size_mismatch"

    def decide(self, check: ScreenCheck) -> Verdict:
        f = check.screen
        if f is None or f.problem or (f.width, f.height) == (check.width, check.height):
            return True
        return Drop(self.name, f"record says {check.width}x{check.height}, screenshot is {f.width}x{f.height}")


class ImageSideWithin(RecordFilter[Item]):
    """Screenshot sides must be within ``max_side`` (curate's ``--max-image-side``). The output expectation checks
    the same bound on the whole dataset, so one 9000x64 capture is refused here, by itself, from the size the
    step declares (no pixels needed), instead of failing the run."""

    name = "image_too_large"

    def __init__(self, max_side: int = 8192):
        self.max_side = max_side

    def decide(self, item: Item) -> Verdict:
        s = item.sample
        if s.image_width <= self.max_side and s.image_height <= self.max_side:
            return True
        return Drop(self.name, f"screenshot is {s.image_width}x{s.image_height}; sides are limited to {self.max_side}")
