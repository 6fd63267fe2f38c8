"""Reset hooks for the third-party test apps: bring their server-side data back to the seed (stdlib only).

A crawl config's ``reset: {command: [...]}`` runs this file as a plain script before every crawl episode and
every replayed task (``explorers.reset``), so it imports nothing from the project and runs from any directory:

    python tests/app_resets.py snapshot-tiddlywiki URL FILE   # once, right after the seeded server started
    python tests/app_resets.py tiddlywiki URL FILE            # delete what is new, restore what changed
    python tests/app_resets.py ihatemoney DB_PATH             # drop every project; /demo re-creates the demo
    python tests/app_resets.py trac DB_PATH SEEDED            # delete the tickets filed after the seed

TiddlyWiki keeps tiddlers in its server process, so it is reset through its own HTTP API (what its browser
client uses, with the ``X-Requested-With`` header its CSRF check wants); I Hate Money re-creates its demo
project, with its demo bills, on the next visit to ``/demo`` when none exists, so its reset deletes every project.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

HEADERS = {"X-Requested-With": "TiddlyWiki", "Content-Type": "application/json"}


def _request(method: str, url: str, body: object | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=HEADERS)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def _titles(url: str) -> dict[str, str]:
    """Every stored tiddler's title → revision."""
    skinny = json.loads(_request("GET", url + "/recipes/default/tiddlers.json"))
    return {t["title"]: str(t.get("revision", "")) for t in skinny}


def _quoted(title: str) -> str:
    return urllib.parse.quote(title, safe="")


def stored_tiddler(url: str, title: str) -> dict | None:
    """One stored tiddler, read by title; ``None`` when it is gone. By title, because the server's
    ``tiddlers.json`` never lists system tiddlers (``$:/StoryList``, ``$:/DefaultTiddlers``)."""
    try:
        return json.loads(_request("GET", f"{url}/recipes/default/tiddlers/{_quoted(title)}"))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def _stored_titles(snapshot_path: str) -> set[str]:
    """Every title the wiki folder holds on disk, system tiddlers included (the server's ``tiddlers.json`` lists
    only the others, so a crawl's change to ``$:/DefaultTiddlers`` — which decides the start screen — or its
    ``$:/StoryList`` would survive a reset made from that list alone)."""
    folder = Path(snapshot_path).parent / "tiddlers"
    titles = set()
    for f in [*folder.glob("*.tid"), *folder.glob("*.meta")]:
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                break
            if line.startswith("title:"):
                titles.add(line[len("title:"):].strip())
    return titles


def snapshot_tiddlywiki(url: str, path: str) -> None:
    full = {}
    for title in sorted(set(_titles(url)) | _stored_titles(path)):
        tiddler = stored_tiddler(url, title)
        if tiddler is not None:  # a file on disk the server did not load: nothing to restore it to
            full[title] = tiddler
    with open(path, "w", encoding="utf-8") as f:
        json.dump(full, f)


def reset_tiddlywiki(url: str, path: str) -> None:
    with open(path, encoding="utf-8") as f:
        seed: dict[str, dict] = json.load(f)
    now = _titles(url)
    for title in sorted(set(now) | _stored_titles(path)):
        if title not in seed:
            try:
                _request("DELETE", f"{url}/bags/default/tiddlers/{_quoted(title)}")
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # already gone (a file the server had not loaded): nothing to undo
                    raise
    for title, tiddler in seed.items():
        # A system tiddler is missing from the server's list: read its revision by title, or every reset rewrites
        # the seed's $:/StoryList, and the benchmark counts each rewrite as a crawl's unintended write.
        current = now.get(title)
        if current is None:
            stored = stored_tiddler(url, title)
            current = None if stored is None else str(stored.get("revision", ""))
        if current != str(tiddler.get("revision", "")):
            fields = {k: v for k, v in tiddler.items() if k not in ("revision", "bag")}
            _request("PUT", f"{url}/recipes/default/tiddlers/{_quoted(title)}", fields)


def reset_ihatemoney(db_path: str) -> None:
    """Every project goes: the seed is the demo project alone, which the next visit to ``/demo`` re-creates with its
    demo bills. A project the crawl created ("Weekly team sync") would otherwise outlive the reset, and a replayed
    task creating it again is refused as a duplicate."""
    con = sqlite3.connect(db_path, timeout=30)
    try:
        with con:
            con.execute("DELETE FROM billowers")
            con.execute("DELETE FROM bill")
            con.execute("DELETE FROM person")
            con.execute("DELETE FROM project")
    finally:
        con.close()


def reset_trac(db_path: str, seeded: str) -> None:
    """Delete the tickets filed after the seed (ids above the seeded count), with their changes and fields."""
    con = sqlite3.connect(db_path, timeout=30)
    try:
        with con:
            keep = int(seeded)
            con.execute("DELETE FROM ticket_change WHERE ticket > ?", (keep,))
            con.execute("DELETE FROM ticket_custom WHERE ticket > ?", (keep,))
            con.execute("DELETE FROM ticket WHERE id > ?", (keep,))
    finally:
        con.close()


def main(argv: list[str]) -> int:
    commands = {"snapshot-tiddlywiki": (snapshot_tiddlywiki, 2), "tiddlywiki": (reset_tiddlywiki, 2),
                "ihatemoney": (reset_ihatemoney, 1), "trac": (reset_trac, 2)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    fn, _ = commands[argv[1]]
    fn(*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
