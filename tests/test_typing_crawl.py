"""Typing that leads somewhere, on a real Chromium crawl of a small catalogue app served here.

The app has what the crawls of untuned apps stumbled over: a list page, a search form whose results page lists the
matching items, a report filter whose date field the server rejects with HTTP 400 unless it is written its own way
(an error page with no error words on it: only its status says so), and a long article to scroll. The crawl must
submit queries taken from the listed items, each once; never type a date value into the field again once it reached
the error page; record the error pages; and stop scrolling the article once scrolling shows nothing new.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from explorers.config import parse_config
from explorers.crawler import Crawler
from explorers.profiles import VIEWPORTS, Profile
from explorers.sessions import EndpointSpec
from explorers.store import read_log
from tests.pages import PageHandler, serve

ITEMS = ("Volcanoes of Iceland", "Glaciers of Patagonia", "Deserts of Namibia", "Rainforests of Borneo",
         "Coral reefs of Belize")
HEADER = """<header><nav><a href="/">Atlas home</a> <a href="/report">Atlas report</a>
<a href="/article">Atlas article</a></nav>
<form action="/search" method="get"><input type="search" name="q" aria-label="Search the atlas">
<button>Go</button></form></header>"""


def _page(title: str, body: str) -> bytes:
    return f"<!doctype html><title>{title} · Atlas</title>{HEADER}<main>{body}</main>".encode()


class Catalogue(PageHandler):
    queries: ClassVar[list[tuple[str, int]]] = []  # (query, hits) of every search the server answered
    rejected: ClassVar[list[str]] = []  # date values the report refused

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        args = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if url.path == "/":
            rows = "".join(f'<li><a href="/item/{i}">{html.escape(t)}</a></li>' for i, t in enumerate(ITEMS))
            self.reply(_page("Places", f"<h1>Places</h1><ul>{rows}</ul>"))
        elif url.path.startswith("/item/") and url.path[6:].isdigit() and int(url.path[6:]) < len(ITEMS):
            t = ITEMS[int(url.path[6:])]
            self.reply(_page(t, f"<h1>{html.escape(t)}</h1><p>One of the places of the atlas.</p>"))
        elif url.path == "/search":
            q = args.get("q", "")
            hits = [(i, t) for i, t in enumerate(ITEMS) if q and q.lower() in t.lower()]
            self.queries.append((q, len(hits)))
            rows = "".join(f'<li><a href="/item/{i}">{html.escape(t)}</a></li>' for i, t in hits) or "<p>Nothing</p>"
            self.reply(_page("Search", f"<h1>Results</h1><ul>{rows}</ul>"))
        elif url.path == "/report":
            day = args.get("date", "")
            if day and not re.fullmatch(r"\d\d/\d\d/\d{4}", day):
                self.rejected.append(day)  # the server wants DD/MM/YYYY and says so only with its status
                self.reply(_page("Report", "<h1>Report</h1><p>The report could not be made.</p>"), status=400)
                return
            form = """<form action="/report" method="get"><label for="d">Date</label>
                <input id="d" name="date" required><select name="kind"><option value="all">All</option>
                <option value="new">New</option></select><button>Show report</button></form>"""
            self.reply(_page("Report", f"<h1>Report</h1>{form}<p>{'For ' + html.escape(day) if day else ''}</p>"))
        elif url.path == "/article":
            paras = "".join(f"<p>Paragraph {n} of a long read about the places of the atlas, their weather and "
                            f"their people.</p>" for n in range(120))
            self.reply(_page("Article", f"<h1>A long read</h1>{paras}"))
        else:
            self.reply(b"<h1>Missing</h1>", status=404)


@pytest.fixture
def catalogue_url() -> Iterator[str]:
    Catalogue.queries, Catalogue.rejected = [], []
    with serve(Catalogue) as url:
        yield url


def _transitions(records: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(action, the observation it led to) of every logged transition, in order."""
    for r in records:
        t = r.get("transition")
        if t:
            yield t["action"], r["observations"][-1]


def test_a_crawl_types_queries_that_find_things_leaves_rejected_dates_and_stops_scrolling(
        tmp_path: Path, chromedriver_url: str, catalogue_url: str) -> None:
    cfg = parse_config({
        "run_id": "typing", "output": str(tmp_path), "devices": [{"name": "d0", "url": chromedriver_url}],
        "apps": [{"id": "atlas", "entry": catalogue_url + "/", "read_only": False}],
        "budget": {"max_steps": 70, "max_seconds": 400, "max_restarts": 40},
    })
    crawler = Crawler(cfg, cfg.apps[0], Profile(VIEWPORTS["desktop"]), EndpointSpec("d0", chromedriver_url))
    crawler.run()
    records = list(read_log(crawler.store.log_path(crawler.worker)))
    steps = list(_transitions(records))

    # Search: queries are words of the listed items, each typed once and submitted (Enter in the box right after).
    typed_q = [(i, a["text"]) for i, (a, _o) in enumerate(steps) if a["type"] == "type"
               and not re.search(r"\d", a["text"] or "")]
    assert typed_q, "the crawl never searched"
    queries = [q.lower() for _i, q in typed_q]
    assert len(queries) == len(set(queries)), queries  # no query typed twice
    words = {w.lower() for t in ITEMS for w in re.findall(r"\w+", t)}
    assert set(queries) <= words, queries  # taken from the items the app listed, not the site's name
    assert "atlas" not in queries
    for i, _q in typed_q:
        assert i + 1 < len(steps) and steps[i + 1][0]["type"] == "key" and steps[i + 1][0]["key"] == "enter", i
    received = [q.lower() for q, _n in Catalogue.queries]
    assert set(queries) <= set(received)  # every typed query was submitted
    assert any(n > 0 for _q, n in Catalogue.queries)  # and they found things

    # Dates: a value that reached the error page is never typed into the field again; error pages are recorded.
    assert Catalogue.rejected, "the crawl never submitted the report's date"
    refused: set[str] = set()
    for action, obs in steps:
        if action["type"] == "type" and re.search(r"\d", action["text"] or ""):
            assert action["text"] not in refused, (action["text"], refused)
        if obs.get("error_page"):
            refused |= set(parse_qs(urlsplit(obs["observation"]["location"]).query).get("date", []))
    assert refused, "no error page recorded"
    errors = [o for r in records for o in r["observations"] if o.get("error_page")]
    assert all(o["error_page"] == "http 400" for o in errors)
    assert all("/report" in o["observation"]["location"] for o in errors)
    assert any(e["decision"] == "error-page" for e in crawler.audit.entries())

    # Scrolling: the article is scrolled until a scroll shows nothing new, and once more at most (a walk may still
    # pass through a scrolled screen on its way somewhere; it explores nothing there).
    scrolls = [r.get("reason", "") for r in records if r.get("transition")
               and r["transition"]["action"]["type"] == "scroll"
               and "/article" in r["observations"][-1]["observation"]["location"]]
    exploring = [why for why in scrolls if why.startswith("untried action")]
    assert 1 <= len(exploring) <= 2, scrolls
    assert len(scrolls) <= 4, scrolls
