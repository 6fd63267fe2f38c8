"""MediaWiki (Debian package ``mediawiki``, 1.39 LTS, with ``php-sqlite3`` and ``php-cli``): the wiki engine of
Wikipedia, served by PHP's built-in web server from the package's files, unchanged.

Install (as root): ``apt-get install -y --no-install-recommends mediawiki php-sqlite3 php-cli``. The seed runs the
package's own ``maintenance/install.php`` (SQLite) into the data folder, then its maintenance scripts:
``createAndPromote.php`` for five users (an administrator, a second sysop, three editors) and ``edit.php`` for a
community orchard's wiki — guides, variety pages built on a template, categories, a talk page, user pages — with
edits by several users, so pages have histories, diffs and recent changes. ``LocalSettings.php`` lives in the data
folder and names its paths relative to itself (``__DIR__``) and its server from the request, so a copy on any
port works. The Nuke (mass delete a user's pages), Replace Text (bulk search-and-replace) and Renameuser
extensions bundled with the package are enabled: admin screens that act on many pages at once, besides core's
bulk revision deletion and user rights.

State: ``db/wikidb.sqlite`` (digested by table). The object cache (sessions), the localisation cache, the job
queue, lock files and the file cache change on every request and are left out of the digest.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._webapp import apt_app, quiesce_sqlite
from benchmarks.suite.registry import SuiteApp

PACKAGES = ["mediawiki", "php-sqlite3", "php-cli"]
MW = Path("/usr/share/mediawiki")
install, installed = apt_app("mediawiki", PACKAGES, MW / "maintenance" / "install.php")
SITE = "Orchard Wiki"
ADMIN, ADMIN_PW = "Admin", "Orchard-admin-2024"
USERS = [("Priya", "Priya-orchard-2024", ["--sysop"]), ("Tomasz", "Tomasz-orchard-2024", []),
         ("Lena", "Lena-orchard-2024", []), ("Okoro", "Okoro-orchard-2024", [])]

SETTINGS = """
# --- trajforge suite: one relocatable instance per data folder ---
$wgServer = WebRequest::detectServer();
$wgCacheDirectory = __DIR__ . "/cache";
$wgEnableUploads = false;
$wgDefaultSkin = "vector";
$wgRightsText = "";
$wgJobRunRate = 1;
wfLoadExtension( 'ParserFunctions' );
wfLoadExtension( 'Cite' );
wfLoadExtension( 'CategoryTree' );
wfLoadExtension( 'WikiEditor' );
wfLoadExtension( 'Nuke' );
wfLoadExtension( 'ReplaceText' );
wfLoadExtension( 'Renameuser' );
wfLoadExtension( 'Interwiki' );
$wgGroupPermissions['sysop']['interwiki'] = true;
$wgGroupPermissions['sysop']['replacetext'] = true;
"""

INFOBOX = """<includeonly>{| class="wikitable" style="float:right; margin-left:1em"
! colspan="2" | {{{name}}}
|-
| Fruit || [[{{{fruit}}}]]
|-
| Harvest || {{{harvest}}}
|-
| Trees || {{{trees|1}}}
|-
| Planted || {{{planted}}}
|}[[Category:Varieties]]</includeonly><noinclude>Infobox for a fruit variety. Parameters: name, fruit, harvest,
trees, planted. Used on every [[:Category:Varieties|variety page]].</noinclude>"""


def _variety(name: str, fruit: str, harvest: str, trees: int, planted: int, text: str) -> str:
    return (f"{{{{Infobox variety|name={name}|fruit={fruit}|harvest={harvest}|trees={trees}|planted={planted}}}}}\n"
            f"'''{name}''' is one of the {fruit.lower()} varieties in our orchard. {text}\n\n== Care ==\n"
            "See the [[Pruning guide]] and the [[Pest control]] page.\n\n[[Category:" + fruit + "]]\n")


# (title, author, summary, text) in the order they are written; later entries edit earlier pages.
PAGES: list[tuple[str, str, str, str]] = [
    ("Main Page", ADMIN, "Welcome page",
     f"'''Welcome to the {SITE}''', the notebook of the Elm Street community orchard.\n\n"
     "== Start here ==\n* [[Volunteer rota]] — who is on duty this month\n* [[Pruning guide]] and [[Grafting]]\n"
     "* [[Harvest festival 2024]]\n* [[Tool shed inventory]]\n\n== Our trees ==\n"
     "We grow [[:Category:Apple|apples]], [[:Category:Pear|pears]] and [[:Category:Plum|plums]]: see "
     "[[:Category:Varieties|all varieties]] and the [[Orchard map]].\n"),
    ("Template:Infobox variety", ADMIN, "Infobox for variety pages", INFOBOX),
    ("Bramley", "Priya", "New variety page",
     _variety("Bramley", "Apple", "October", 4, 2016, "A large cooking apple, sharp and good for crumbles.")),
    ("Cox's Orange Pippin", "Priya", "New variety page",
     _variety("Cox's Orange Pippin", "Apple", "late September", 3, 2016, "An aromatic dessert apple.")),
    ("Discovery", "Tomasz", "New variety page",
     _variety("Discovery", "Apple", "August", 2, 2018, "An early, crisp apple with a red flush.")),
    ("Conference", "Tomasz", "New variety page",
     _variety("Conference", "Pear", "September", 3, 2017, "A reliable, self-fertile pear.")),
    ("Doyenné du Comice", "Lena", "New variety page",
     _variety("Doyenné du Comice", "Pear", "October", 1, 2019, "A buttery dessert pear; needs a pollinator.")),
    ("Victoria", "Lena", "New variety page",
     _variety("Victoria", "Plum", "late August", 2, 2016, "The classic plum; prop the branches in heavy years.")),
    ("Czar", "Okoro", "New variety page",
     _variety("Czar", "Plum", "early August", 1, 2020, "A hardy cooking plum.")),
    ("Pruning guide", "Priya", "First version",
     "Winter pruning keeps the apple and pear trees open and productive.<ref>Royal Horticultural Society, "
     "''Pruning apple and pear trees''.</ref>\n\n== When ==\nApples and pears: November to early March. "
     "Plums: summer only (silver leaf disease).\n\n== How ==\n# Remove dead, diseased and crossing wood.\n"
     "# Keep an open centre.\n# Shorten the leaders by a third.\n\n== Tools ==\nSee the [[Tool shed inventory]]."
     "\n\n== References ==\n<references />\n\n[[Category:Guides]]\n"),
    ("Grafting", "Tomasz", "First version",
     "Whip-and-tongue grafting in March, on MM106 rootstock.\n\n== Steps ==\n# Cut matching slanting faces.\n"
     "# Add the tongues and fit them together.\n# Tie with grafting tape and seal.\n\n"
     "Results of 2024: 7 of 9 grafts took (see [[Bramley]] and [[Discovery]]).\n\n[[Category:Guides]]\n"),
    ("Pest control", "Lena", "First version",
     "We do not spray. Instead:\n* '''Codling moth''': pheromone traps from May.\n* '''Aphids''': encourage "
     "ladybirds; squash colonies by hand.\n* '''Wasps''': pick up windfalls daily in August.\n\n"
     "[[Category:Guides]]\n"),
    ("Composting", "Okoro", "First version",
     "Three bays behind the shed: fresh, maturing and ready.\n\n== What goes in ==\n{| class=\"wikitable\"\n"
     "! Yes !! No\n|-\n| grass cuttings, leaves, prunings under 1 cm || diseased wood, cooked food\n|}\n\n"
     "Turn the maturing bay on the first Saturday of the month.\n\n[[Category:Guides]]\n"),
    ("Watering schedule", "Okoro", "First version",
     "Young trees (planted after 2019) need 20 litres a week from May to September.\n\n"
     "{| class=\"wikitable sortable\"\n! Day !! Rows !! Volunteer\n|-\n| Monday || A–C || Lena\n|-\n"
     "| Thursday || D–F || Okoro\n|-\n| Saturday || all young trees || whoever is on the [[Volunteer rota]]\n|}\n"),
    ("Volunteer rota", "Priya", "June rota",
     "== June 2024 ==\n* 1 June: Priya, Tomasz\n* 8 June: Lena, Okoro\n* 15 June: Tomasz\n* 22 June: everyone "
     "(mowing)\n* 29 June: Priya, Lena\n\nSwap shifts on the [[Talk:Volunteer rota|talk page]].\n"),
    ("Harvest festival 2024", ADMIN, "Plans",
     "Saturday 28 September, 11:00–16:00.\n\n== Stalls ==\n* Apple pressing (bring bottles)\n* Variety "
     "tasting: [[Discovery]], [[Cox's Orange Pippin]], [[Conference]]\n* Jam and chutney\n\n== Jobs ==\n"
     "Set up from 9:00; see the [[Volunteer rota]].\n\n[[Category:Events]]\n"),
    ("Tool shed inventory", "Tomasz", "Inventory",
     "{| class=\"wikitable sortable\"\n! Tool !! Count !! Condition\n|-\n| Loppers || 3 || good\n|-\n"
     "| Pruning saw || 2 || one blade blunt\n|-\n| Ladder (3 m) || 1 || good\n|-\n| Fruit picker || 2 || good\n"
     "|-\n| Wheelbarrow || 2 || tyre flat on one\n|}\n"),
    ("Orchard map", "Lena", "Map",
     "The orchard has six rows (A–F) of eight trees.\n\n* Rows A–B: apples ([[Bramley]], [[Cox's Orange "
     "Pippin]])\n* Row C: [[Discovery]] and new grafts\n* Rows D–E: pears ([[Conference]], [[Doyenné du "
     "Comice]])\n* Row F: plums ([[Victoria]], [[Czar]])\n"),
    ("Category:Varieties", ADMIN, "Category", "Every fruit variety grown in the orchard.\n"),
    ("Category:Apple", ADMIN, "Category", "Apple varieties.\n[[Category:Varieties]]\n"),
    ("Category:Pear", ADMIN, "Category", "Pear varieties.\n[[Category:Varieties]]\n"),
    ("Category:Plum", ADMIN, "Category", "Plum varieties.\n[[Category:Varieties]]\n"),
    ("Category:Guides", ADMIN, "Category", "How-to guides for volunteers.\n"),
    ("Category:Events", ADMIN, "Category", "Events at the orchard.\n"),
    ("Talk:Volunteer rota", "Lena", "Swap request",
     "== Swap on 8 June ==\nCan anyone take my 8 June shift? I can do 15 June instead. ~~~~\n"),
    ("User:Priya", "Priya", "About me", "Orchard coordinator since 2016. Ask me about pruning.\n"),
    ("User:Tomasz", "Tomasz", "About me", "I look after the tools and the grafting beds.\n"),
    # later edits: histories with several authors
    ("Pruning guide", "Tomasz", "Add summer pruning",
     "Winter pruning keeps the apple and pear trees open and productive.<ref>Royal Horticultural Society, "
     "''Pruning apple and pear trees''.</ref>\n\n== When ==\nApples and pears: November to early March. "
     "Plums: summer only (silver leaf disease).\n\n== How ==\n# Remove dead, diseased and crossing wood.\n"
     "# Keep an open centre.\n# Shorten the leaders by a third.\n\n== Summer pruning ==\nCut this year's side "
     "shoots back to three leaves in August (trained trees only).\n\n== Tools ==\nSee the [[Tool shed "
     "inventory]].\n\n== References ==\n<references />\n\n[[Category:Guides]]\n"),
    ("Talk:Volunteer rota", "Okoro", "Reply",
     "== Swap on 8 June ==\nCan anyone take my 8 June shift? I can do 15 June instead. ~~~~\n"
     ":I can take it. ~~~~\n"),
    ("Volunteer rota", "Lena", "Swap with Okoro",
     "== June 2024 ==\n* 1 June: Priya, Tomasz\n* 8 June: Okoro\n* 15 June: Tomasz, Lena\n* 22 June: everyone "
     "(mowing)\n* 29 June: Priya, Lena\n\nSwap shifts on the [[Talk:Volunteer rota|talk page]].\n"),
    ("Tool shed inventory", "Okoro", "Wheelbarrow fixed",
     "{| class=\"wikitable sortable\"\n! Tool !! Count !! Condition\n|-\n| Loppers || 3 || good\n|-\n"
     "| Pruning saw || 2 || one blade blunt\n|-\n| Ladder (3 m) || 1 || good\n|-\n| Fruit picker || 2 || good\n"
     "|-\n| Wheelbarrow || 2 || good\n|}\n"),
    ("Harvest festival 2024", "Priya", "Add the tombola",
     "Saturday 28 September, 11:00–16:00.\n\n== Stalls ==\n* Apple pressing (bring bottles)\n* Variety "
     "tasting: [[Discovery]], [[Cox's Orange Pippin]], [[Conference]]\n* Jam and chutney\n* Tombola\n\n== Jobs "
     "==\nSet up from 9:00; see the [[Volunteer rota]].\n\n[[Category:Events]]\n"),
]


def _php(folder: Path, script: str, *args: str, stdin: str | None = None, what: str = "") -> None:
    env = {**os.environ, "MW_CONFIG_FILE": str(folder / "LocalSettings.php")}
    done = subprocess.run(["php", str(MW / "maintenance" / script), *args], input=stdin, capture_output=True,
                          text=True, env=env, cwd=MW, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"mediawiki seed: {what or script} failed (exit {done.returncode}): "
                           f"{(done.stdout + done.stderr).strip()[-400:]}")


def seed(folder: Path) -> None:
    if not installed():
        raise RuntimeError(f"mediawiki is not installed: apt-get install -y {' '.join(PACKAGES)}")
    (folder / "cache").mkdir()
    done = subprocess.run(["php", str(MW / "maintenance" / "install.php"), "--dbtype", "sqlite", "--dbpath",
                           str(folder / "db"), "--dbname", "wikidb", "--server", "http://127.0.0.1", "--scriptpath",
                           "", "--confpath", str(folder), "--pass", ADMIN_PW, "--lang", "en", SITE, ADMIN],
                          capture_output=True, text=True, cwd=MW, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"mediawiki seed: install.php failed: {(done.stdout + done.stderr).strip()[-400:]}")
    settings = folder / "LocalSettings.php"
    text = settings.read_text(encoding="utf-8")
    text = re.sub(r'"' + re.escape(str(folder / "db")) + '"', '__DIR__ . "/db"', text)
    if str(folder) in text:
        raise RuntimeError("mediawiki seed: LocalSettings.php still names the seed folder")
    settings.write_text(text + SETTINGS, encoding="utf-8")
    for user, password, flags in USERS:
        _php(folder, "createAndPromote.php", *flags, user, password, what=f"create user {user}")
    _php(folder, "createAndPromote.php", "--force", "--bureaucrat", "--sysop", ADMIN, what="promote Admin")
    for title, author, summary, body in PAGES:
        _php(folder, "edit.php", "--user", author, "--summary", summary, title, stdin=body, what=f"edit {title!r}")
    _php(folder, "runJobs.php", what="run the job queue")
    quiesce_sqlite(folder)  # the caches are WAL databases: readers of the snapshot would write their side files


def config(snapshot: Path) -> dict[str, Any]:
    return {
        "id": "mediawiki", "entry": "/index.php/Main_Page", "version": "1.39",
        "login": {"when_present": "#pt-login a", "steps": [
            {"open": "/index.php?title=Special:UserLogin"},
            {"type": "#wpName1", "text": ADMIN},
            {"type": "#wpPassword1", "text": ADMIN_PW},
            {"tap": "#wpLoginAttempt"},
            {"wait_for": "#pt-logout a", "timeout_s": 30}]},
        # feeds and raw wikitext are files, not screens
        "deny": {"urls": [r"[?&]feedformat=", r"[?&]action=raw\b", r"[?&]ctype=text/"]},
        "environment": {
            "start": "MW_CONFIG_FILE={data}/LocalSettings.php PHP_CLI_SERVER_WORKERS=4 exec php -S 127.0.0.1:{port} "
                     f"-t {MW}",
            "snapshot": {"files": str(snapshot)},
            # a static file of the package: the health check gives each request 2 s, and MediaWiki's first page
            # (it fills its caches) takes longer than that on a loaded machine, so polling a wiki page would pile
            # up requests on the server's workers
            "health": {"path": "/resources/assets/poweredby_mediawiki_88x31.png", "timeout_s": 120},
            "digest_exclude": ["cache/**", "db/locks/**", "db/wikicache.sqlite", "db/wikidb_l10n_cache.sqlite",
                               "db/wikidb_jobqueue.sqlite"],
        },
    }


APP = SuiteApp(
    name="mediawiki", kind="wiki", source="debian:mediawiki=1:1.39 (+php-sqlite3, php-cli)", single_page=False,
    admin_bulk=True, install=install, installed=installed, seed=seed, config=config, admin_user=ADMIN,
    notes="33 edits by 5 users: 18 content pages (variety pages on a template, guides, rota, events), 6 categories, "
          "a talk page, user pages; admin bulk: Special:Nuke, Special:ReplaceText, revision deletion, user rights.",
)
