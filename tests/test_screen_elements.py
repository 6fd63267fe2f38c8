"""Near-duplicate screens on real captures (a slice of benchmarks/data/neardup, labelled by eye; see its README).

Crawled rows are judged by their element trees (``filters.screen_elements``), rows without elements by pixel blocks
(``filters.pixel_blocks``), and ``filters.screen_clusters`` keeps the two apart.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from filters.item import ScreenFacts
from filters.pixel_blocks import changed_share, same_picture, thumbnail
from filters.screen_clusters import cluster_screens
from filters.screen_elements import Sketch, difference, learn_dynamic, same_screen, sketch
from filters.screenshot import inspect_bytes

DATA = Path(__file__).parent / "fixtures" / "neardup"


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, dict[str, Any]], list[tuple[str, str, bool, str]], dict[str, ScreenFacts]]:
    with gzip.open(DATA / "captures.jsonl.gz", "rt", encoding="utf-8") as f:
        caps = {c["id"]: c for c in map(json.loads, f)}
    with (DATA / "labels.csv").open(encoding="utf-8") as f:
        pairs = [(f"{r['app']}-{r['a']}", f"{r['app']}-{r['b']}", r["same"] == "1", r["why"])
                 for r in csv.DictReader(f)]
    facts = {k: inspect_bytes(c["sha256"], (DATA / "images" / f"{k}.png").read_bytes()) for k, c in caps.items()}
    return caps, pairs, facts


def _sketches(caps: dict[str, dict[str, Any]]) -> dict[str, Sketch]:
    return {k: sketch(c["location"], c["elements"], c["height"]) for k, c in caps.items()}


def test_element_trees_tell_another_clock_banner_flash_or_scroll_from_another_screen(corpus):
    caps, pairs, facts = corpus
    sk = _sketches(caps)
    dynamic = {app: learn_dynamic(sk[k] for k in sorted(sk) if caps[k]["app"] == app)
               for app in {c["app"] for c in caps.values()}}
    got = {(a, b): same_screen(sk[a], sk[b], dynamic[caps[a]["app"]].get(sk[a].family, set()),
                               phashes=(facts[a].phash, facts[b].phash), thumbs=(facts[a].thumb, facts[b].thumb))
           for a, b, _, _ in pairs}
    assert got == {(a, b): dup for a, b, dup, _ in pairs}, [why for a, b, dup, why in pairs if got[(a, b)] != dup]


def test_a_rotating_banner_is_learned_as_dynamic_and_another_note_is_not(corpus):
    caps, _, _ = corpus
    sk = _sketches(caps)
    note, recapture, other_note = sk["demo-r62"], sk["demo-s62"], sk["demo-r63"]
    # Without the learned mask the banner is one changed text, like another note's title.
    assert difference(note, recapture)[1] == 1
    mask = learn_dynamic([sk[k] for k in sorted(sk) if k.startswith("demo-")])[note.family]
    assert difference(note, recapture, mask)[1] == 0
    assert difference(note, other_note, mask)[1] >= 1  # the title differs; its slot was never seen changing
    assert not same_screen(note, other_note, mask)


def test_a_scrolled_capture_lines_up_with_the_unscrolled_one(corpus):
    caps, _, _ = corpus
    sk = _sketches(caps)
    top, scrolled = sk["docsify-s35"], sk["docsify-s34"]  # one page: cover at the top vs scrolled to its text
    only, texts, states, rows = difference(top, scrolled)
    assert (texts, states, rows) == (0, 0, 1.0) and only <= 1
    assert same_screen(top, scrolled)
    # The same elements seen without a viewport (height 0: every element "in view") no longer line up.
    flat = [sketch(caps[k]["location"], caps[k]["elements"]) for k in ("docsify-s35", "docsify-s34")]
    assert difference(*flat)[0] > 4


def test_pixel_blocks_align_a_scroll_and_see_a_changed_region(corpus):
    _, _, facts = corpus
    t = {k: f.thumb for k, f in facts.items()}
    assert same_picture(t["demo-r62"], t["demo-s62"])  # another clock and banner
    assert same_picture(t["datasette-r7"], t["datasette-r8"])  # scrolled by the breadcrumb's height
    assert changed_share(t["datasette-r7"], t["datasette-r8"], align=False) > changed_share(
        t["datasette-r7"], t["datasette-r8"])
    assert not same_picture(t["demo-r62"], t["demo-r63"])  # another note on the same template
    assert not same_picture(t["demo-s10"], t["demo-s65"])  # another theme


def test_thumbnails_are_small():
    with Image.open(DATA / "images" / "demo-r62.png") as im:
        assert len(thumbnail(im)) < 12_000


def test_clusters_use_elements_where_steps_have_them_and_pixels_elsewhere(corpus):
    caps, _, facts = corpus
    sk = _sketches(caps)
    by_sha = {k: f for k, f in facts.items()}
    keyed = {k: ScreenFacts(k, f.problem, f.detail, f.width, f.height, f.phash, f.dhash, f.thumb)
             for k, f in by_sha.items()}
    crawled = {k: ("demo", sk[k]) for k in ("demo-r62", "demo-s62", "demo-r63")}
    imported = ["ihatemoney-r30", "ihatemoney-s30", "datasette-r7", "datasette-r8"]
    clusters = cluster_screens([keyed[k] for k in [*crawled, *imported]], crawled, phash_distance=6)
    # Pixel candidates come from the pHash radius: the scrolled datasette pair (16 bits apart) is never compared —
    # the limit of pixels-only rows at scale that bench_dedupe's pairwise numbers do not show.
    assert clusters == {"demo-r62": "demo-r62", "demo-s62": "demo-r62",
                        "ihatemoney-r30": "ihatemoney-r30", "ihatemoney-s30": "ihatemoney-r30"}
    # A crawled capture is never merged by its pixels with an imported copy of itself.
    twin = ScreenFacts("zz-copy", *[getattr(keyed["demo-r63"], f) for f in
                                    ("problem", "detail", "width", "height", "phash", "dhash", "thumb")])
    assert "zz-copy" not in cluster_screens([keyed["demo-r63"], twin], {"demo-r63": crawled["demo-r63"]}, 6)


def test_a_screen_from_elements_needs_no_pixels():
    elements = [{"id": "h", "role": "heading", "text": "Garden plans", "path": "/html/body/h1",
                 "bbox": {"x1": 0, "y1": 10, "x2": 200, "y2": 40}},
                {"id": "c", "role": "", "text": "Updated 2026-12-07 03:02", "path": "/html/body/p",
                 "bbox": {"x1": 0, "y1": 50, "x2": 200, "y2": 70}}]
    later = [dict(elements[0]), {**elements[1], "text": "Updated 2026-12-08 11:45"}]
    other = [{**elements[0], "text": "Books to read"}, elements[1]]
    a, b, c = (sketch("http://h:1/notes/8", e, 800) for e in (elements, later, other))
    assert same_screen(a, b)  # dates are placeholders
    assert not same_screen(a, c)
    assert not same_screen(a, sketch("http://h:1/account", elements, 800))  # another page
    assert same_screen(a, sketch("http://other-host:9/notes/8", elements, 800))  # another port of the same app


def test_sketch_survives_pickling():
    import pickle

    button = {"id": "a", "role": "button", "text": "Go", "bbox": {"x1": 0, "y1": 0, "x2": 5, "y2": 5}}
    s = sketch("http://h/x", [button])
    assert pickle.loads(pickle.dumps(s)) == s
    assert io.BytesIO(pickle.dumps(s)).getbuffer().nbytes < 2_000


def _form_capture(value: str, clock: str, dy: int = 0) -> tuple[list[dict[str, Any]], bytes]:
    """A form screen 800x500 with a date field holding ``value`` and a clock in the banner; ``dy`` scrolls it."""
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default(size=26)
    img = Image.new("RGB", (800, 500), "white")
    draw = ImageDraw.Draw(img)
    draw.text((620, 10), clock, fill="black", font=font)
    draw.text((40, 60 - dy), "Edit bill", fill="black", font=font)
    draw.rectangle((200, 150 - dy, 600, 190 - dy), outline="gray")
    draw.text((210, 155 - dy), value, fill="black", font=font)
    box = {"x1": 200, "y1": 150 - dy, "x2": 600, "y2": 190 - dy}
    elements = [{"id": "c", "role": "timer", "text": clock, "path": "/html/body/header/span",
                 "bbox": {"x1": 620, "y1": 10, "x2": 790, "y2": 40}},
                {"id": "h", "role": "heading", "text": "Edit bill", "path": "/html/body/main/h1",
                 "bbox": {"x1": 40, "y1": 60 - dy, "x2": 300, "y2": 90 - dy}},
                {"id": "d", "role": "textbox", "class_name": "input:date", "text": "When?", "editable": True,
                 "path": "/html/body/main/form/input", "bbox": box}]
    return elements, thumbnail(img)


def test_another_value_in_a_form_field_is_another_screen_even_scrolled():
    """The element tree does not hold what a field shows; its pixels do. Another date typed is another screen,
    scrolled or not; another clock elsewhere on the screen is not, and neither is the same value."""
    (ea, ta), (eb, tb) = _form_capture("2026-07-12", "10:41"), _form_capture("2019-02-02", "10:41")
    (ec, tc), (ed, td) = _form_capture("2026-07-12", "11:58"), _form_capture("2019-02-02", "10:41", dy=40)
    a, b, c, d = (sketch("http://h:1/bills/3/edit", e, 500, 800) for e in (ea, eb, ec, ed))
    assert same_screen(a, b)  # without pixels the tree cannot tell
    assert not same_screen(a, b, thumbs=(ta, tb))
    assert not same_screen(a, d, thumbs=(ta, td))  # the field moved with the scroll, and still shows another date
    assert same_screen(a, c, thumbs=(ta, tc))
    assert same_screen(b, d, thumbs=(tb, td))
    # Sizes unknown (a record stored without them): no field comparison rather than a wrong one.
    assert same_screen(sketch("http://h:1/bills/3/edit", ea, 500), sketch("http://h:1/bills/3/edit", eb, 500),
                       thumbs=(ta, tb))
