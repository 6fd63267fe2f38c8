"""Four more real apps for the exploration benchmark, installed unchanged from the registries (pinned) into
``tools/thirdparty/`` like TiddlyWiki and I Hate Money (``tests/thirdparty.py``), each seeded with content:

- **datasette** (PyPI): a SQLite explorer. Seeded with a small lending-library database (authors, books,
  members, loans with foreign keys), so it has tables, pages of rows, row pages, foreign-key links, facets and
  a SQL editor. Python, so it runs under coverage.py like I Hate Money.
- **Trac** (PyPI): a wiki and issue tracker. ``trac-admin initenv`` creates its guide wiki, milestones and
  reports; the seed adds tickets and a project wiki page; anonymous users may file tickets (the permission
  Trac's own docs suggest for an open tracker). Python, under coverage.py.
- **Node-RED** (npm): the flow editor (a one-page JavaScript app: menus, sidebars, dialogs, two seeded flow
  tabs), measured with Chromium's precise coverage.
- **docsify** (npm): a documentation site rendered in the browser from Markdown (a sidebar, a cover page,
  hash routes, full-text search), served as static files the way its README sets a site up. All of it is
  JavaScript, so it is measured with Chromium's precise coverage (``explorers.js_coverage``).

Each ``start_*`` makes a fresh instance in its own directory on a free port; ``*_app`` is the crawl-config
entry a user would write from the app's README (deny-list, login if any); ``*_rows`` reads the app's own
database, so a benchmark can tell which seeded records a crawl changed.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

from explorers.capabilities import free_port
from explorers.local_servers import LOOPBACK, ManagedProcess, start_process
from tests.thirdparty import (
    COVERAGE_PRELUDE,
    COVERAGE_VERSION,
    THIRDPARTY_DIR,
    InstallError,
    _locked,
    _run,
    _stamped,
    _started,
    line_coverage,
    npm_install,
    sqlite_rows,
)

DATASETTE_VERSION = "0.65.2"
TRAC_VERSION = "1.6"
DOCSIFY_VERSION = "4.13.1"
DATASETTE_VENV = THIRDPARTY_DIR / "datasette-venv"
TRAC_VENV = THIRDPARTY_DIR / "trac-venv"
DOCSIFY_DIR = THIRDPARTY_DIR / "docsify"
DOCSIFY_LIB = DOCSIFY_DIR / "node_modules" / "docsify" / "lib"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def install_venv_app(name: str, venv: Path, requirement: str, version: str, with_coverage: bool = False) -> Path:
    """``pip install <requirement>`` into the app's own virtualenv (its pins never touch the project's ``.venv``);
    idempotent through a stamp file holding the pinned version. coverage.py has its own stamp, so a checkout
    that never measures coverage does not pay for it. Returns the venv's python."""
    python = venv_python(venv)
    stamp, cov_stamp = venv / ".installed-version", venv / ".coverage-version"

    def done() -> bool:
        return _stamped(stamp, version) and python.exists() and (not with_coverage
                                                                  or _stamped(cov_stamp, COVERAGE_VERSION))

    if done():
        return python
    with _locked(name):
        if done():
            return python
        if not _stamped(stamp, version) or not python.exists():
            base = shutil.which("python3.11") or shutil.which("python3") or sys.executable
            if not python.exists():
                _run([base, "-m", "venv", str(venv)], f"create the {name} virtualenv")
            _run([str(python), "-m", "pip", "install", "-q", requirement], f"pip install {requirement}")
            stamp.write_text(version)
        if with_coverage and not _stamped(cov_stamp, COVERAGE_VERSION):
            _run([str(python), "-m", "pip", "install", "-q", f"coverage=={COVERAGE_VERSION}"],
                 f"pip install coverage ({name} venv)")
            cov_stamp.write_text(COVERAGE_VERSION)
    return python


def install_datasette(with_coverage: bool = False) -> Path:
    return install_venv_app("datasette", DATASETTE_VENV, f"datasette=={DATASETTE_VERSION}", DATASETTE_VERSION,
                            with_coverage)


def install_trac(with_coverage: bool = False) -> Path:
    return install_venv_app("trac", TRAC_VENV, f"Trac=={TRAC_VERSION}", TRAC_VERSION, with_coverage)


def install_docsify() -> Path:
    """``npm i docsify@<pinned>`` into tools/thirdparty/docsify; returns its ``lib`` folder (the browser bundle)."""
    npm_install("docsify", DOCSIFY_VERSION, DOCSIFY_DIR, DOCSIFY_LIB / "docsify.js", "--ignore-scripts")
    return DOCSIFY_LIB


def covered_lines(python: Path, data_file: Path) -> int:
    """Lines of the app's own package that ran while it served (read after ``ManagedProcess.stop``)."""
    return line_coverage(python, data_file)["lines"]


# --- datasette ---------------------------------------------------------------------------------------------
AUTHORS = [("Ursula K. Le Guin", "USA"), ("Chinua Achebe", "Nigeria"), ("Italo Calvino", "Italy"),
           ("Wisława Szymborska", "Poland"), ("Haruki Murakami", "Japan"), ("Gabriel García Márquez", "Colombia"),
           ("Toni Morrison", "USA"), ("Jorge Luis Borges", "Argentina")]
BOOKS = [("A Wizard of Earthsea", 1, 1968, "fantasy"), ("The Dispossessed", 1, 1974, "science fiction"),
         ("The Left Hand of Darkness", 1, 1969, "science fiction"), ("Things Fall Apart", 2, 1958, "novel"),
         ("Arrow of God", 2, 1964, "novel"), ("Invisible Cities", 3, 1972, "novel"),
         ("If on a winter's night a traveler", 3, 1979, "novel"), ("View with a Grain of Sand", 4, 1995, "poetry"),
         ("Norwegian Wood", 5, 1987, "novel"), ("Kafka on the Shore", 5, 2002, "novel"),
         ("One Hundred Years of Solitude", 6, 1967, "novel"), ("Love in the Time of Cholera", 6, 1985, "novel"),
         ("Beloved", 7, 1987, "novel"), ("Song of Solomon", 7, 1977, "novel"), ("Ficciones", 8, 1944, "stories"),
         ("The Aleph", 8, 1949, "stories"), ("Tehanu", 1, 1990, "fantasy"), ("Cosmicomics", 3, 1965, "stories"),
         ("Sula", 7, 1973, "novel"), ("1Q84", 5, 2009, "novel"), ("The Lathe of Heaven", 1, 1971, "science fiction"),
         ("No Longer at Ease", 2, 1960, "novel")]
MEMBERS = [("Amina Yusuf", "Leeds"), ("Bruno Costa", "Porto"), ("Chen Wei", "Leeds"), ("Dana Novak", "Brno"),
           ("Emeka Obi", "Lagos"), ("Fatima Zahra", "Porto")]
DATASETTE_TABLES = {"authors": "id", "books": "id", "members": "id", "loans": "id"}


def seed_library(db_path: Path) -> None:
    """A small lending library: 8 authors, 22 books, 6 members, 30 loans (foreign keys between all four)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db_path)
    try:
        with con:
            con.executescript("""
                CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
                CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL,
                                    author_id INTEGER REFERENCES authors(id), year INTEGER, genre TEXT);
                CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
                CREATE TABLE loans (id INTEGER PRIMARY KEY, book_id INTEGER REFERENCES books(id),
                                    member_id INTEGER REFERENCES members(id), loaned_on TEXT, returned INTEGER);
                CREATE VIEW books_by_country AS SELECT a.country, count(*) AS books
                    FROM books b JOIN authors a ON a.id = b.author_id GROUP BY a.country;
            """)
            con.executemany("INSERT INTO authors (name, country) VALUES (?, ?)", AUTHORS)
            con.executemany("INSERT INTO books (title, author_id, year, genre) VALUES (?, ?, ?, ?)", BOOKS)
            con.executemany("INSERT INTO members (name, city) VALUES (?, ?)", MEMBERS)
            con.executemany("INSERT INTO loans (book_id, member_id, loaned_on, returned) VALUES (?, ?, ?, ?)",
                            [(1 + (i * 7) % len(BOOKS), 1 + i % len(MEMBERS), f"2024-{1 + i % 12:02d}-{1 + i:02d}",
                              i % 3 != 0) for i in range(30)])
    finally:
        con.close()


DATASETTE_METADATA = {
    "title": "Lending library",
    "description": "Books, authors, members and loans of a small lending library.",
    "databases": {"library": {"tables": {
        "books": {"facets": ["genre", "year"], "sort_desc": "year", "description": "Every book on the shelves."},
        "loans": {"facets": ["returned", "member_id"]},
        "authors": {"facets": ["country"]},
    }}},
}

DATASETTE_SERVE = COVERAGE_PRELUDE + """
import asyncio, json
from datasette.app import Datasette
import uvicorn
db, meta, host, port = sys.argv[1:5]
with open(meta) as f:
    ds = Datasette([db], metadata=json.load(f), settings={"default_page_size": 10})
asyncio.run(ds.invoke_startup())
app = ds.app()
if len(sys.argv) > 5:
    measure(sys.argv[5], "datasette")
uvicorn.run(app, host=host, port=int(port), log_level="info", timeout_graceful_shutdown=2)
if cov is not None:
    cov.stop()
    cov.save()
"""


def start_datasette(data_dir: Path, *, log_dir: Path | None = None, coverage_file: Path | None = None
                    ) -> ManagedProcess:
    """Serve a freshly seeded ``library.db`` (its tables' facets set in metadata, 10 rows a page)."""
    python = install_datasette(with_coverage=coverage_file is not None)
    db = data_dir / "library.db"
    if not db.exists():
        seed_library(db)
    meta = data_dir / "metadata.json"
    meta.write_text(json.dumps(DATASETTE_METADATA), encoding="utf-8")
    port = free_port()
    extra = [str(coverage_file)] if coverage_file is not None else []
    proc = start_process("datasette", [python, "-c", DATASETTE_SERVE, str(db), str(meta), LOOPBACK, str(port),
                                       *extra], env={"PYTHONUNBUFFERED": "1"}, cwd=data_dir, log_dir=log_dir)
    return _started(proc, f"http://{LOOPBACK}:{port}", "/-/versions.json")


def datasette_app(url: str) -> dict[str, Any]:
    """Crawl-config entry from datasette's README: no login (a public instance). The JSON, CSV and SQL-download
    links leave the HTML UI (a file, not a screen), so they are denied by URL."""
    return {"id": "datasette", "entry": url + "/", "version": DATASETTE_VERSION,
            "deny": {"urls": [r"\.(json|csv|db)(\?|$)", r"[?&]_format=", r"_dl=", r"/-/(versions|plugins|settings|"
                              r"config|threads|actor|databases|metadata)\b"]}}


def datasette_rows(data_dir: Path) -> dict[str, dict[str, tuple[Any, ...]]]:
    return sqlite_rows(data_dir / "library.db", DATASETTE_TABLES)


# --- Trac --------------------------------------------------------------------------------------------------
TRAC_TICKETS = [
    ("Crash when the export dialog is closed twice", "defect", "component1", "milestone1", "major",
     "Steps: open ''Export'', close it, close it again. See [wiki:MeetingNotes] for the triage."),
    ("Add a dark theme", "enhancement", "component2", "milestone2", "minor",
     "Users asked for it in the survey. Related: #1."),
    ("Document the release checklist", "task", "component1", "milestone1", "trivial",
     "The checklist lives in MeetingNotes for now."),
    ("Search ignores accented letters", "defect", "component2", "milestone3", "critical",
     "Searching for ''Szymborska'' misses ''Szymborską''."),
    ("Speed up the nightly build", "enhancement", "component1", "milestone2", "major",
     "The build takes 40 minutes; cache the dependencies."),
    ("Typo on the About page", "defect", "component2", "", "trivial", "''recieve'' → ''receive''."),
    ("Plan the 2.0 roadmap", "task", "component1", "milestone4", "major", "Collect the goals on the wiki."),
]
TRAC_MEETING_NOTES = """= Meeting notes =

== 2024-06-03 ==
 * Triage of #1 and #4 (both defects, see the [report:1 active tickets]).
 * The dark theme (#2) waits for the design review.

== 2024-06-10 ==
 * Release checklist: see #3; the [milestone:milestone1 first milestone] is due at the end of the month.
 * Back to the [wiki:WikiStart start page].
"""

TRAC_SEED = """
import sys
from trac.env import Environment
from trac.ticket.model import Ticket
env = Environment(sys.argv[1])
import json
for summary, type_, component, milestone, priority, description in json.loads(sys.argv[2]):
    t = Ticket(env)
    t.populate({"summary": summary, "type": type_, "component": component, "milestone": milestone,
                "priority": priority, "description": description, "reporter": "maintainer", "status": "new"})
    t.insert()
"""

TRAC_SERVE = COVERAGE_PRELUDE + """
env_path, host, port = sys.argv[1:4]
from trac.env import open_environment
from trac.web import standalone
open_environment(env_path, use_cache=True)  # the environment and its plugins load before measuring starts
if len(sys.argv) > 4:
    measure(sys.argv[4], "trac")
sys.argv = ["tracd", "--single-env", "--hostname", host, "--port", port, env_path]
standalone.main()
"""
TRAC_TABLES = {"ticket": "id", "ticket_change": "ticket, time, field", "wiki": "name, version",
               "milestone": "name", "component": "name"}


def init_trac(env: Path, python: Path) -> None:
    """``trac-admin initenv`` (its guide wiki, milestones, components, reports), then the seed: tickets, a wiki
    page, and TICKET_CREATE for anonymous users (an open tracker)."""
    admin = python.parent / "trac-admin"
    _run([str(admin), str(env), "initenv", "Orbit", "sqlite:db/trac.db"], "trac-admin initenv", timeout_s=120)
    notes = env / "MeetingNotes.txt"
    notes.write_text(TRAC_MEETING_NOTES, encoding="utf-8")
    _run([str(admin), str(env), "wiki", "import", "MeetingNotes", str(notes)], "trac-admin wiki import")
    _run([str(admin), str(env), "permission", "add", "anonymous", "TICKET_CREATE"], "trac-admin permission add")
    _run([str(python), "-c", TRAC_SEED, str(env), json.dumps(TRAC_TICKETS)], "seed the Trac tickets")


def start_trac(data_dir: Path, *, log_dir: Path | None = None, coverage_file: Path | None = None
               ) -> ManagedProcess:
    """Serve a freshly created, seeded Trac environment in ``data_dir/env`` with tracd."""
    python = install_trac(with_coverage=coverage_file is not None)
    env = data_dir / "env"
    if not (env / "VERSION").exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        init_trac(env, python)
    port = free_port()
    extra = [str(coverage_file)] if coverage_file is not None else []
    proc = start_process("trac", [python, "-c", TRAC_SERVE, str(env), LOOPBACK, str(port), *extra],
                         env={"PYTHONUNBUFFERED": "1"}, cwd=data_dir, log_dir=log_dir)
    return _started(proc, f"http://{LOOPBACK}:{port}", "/")


def trac_app(url: str) -> dict[str, Any]:
    """Crawl-config entry from Trac's docs, crawling as an anonymous visitor: ``/login`` is denied (no account is
    configured; it answers with an error page), and so are the "other formats" downloads (CSV, tab-separated,
    RSS, plain text: files, not screens) and the ZIP of a wiki page's changes."""
    return {"id": "trac", "entry": url + "/wiki", "version": TRAC_VERSION,
            "deny": {"urls": [r"/login\b", r"[?&]format=", r"/(raw-)?attachment/", r"\.zip\b"]}}


def trac_rows(data_dir: Path) -> dict[str, dict[str, tuple[Any, ...]]]:
    return sqlite_rows(data_dir / "env" / "db" / "trac.db", TRAC_TABLES)


def trac_reset(data_dir: Path) -> dict[str, Any]:
    """The crawl config's ``reset`` for ``start_trac``: tickets filed after the seed are deleted."""
    from tests.thirdparty import APP_RESETS

    return {"command": [sys.executable, str(APP_RESETS), "trac", str(data_dir / "env" / "db" / "trac.db"),
                        str(len(TRAC_TICKETS))]}


# --- docsify -----------------------------------------------------------------------------------------------
DOCSIFY_INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <title>Field Guide</title>
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <link rel="stylesheet" href="lib/themes/vue.css">
</head>
<body>
  <div id="app">Loading…</div>
  <script>
    window.$docsify = {
      name: 'Field Guide',
      loadSidebar: true,
      subMaxLevel: 2,
      coverpage: true,
      auto2top: true,
      search: {placeholder: 'Search the guide', noData: 'Nothing found'},
    };
  </script>
  <script src="lib/docsify.js"></script>
  <script src="lib/plugins/search.js"></script>
</body>
</html>
"""
DOCSIFY_PAGES = {
    "_coverpage.md": "# Field Guide <small>2.1</small>\n\n> Plants, birds and trails of the valley.\n\n"
                     "[Get started](README.md)\n[Trails](trails/overview.md)\n",
    "_sidebar.md": "* [Home](/)\n* Plants\n  * [Trees](plants/trees.md)\n  * [Wildflowers](plants/wildflowers.md)\n"
                   "* Birds\n  * [Waterbirds](birds/waterbirds.md)\n  * [Raptors](birds/raptors.md)\n"
                   "* Trails\n  * [Overview](trails/overview.md)\n  * [Ridge loop](trails/ridge-loop.md)\n"
                   "* [Changelog](changelog.md)\n",
    "README.md": "# Welcome\n\nThis guide covers the [trees](plants/trees.md), [birds](birds/waterbirds.md) and "
                 "[trails](trails/overview.md) of the valley.\n\n## How to use it\n\nPick a section in the "
                 "sidebar, or search.\n\n## Contributing\n\nSee the [changelog](changelog.md). The project page is "
                 "[elsewhere](https://example.org/field-guide).\n",
    "plants/trees.md": "# Trees\n\n## Oaks\n\nSessile and pedunculate oaks; see [wildflowers](wildflowers.md) "
                       "for the woodland floor.\n\n## Birches\n\nSilver birch on the [ridge](../trails/ridge-loop"
                       ".md).\n\n## Alders\n\nAlong the river, where the [waterbirds](../birds/waterbirds.md) "
                       "nest.\n",
    "plants/wildflowers.md": "# Wildflowers\n\n## Spring\n\nBluebells and wood anemones.\n\n## Summer\n\n"
                             "Meadowsweet by the water.\n\n| Flower | Month |\n|---|---|\n| Bluebell | April |\n"
                             "| Foxglove | June |\n",
    "birds/waterbirds.md": "# Waterbirds\n\n## Herons\n\nGrey herons fish below the weir.\n\n## Kingfishers\n\n"
                           "Best seen from the [river path](../trails/overview.md#river-path).\n",
    "birds/raptors.md": "# Raptors\n\n## Buzzards\n\nCommon over the [ridge](../trails/ridge-loop.md).\n\n"
                        "## Kestrels\n\nHovering over the meadows.\n",
    "trails/overview.md": "# Trails\n\n## River path\n\nFlat, 4 km, good for [waterbirds](../birds/waterbirds.md)."
                          "\n\n## Ridge loop\n\nSteep, 9 km: [details](ridge-loop.md).\n",
    "trails/ridge-loop.md": "# Ridge loop\n\n## Route\n\nStart at the car park, climb through the "
                            "[birches](../plants/trees.md#birches).\n\n## Safety\n\nCarry water; the ridge is "
                            "exposed.\n\n?> Buzzards nest here in spring: keep to the path.\n",
    "changelog.md": "# Changelog\n\n## 2.1\n\n* Added the [ridge loop](trails/ridge-loop.md).\n\n## 2.0\n\n"
                    "* New bird pages.\n",
}


def start_docsify(data_dir: Path, *, log_dir: Path | None = None) -> ManagedProcess:
    """Write the seeded site (docsify's ``index.html`` set up as its README says, plus Markdown pages) next to
    a copy of docsify's browser bundle, and serve the folder as static files on a free port."""
    lib = install_docsify()
    site = data_dir / "site"
    if not (site / "index.html").exists():
        shutil.copytree(lib, site / "lib", dirs_exist_ok=True)
        (site / "index.html").write_text(DOCSIFY_INDEX, encoding="utf-8")
        for name, text in DOCSIFY_PAGES.items():
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            (site / name).write_text(text, encoding="utf-8")
    port = free_port()
    proc = start_process("docsify", [sys.executable, "-m", "http.server", str(port), "--bind", LOOPBACK,
                                     "--directory", str(site)], cwd=data_dir, log_dir=log_dir)
    return _started(proc, f"http://{LOOPBACK}:{port}", "/")


def docsify_app(url: str) -> dict[str, Any]:
    """Crawl-config entry for the docs site: nothing to log into or write; external links are refused by the
    crawler's host check. All of its logic is JavaScript: measure it with ``js_coverage: true``."""
    return {"id": "docsify", "entry": url + "/", "version": DOCSIFY_VERSION}


# --- Node-RED ----------------------------------------------------------------------------------------------
NODE_RED_VERSION = "4.1.1"
NODE_RED_DIR = THIRDPARTY_DIR / "node-red"
NODE_RED_JS = NODE_RED_DIR / "node_modules" / "node-red" / "red.js"
# Settings a user sets from the README for a local editor: loopback only, no first-run tour, no telemetry prompt.
NODE_RED_SETTINGS = """module.exports = {
    uiHost: "127.0.0.1",
    flowFile: "flows.json",
    credentialSecret: "trajforge-test-only",
    telemetry: {enabled: false, updateNotification: false},
    diagnostics: {enabled: false, ui: false},
    editorTheme: {tours: false, projects: {enabled: false}},
    logging: {console: {level: "info", metrics: false, audit: false}},
};
"""


def _node_red_flows() -> list[dict[str, Any]]:
    """Two seeded flow tabs (sensor readings, alerts) of inject → function/change/switch → debug nodes."""
    def node(id_: str, type_: str, tab: str, x: int, y: int, wires: list[str], **kw: Any) -> dict[str, Any]:
        return {"id": id_, "type": type_, "z": tab, "x": x, "y": y, "wires": [wires] if type_ != "debug" else [],
                **kw}

    return [
        {"id": "tab1", "type": "tab", "label": "Sensor readings", "disabled": False, "info": "Greenhouse sensors."},
        {"id": "tab2", "type": "tab", "label": "Alerts", "disabled": False, "info": "Threshold alerts."},
        node("in1", "inject", "tab1", 140, 80, ["fn1"], name="every minute", repeat="", once=False, topic="temp",
             payload="21.5", payloadType="num", props=[{"p": "payload"}, {"p": "topic", "vt": "str"}]),
        node("fn1", "function", "tab1", 340, 80, ["dbg1"], name="to Fahrenheit",
             func="msg.payload = msg.payload * 9 / 5 + 32;\nreturn msg;", outputs=1),
        node("dbg1", "debug", "tab1", 540, 80, [], name="reading", active=True, complete="payload"),
        node("in2", "inject", "tab2", 140, 80, ["sw1"], name="test alert", repeat="", once=False, topic="humidity",
             payload="91", payloadType="num", props=[{"p": "payload"}, {"p": "topic", "vt": "str"}]),
        {**node("sw1", "switch", "tab2", 330, 80, ["chg1"], name="too humid?", property="payload",
                rules=[{"t": "gt", "v": "80", "vt": "num"}], checkall="true", outputs=1)},
        node("chg1", "change", "tab2", 520, 80, ["dbg2"], name="set message",
             rules=[{"t": "set", "p": "payload", "pt": "msg", "to": "Open the vents", "tot": "str"}]),
        node("dbg2", "debug", "tab2", 700, 80, [], name="alert", active=True, complete="payload"),
    ]


def install_node_red() -> Path:
    """``npm i node-red@<pinned>`` into tools/thirdparty/node-red; returns the path of red.js."""
    npm_install("node-red", NODE_RED_VERSION, NODE_RED_DIR, NODE_RED_JS)
    return NODE_RED_JS


def start_node_red(data_dir: Path, *, log_dir: Path | None = None) -> ManagedProcess:
    """A fresh user directory with the seeded flows and settings, served by ``node red.js`` on a free port."""
    red = install_node_red()
    node = shutil.which("node")
    if node is None:
        raise InstallError("node is not installed")
    user = data_dir / "node-red-user"
    if not (user / "flows.json").exists():
        user.mkdir(parents=True, exist_ok=True)
        (user / "settings.js").write_text(NODE_RED_SETTINGS, encoding="utf-8")
        (user / "flows.json").write_text(json.dumps(_node_red_flows(), indent=1), encoding="utf-8")
    port = free_port()
    proc = start_process("node-red", [node, str(red), "--port", str(port), "--userDir", str(user),
                                      "--settings", str(user / "settings.js")], cwd=data_dir, log_dir=log_dir)
    return _started(proc, f"http://{LOOPBACK}:{port}", "/settings")


def node_red_app(url: str) -> dict[str, Any]:
    """Crawl-config entry for the Node-RED editor, as its docs describe it: no login on a local editor. Deploy
    (and "restart flows") writes the edited flows to the runtime and its flows file, so it is denied; edits in the
    editor stay in the browser until then. All of the editor is JavaScript: measure it with ``js_coverage``."""
    return {"id": "node-red", "entry": url + "/", "version": NODE_RED_VERSION,
            "deny": {"labels": [r"\bdeploy\b", r"\brestart flows\b"]}}


def node_red_flows(data_dir: Path) -> dict[str, dict[str, tuple[Any, ...]]]:
    """The deployed flows as the runtime saved them, node by id (the app's own record of its data)."""
    flows = json.loads((data_dir / "node-red-user" / "flows.json").read_text(encoding="utf-8"))
    return {"node": {n["id"]: (json.dumps(n, sort_keys=True),) for n in flows}}
