"""Screenshot quality gates: the image exists, decodes, is not blank, and has the size the record claims."""

from __future__ import annotations

from filters.base import Drop, RecordFilter, Verdict
from filters.item import Item


class ImageUsable(RecordFilter[Item]):
    """Drop samples whose screenshot is missing, corrupt, undecodable, empty or blank (reason from inspection)."""

    name = "image_unusable"

    def decide(self, item: Item) -> Verdict:
        facts = item.screen
        if facts is None:
            return Drop("image_not_inspected", "no screenshot facts attached")
        return True if not facts.problem else Drop(facts.problem, facts.detail)


class ImageSizeMatches(RecordFilter[Item]):
    """The decoded size must equal the record's ``image_width x image_height``: every coordinate depends on it."""

    name = "image_size_mismatch"

    def decide(self, item: Item) -> Verdict:
        s, f = item.sample, item.screen
        if f is None or (f.width, f.height) == (s.image_width, s.image_height):
            return True
        return Drop(self.name, f"record says {s.image_width}x{s.image_height}, screenshot is {f.width}x{f.height}")
