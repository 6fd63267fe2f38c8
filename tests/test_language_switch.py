"""When does an action count as switching the app's language (``explorers.language_switch``)? Unit tests on
hand-built captures; the crawl's handling of a switch is tested in a real browser in ``test_crawl_robust.py``."""

from __future__ import annotations

from explorers.language_switch import language_switch, primary_language
from schemas import BBox, Element

BOX = BBox(x1=0, y1=0, x2=10, y2=10)
URL = "http://h/shop/list"


def _page(nav: tuple[str, ...], rows: tuple[str, ...], lang_menu: tuple[str, ...] = ()) -> list[Element]:
    out = [Element(id=f"n{i}", role="link", text=t, path=f"body[1]/nav[1]/a[{i + 1}]", bbox=BOX, clickable=True)
           for i, t in enumerate(nav)]
    out += [Element(id=f"l{i}", role="link", text=t, path=f"body[1]/header[1]/ul[1]/li[{i + 1}]/a[1]", bbox=BOX,
                    clickable=True) for i, t in enumerate(lang_menu)]
    out += [Element(id=f"r{i}", role="link", text=t, path=f"body[1]/main[1]/ul[1]/li[{i + 1}]/a[1]", bbox=BOX,
                    clickable=True) for i, t in enumerate(rows)]
    return out


EN = ("Bills", "Settle", "Statistics", "History")
DE = ("Rechnungen", "Ausgleichen", "Statistik", "Verlauf")
LANGS = ("English", "Deutsch", "Français", "Español", "Italiano", "Nederlands", "Polski")


def test_the_documents_language_says_it_by_primary_subtag() -> None:
    rows = ("Rent", "Power")
    assert language_switch(_page(EN, rows), _page(EN, rows), URL, URL, "en", "de") == "en → de"
    assert language_switch(_page(EN, rows), _page(EN, rows), URL, URL, "pt-BR", "pt_PT") == ""
    assert primary_language("zh-Hans-CN") == "zh"


def test_the_frame_in_other_words_on_the_same_page_is_a_switch_even_beside_an_open_language_menu() -> None:
    rows = ("Rent", "Power")
    why = language_switch(_page(EN, rows, LANGS), _page(DE, rows, LANGS), URL, URL + "?lang=de")
    assert why == "the frame's words changed: 4 of 11"


def test_a_menu_that_closes_on_the_switch_leaves_the_rest_of_the_frame_to_compare() -> None:
    # the language dropdown was open when its entry was tapped; the page came back closed, the rest relabelled
    footer = ("Free software", "Contribute")
    before = _page(("English", *footer), (), LANGS)
    after = _page(("Azərbaycan", "Pulsuz proqram", "Töhfə verin"), ())
    assert language_switch(before, after, URL, URL) == "the frame's words changed: 3 of 3"


def test_new_content_counters_another_page_or_a_new_frame_are_no_switch() -> None:
    before = _page(EN, ("Rent", "Power", "Water"))
    # another page of the list: the main content changes, the frame does not
    assert language_switch(before, _page(EN, ("Tea", "Books", "Films")), URL, URL + "?page=2") == ""
    # counters in the navigation went up
    counted = ("Bills 3", "Settle 1", "Statistics 12", "History 4")
    assert language_switch(_page(counted, ()), _page(("Bills 4", "Settle 2", "Statistics 13", "History 5"), ()),
                           URL, URL) == ""
    # another section of the app with its own navigation: another path
    assert language_switch(before, _page(DE, ()), URL, "http://h/admin/") == ""
    # a single-page app's settings section with its own sidebar: another hash route
    assert language_switch(before, _page(DE, ()), "http://h/#/gateway", "http://h/#/settings?returnTo=x") == ""
    # a frame mostly replaced, not relabelled
    assert language_switch(_page(EN, ()), _page(DE[:1], ()), URL, URL) == ""
