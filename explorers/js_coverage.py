"""The app's own JavaScript code coverage over a crawl, from Chromium's precise coverage (DevTools ``Profiler``).

Why: distinct states is a weak yardstick on apps where nearly every click is a new screen; the code a crawl
made the app run is the one testers use. For Python apps the benchmark runs the server under coverage.py; for
apps whose logic runs in the browser (TiddlyWiki, docsify) this measures the page's scripts instead.

How: ``Profiler.startPreciseCoverage`` (binary counts, block granularity) is turned on as the session opens,
through chromedriver's CDP endpoint (``/session/{id}/goog/cdp/execute``). V8 keeps counts per document, and a
navigation throws the old document's away, so the crawler calls ``take`` after every action has settled, after
an opened URL's landing, and before every restart, URL opened and quit: ``Profiler.takePreciseCoverage`` returns
what ran since the last take (and resets the counts).
Each take is merged into a per-script byte map: a byte is covered when the innermost reported range around it
(a function, or a block inside one) ran at least once. Scripts are keyed by URL alone: a take reports only the
functions V8 chose to report then (not the whole script), so the largest offset it names varies from take to take
and is no script's identity (keying by it split docsify.js into dozens of "scripts", each with an empty baseline, so
page-load code counted as reached). A script's length is the largest offset any take reported. Two inline scripts of
one page share its URL and are merged, which can only undercount. Only the app's own scripts count: scripts
from its hosts, and scripts named by ``//# sourceURL`` (TiddlyWiki evaluates its modules that way); the
crawler's own injected scripts have no URL and never count.

Baseline: the take made when the crawl's first landing screen has settled (the entry URL loaded, login and
setup run, the screen read, nothing done yet) is also kept apart, as the crawl's *baseline*: what merely opening
the app runs. Later landings (restarts) do not extend it: what a restart's landing runs beyond the first one is
what the crawl's own actions left behind (TiddlyWiki: a draft the crawl opened is restored into the story river and
its editor drawn on every later load, 50 K characters), so it is the crawl's coverage like any action's; as a
baseline it was subtracted from the crawl that caused it, and the crawl that restarted after changing the most
looked as if it had reached the least (the first landings of three TiddlyWiki crawls agree to the character).
On apps whose restart is a hash change, not a reload (docsify), a later landing runs the router code every crawl
runs with its first link click: coverage for every crawl alike.
``summary`` reports the raw totals and what ran *beyond* the baseline (covered characters and called functions
the first landing did not run): the code the crawl's interactions reached, which is what the testing community
compares explorers by (page-load code runs whatever a policy does; TiddlyWiki runs 1.09 M characters on load).
Subtracting a start-up/landing baseline is the usual practice.

Opt-in per app (``js_coverage: true`` in the crawl config): each take costs a DevTools round trip per step.
The crawl writes ``js-coverage/<worker>.json`` in its app folder; ``summary_of`` reads them all.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from explorers.devtools import cdp
from explorers.safety import host_allowed
from schemas.fileio import write_json_atomic

NOT_APP_SCHEMES = ("chrome", "chrome-extension", "chrome-untrusted", "devtools", "extensions", "about", "data",
                   "blob")


def is_app_script(url: str, hosts: list[str]) -> bool:
    """Whether a script is the app's own: served from one of its hosts, or named by ``//# sourceURL``."""
    if not url:
        return False  # crawler-injected scripts and anonymous evals
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        return host_allowed(parts.hostname or "", hosts)
    return parts.scheme not in NOT_APP_SCHEMES and not url.startswith("pptr:")


def covered_map(functions: list[dict[str, Any]], size: int) -> bytearray:
    """One byte per character of the script, 1 where the innermost reported range around it ran.

    V8's ranges nest (a function's own range first, then its blocks; inner functions inside): painting them
    outermost first, so an inner range overrides the one around it, gives each character its innermost count.
    """
    ranges = [(r["startOffset"], r["endOffset"], r["count"]) for fn in functions for r in fn["ranges"]]
    ranges.sort(key=lambda r: (r[0], -r[1]))
    buf = bytearray(size)
    for start, end, count in ranges:
        end = min(end, size)
        if end > start:
            buf[start:end] = (b"\x01" if count > 0 else b"\x00") * (end - start)
    return buf


@dataclass
class ScriptCoverage:
    url: str
    size: int
    covered: int = 0  # bit i of the little-endian byte map: character i ran (a bytes-per-char map as an int)
    functions: set[int] = field(default_factory=set)  # start offsets of the functions seen
    called: set[int] = field(default_factory=set)  # start offsets of the functions that ran at least once
    baseline: int = 0  # the same bit map, of what ran while a landing screen loaded (see the module docstring)
    baseline_called: set[int] = field(default_factory=set)

    @property
    def covered_bytes(self) -> int:
        return self.covered.bit_count()

    @property
    def beyond_bytes(self) -> int:
        """Characters that ran, but not while the entry screen loaded."""
        return (self.covered & ~self.baseline).bit_count()


class JsCoverage:
    """Precise coverage of one crawl job, merged over every take (page load, restart, new session)."""

    def __init__(self, hosts: list[str]):
        self.hosts = hosts
        self.scripts: dict[str, ScriptCoverage] = {}

    # --- the browser side ------------------------------------------------------------------------------------
    @staticmethod
    def start(driver: Any) -> None:
        """Turn precise coverage on for the session's page (before the app's scripts load, so they all count)."""
        cdp(driver, "Profiler.enable")
        cdp(driver, "Profiler.startPreciseCoverage", {"callCount": False, "detailed": True})

    def take(self, driver: Any, baseline: bool = False) -> int:
        """Merge what ran since the last take; call before anything that may replace the document.
        ``baseline``: this take ends a landing (the entry screen loaded and settled), so it also counts as
        baseline while the crawl has none yet (its first landing; see the module docstring). Returns the
        characters that ran for the first time in this crawl (see ``add``)."""
        return self.add(cdp(driver, "Profiler.takePreciseCoverage").get("result", []), baseline)

    # --- merging ---------------------------------------------------------------------------------------------
    def add(self, result: Iterable[dict[str, Any]], baseline: bool = False) -> int:
        """Merge one ``takePreciseCoverage`` result (a list of ScriptCoverage objects); ``baseline``: a landing's
        take, merged into the baseline as well unless the crawl has one already (a restart's landing is coverage).
        Returns how many characters of the app's scripts ran that no earlier take had seen run: what the code
        between two takes (one action, when the crawler takes after each) reached that was new."""
        baseline = baseline and not self.has_baseline
        fresh = 0
        for script in result:
            url, functions = script.get("url", ""), script.get("functions", [])
            if not functions or not is_app_script(url, self.hosts):
                continue
            size = max(r["endOffset"] for fn in functions for r in fn["ranges"])
            cov = self.scripts.get(url)
            if cov is None:
                cov = self.scripts[url] = ScriptCoverage(url, size)
            cov.size = max(cov.size, size)
            if any(r["count"] > 0 for fn in functions for r in fn["ranges"]):
                ran = int.from_bytes(covered_map(functions, size), "little")
                fresh += (ran & ~cov.covered).bit_count()
                cov.covered |= ran
                if baseline:
                    cov.baseline |= ran
            for fn in functions:
                first = fn["ranges"][0]
                cov.functions.add(first["startOffset"])
                if first["count"] > 0:
                    cov.called.add(first["startOffset"])
                    if baseline:
                        cov.baseline_called.add(first["startOffset"])
        return fresh

    @property
    def has_baseline(self) -> bool:
        """Whether a landing's take has been kept as the baseline (a resumed crawl has its first run's)."""
        return any(s.baseline or s.baseline_called for s in self.scripts.values())

    def merge(self, other: JsCoverage) -> None:
        for s in other.scripts.values():
            self._absorb(s)

    def _absorb(self, s: ScriptCoverage) -> None:
        """Add one script's coverage to this crawl's entry for its URL."""
        mine = self.scripts.setdefault(s.url, ScriptCoverage(s.url, s.size))
        mine.size = max(mine.size, s.size)
        mine.covered |= s.covered
        mine.functions |= s.functions
        mine.called |= s.called
        mine.baseline |= s.baseline
        mine.baseline_called |= s.baseline_called

    def summary(self) -> dict[str, int]:
        """Covered characters and called functions of the app's scripts (and how many there were): the raw
        totals, the baseline (what the first landing ran) and what ran beyond it."""
        s = self.scripts.values()
        return {"scripts": len(self.scripts), "bytes": sum(x.size for x in s),
                "covered_bytes": sum(x.covered_bytes for x in s), "functions": sum(len(x.functions) for x in s),
                "covered_functions": sum(len(x.called) for x in s),
                "baseline_bytes": sum(x.baseline.bit_count() for x in s),
                "baseline_functions": sum(len(x.baseline_called) for x in s),
                "beyond_bytes": sum(x.beyond_bytes for x in s),
                "beyond_functions": sum(len(x.called - x.baseline_called) for x in s)}

    def function_covered(self, url_part: str, offset: int) -> bool:
        """Whether the function starting at ``offset`` of a script whose URL contains ``url_part`` ran."""
        return any(offset in s.called for s in self.scripts.values() if url_part in s.url)

    # --- files -----------------------------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write atomically (a crawl may be killed at any moment; the previous file then stays whole)."""
        scripts = []
        for s in self.scripts.values():
            scripts.append({"url": s.url, "size": s.size, "functions": sorted(s.functions),
                            "called": sorted(s.called), "covered": _pack(s.covered, s.size),
                            "baseline_called": sorted(s.baseline_called), "baseline": _pack(s.baseline, s.size)})
        write_json_atomic(path, {"hosts": self.hosts, "summary": self.summary(), "scripts": scripts}, indent=None)

    @classmethod
    def load(cls, path: Path) -> JsCoverage:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path}: not a JS coverage file ({exc})") from None
        out = cls(list(data.get("hosts", [])))
        for i, s in enumerate(data.get("scripts", [])):
            try:
                # files written before the baseline existed have none: everything then counts as beyond it
                cov = ScriptCoverage(s["url"], int(s["size"]), _unpack(s["covered"]), set(s["functions"]),
                                     set(s["called"]), _unpack(s.get("baseline", "")),
                                     set(s.get("baseline_called", [])))
            except (KeyError, TypeError, ValueError, zlib.error) as exc:
                raise ValueError(f"{path}: script {i} ({s.get('url', '?') if isinstance(s, dict) else '?'}): "
                                 f"bad field ({type(exc).__name__}: {exc})") from None
            out._absorb(cov)  # files written while scripts were keyed by URL and length hold a URL several times
        return out


def _pack(bits: int, size: int) -> str:
    return base64.b64encode(zlib.compress(bits.to_bytes((size + 7) // 8 * 8, "little"))).decode("ascii")


def _unpack(text: str) -> int:
    return int.from_bytes(zlib.decompress(base64.b64decode(text)), "little") if text else 0


def coverage_path(app_dir: Path, worker: str) -> Path:
    return app_dir / "js-coverage" / f"{worker}.json"


def load_crawl(app_dir: Path) -> JsCoverage | None:
    """Every worker's JS coverage in a crawl's app folder, merged; None when none was measured."""
    files = sorted((app_dir / "js-coverage").glob("*.json"))
    if not files:
        return None
    total = JsCoverage([])
    for f in files:
        total.merge(JsCoverage.load(f))
    return total


def summary_of(app_dir: Path) -> dict[str, int] | None:
    """The merged summary of every worker's JS coverage in a crawl's app folder; None when none was measured."""
    total = load_crawl(app_dir)
    return total.summary() if total is not None else None


def _script_path(url: str) -> str:
    """A script's name without the server it came from: two instances of one app (other ports) serve the same
    ``/red/red.min.js``."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return url


def shared_baseline(crawls: dict[str, JsCoverage]) -> dict[str, dict[str, int]]:
    """Summaries of several crawls of one app (each on its own instance), all measured beyond one baseline: the
    union of what every crawl's first landing ran, scripts matched by path.

    Why: what a landing runs depends on when it is read (docsify renders its page after fetching it), so per-crawl
    baselines can differ between policies that covered the same code (docsify's were 37 K characters apart when
    every restart's landing counted; first landings agree far more closely), and "beyond the baseline" would then
    rank the baselines. The comparison of policies uses one baseline for all, as it uses one state abstraction for
    all.
    """
    base: dict[str, int] = {}
    called: dict[str, set[int]] = {}
    for cov in crawls.values():
        for s in cov.scripts.values():
            key = _script_path(s.url)
            base[key] = base.get(key, 0) | s.baseline
            called.setdefault(key, set()).update(s.baseline_called)
    out: dict[str, dict[str, int]] = {}
    for name, cov in crawls.items():
        shared = JsCoverage(cov.hosts)
        for key, s in cov.scripts.items():
            path = _script_path(s.url)
            shared.scripts[key] = ScriptCoverage(s.url, s.size, s.covered, s.functions, s.called,
                                                 base.get(path, 0) & s.covered | s.baseline,
                                                 (called.get(path, set()) & s.called) | s.baseline_called)
        out[name] = shared.summary()
    return out
