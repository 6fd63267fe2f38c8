"""``SketchMemo``: the describe stage's memo of element sketches gives exactly ``sketch``'s answer, keyed by
everything the sketch reads (location, height, every element field), and stays bounded."""

from __future__ import annotations

from filters.screen_elements import SketchMemo, sketch
from schemas.element import BBox, Element


def _elements(text: str = "Row 1", checked: bool = False) -> list[Element]:
    return [Element(id="a", role="listitem", text=text, bbox=BBox(x1=0, y1=10, x2=100, y2=40), clickable=True),
            Element(id="b", role="checkbox", text="Done", checked=checked, bbox=BBox(x1=0, y1=50, x2=20, y2=70))]


def test_memo_answers_as_sketch_and_tells_every_field_apart() -> None:
    memo = SketchMemo(max_entries=8)
    loc = "http://127.0.0.1:5/notes/3"
    first = memo(loc, _elements(), 720)
    assert first == sketch(loc, _elements(), 720)
    assert memo(loc, _elements(), 720) is first  # a revisit reuses the sketch
    for other in ((loc, _elements("Row 2"), 720), (loc, _elements(checked=True), 720),
                  ("http://127.0.0.1:5/notes/3?q=x", _elements(), 720), (loc, _elements(), 0)):
        assert memo(*other) == sketch(*other)
    assert memo(loc, _elements(checked=True), 720) != first


def test_memo_is_bounded() -> None:
    memo = SketchMemo(max_entries=3)
    for k in range(10):
        memo(f"http://h/p/{k}", _elements(), 720)
        assert len(memo.memo) <= 3
