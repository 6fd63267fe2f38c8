"""When does an action count as switching the app's language (``explorers.language_switch``)? Unit tests on
hand-built captures; the crawl's handling of a switch is tested in a real browser in ``test_crawl_robust.py``."""

from __future__ import annotations

import json

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
    why = language_switch(_page(EN, rows, LANGS), _page(DE, rows, LANGS), URL, URL)
    assert why == "the frame's words changed: 4 of 11"


def test_a_menu_that_closes_on_the_switch_leaves_the_rest_of_the_frame_to_compare() -> None:
    # the language dropdown was open when its entry was tapped; the page came back closed, the rest relabelled
    # (the toggle now names the language the open menu listed a moment ago)
    footer = ("Free software", "Contribute")
    before = _page(("English", *footer), (), ("Azərbaycan", *LANGS))
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
    # a trail of visited pages in the banner that moved on by one place: every word was in the frame before
    trail = ("Home", "Reports", "Invoices", "March")
    assert language_switch(_page(EN, (), trail), _page(EN, (), (*trail[1:], "April")), URL, URL) == ""
    # a frame mostly replaced, not relabelled
    assert language_switch(_page(EN, ()), _page(DE[:1], ()), URL, URL) == ""


def test_the_rest_of_a_language_menu_is_the_entries_of_the_same_list_not_every_dropdown_of_the_template() -> None:
    from explorers.policy import same_list

    nav = "body[1]/nav[1]/div[1]/ul[2]"
    assert same_list(f"{nav}/li[1]/div[1]/a[3]", f"{nav}/li[1]/div[1]/a[17]")  # entries of one dropdown
    assert same_list("body[1]/header[1]/ul[1]/li[3]/a[1]", "body[1]/header[1]/ul[1]/li[5]/a[1]")
    assert not same_list(f"{nav}/li[1]/div[1]/a[3]", f"{nav}/li[2]/div[1]/a[3]")  # another dropdown, one template
    assert not same_list(f"{nav}/li[1]/div[1]/a[3]", f"{nav}/li[2]/div[1]/a[1]")
    assert not same_list(f"{nav}/li[1]/div[1]/a[3]", f"{nav}/li[1]/div[1]/a[3]")  # itself: its identity says so
    assert not same_list("body[1]/ul[1]/li[2]/a[1]", "body[1]/ul[1]/li[2]/span[1]")


def test_what_the_policy_learned_of_a_language_switch_survives_a_resume() -> None:
    from explorers.policy import GreedyPolicy

    first = GreedyPolicy()
    first.learned.switches_language.add("lang-de")
    first.learned.switch_entries.add("body[1]/header[1]/ul[1]/li[2]/a[1]")
    first.learned.switch_hops.add(("s1", "k1"))
    again = GreedyPolicy()
    again.restore(json.loads(json.dumps(first.snapshot())))
    assert again.learned.switches_language == {"lang-de"}
    assert again.learned.switch_entries == {"body[1]/header[1]/ul[1]/li[2]/a[1]"}
    assert again.learned.switch_hops == {("s1", "k1")}
