"""copyparty (PyPI, pinned): a file server whose browser UI is a file manager (folder tree, grid and list views,
upload, rename, move, delete, search over the indexed files, text and Markdown viewer/editor).

The seed is a small office share uploaded through copyparty's own HTTP API (one ``PUT`` per file as the admin
account; a PUT makes the missing folders): project documents, Markdown notes, CSV sheets, photos (small real PNGs) and
an archive, in a few nested folders. Everyone may read; ``admin`` has every right (read, write, move, delete,
admin), ``maria`` may read and write. Its state: the shared files (digested); the search index that every instance
rebuilds at start under ``hist/`` and its session/salt files under ``home/`` change on every visit and are left
out of the digest.
"""

from __future__ import annotations

import io
import shutil
import struct
import urllib.parse
import urllib.request
import zlib
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._webapp import free_port, pip_app, serving, venv_bin, venv_dir
from benchmarks.suite.registry import SuiteApp

VERSION = "1.20.26"
install, installed = pip_app("copyparty", [f"copyparty=={VERSION}"], VERSION)
ADMIN, ADMIN_PW = "admin", "share-admin-pw"
USERS = {ADMIN: ADMIN_PW, "maria": "maria-pw", "jonas": "jonas-pw"}


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A small real PNG of one colour with a diagonal band (so thumbnails differ)."""
    rows = b""
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            band = abs(x - y) < 6
            row += bytes((255 - c) if band else c for c in rgb)
        rows += bytes(row)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _zip() -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("minutes-2023.txt", "Minutes of the 2023 board meetings (archived).\n")
        z.writestr("budget-2023.csv", "item,amount\nrent,14400\nsoftware,3200\ntravel,5100\n")
    return buf.getvalue()


FILES: dict[str, bytes] = {
    "README.md": b"# Office share\n\nShared files of the Lindqvist & Ortega design studio.\n\n"
                 b"* `projects/` - one folder per client project\n* `admin/` - invoices, contracts, HR forms\n"
                 b"* `photos/` - site visits and the team day\n",
    "projects/harbour-cafe/brief.md": b"# Harbour Cafe - brief\n\nNew menu boards and a window sign. Budget 4,800 EUR."
                                      b"\n\n## Deadlines\n\n- concepts: 14 June\n- print files: 28 June\n",
    "projects/harbour-cafe/quote.csv": b"item,hours,rate\nconcepts,12,85\nmenu layout,8,85\nsign artwork,6,85\n",
    "projects/harbour-cafe/feedback.txt": b"Client likes concept B, wants a warmer blue and a bigger logo.\n",
    "projects/city-library/brief.md": b"# City Library - wayfinding\n\nSigns for three floors, Braille labels, "
                                      b"a printed map.\n",
    "projects/city-library/floor-plan-notes.txt": b"Ground floor: lending desk, children's corner.\n"
                                                  b"First floor: reading room, archive.\nSecond: offices.\n",
    "projects/city-library/schedule.csv": b"task,owner,due\nsurvey,Maria,2024-06-05\nsign list,Jonas,2024-06-12\n"
                                          b"artwork,Maria,2024-06-26\ninstall,contractor,2024-07-15\n",
    "projects/bike-festival/poster-copy.md": b"# Bike Festival 2024\n\nSaturday 7 September, Old Market Square.\n"
                                            b"Races, repair workshops, food trucks.\n",
    "admin/invoices/2024-05-harbour-cafe.txt": b"Invoice 2024-031\nHarbour Cafe\nConcepts and layout: 1,700 EUR\n",
    "admin/invoices/2024-05-city-library.txt": b"Invoice 2024-032\nCity Library\nSurvey and sign list: 2,210 EUR\n",
    "admin/contracts/freelancer-template.md": b"# Freelance agreement (template)\n\nScope, fees, rights of use, "
                                              b"payment within 30 days.\n",
    "admin/hr/holiday-requests.csv": b"name,from,to\nMaria,2024-07-22,2024-08-02\nJonas,2024-08-12,2024-08-23\n",
    "admin/archive-2023.zip": _zip(),
    "photos/site-visits/library-entrance.png": _png(96, 64, (40, 90, 160)),
    "photos/site-visits/cafe-window.png": _png(96, 64, (200, 120, 40)),
    "photos/team-day/lake.png": _png(128, 80, (30, 140, 110)),
    "photos/team-day/picnic.png": _png(128, 80, (170, 60, 90)),
    "notes/todo.md": b"# To do\n\n- [ ] order the large-format printer paper\n- [x] renew the font licences\n"
                     b"- [ ] back up the 2023 archive\n",
}


def _args(data: str, port: str) -> list[str]:
    accounts = [a for user, pw in USERS.items() for a in ("-a", f"{user}:{pw}")]
    return [*accounts, "--usernames", "-i", "127.0.0.1", "-p", port, "-e2dsa", "--hist", f"{data}/hist",
            "-v", f"{data}/files:/:r:A,{ADMIN}:rw,maria", "--no-crt", "-q", "--name", "office-share"]


def _env(data: Path) -> dict[str, str]:
    return {"HOME": str(data / "home"), "XDG_CONFIG_HOME": str(data / "home" / ".config")}


def seed(folder: Path) -> None:
    (folder / "files").mkdir(parents=True)
    (folder / "home").mkdir()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [str(venv_bin("copyparty", "python")), "-m", "copyparty", *_args(str(folder), str(port))]
    with serving(argv, base + "/", env=_env(folder)):
        auth = {"PW": f"{ADMIN}:{ADMIN_PW}"}
        for rel, body in FILES.items():  # a PUT makes the missing parent folders
            req = urllib.request.Request(f"{base}/{urllib.parse.quote(rel)}", data=body, method="PUT", headers=auth)
            urllib.request.urlopen(req, timeout=30).close()
    # The index is rebuilt by every instance at start (``-e2dsa``); a snapshot holding its WAL database would be
    # rewritten by each reader (SQLite readers write the ``-shm`` index), so the pristine copy keeps only files.
    shutil.rmtree(folder / "hist")
    missing = [rel for rel in FILES if not (folder / "files" / rel).is_file()]
    if missing:
        raise RuntimeError(f"copyparty seed: uploads did not land: {', '.join(missing)}")


def config(snapshot: Path) -> dict[str, Any]:
    python = venv_bin("copyparty", "python")
    args = " ".join(_args("{data}", "{port}"))
    start = f"HOME={{data}}/home XDG_CONFIG_HOME={{data}}/home/.config exec {python} -m copyparty {args}"
    return {
        "id": "copyparty", "entry": "/", "version": VERSION,
        "login": {"when_present": "#acc_info a[href='?h']", "steps": [
            {"open": "/?h"},
            {"type": "#lu", "text": ADMIN},
            {"type": "#lp", "text": ADMIN_PW},
            {"tap": "#ls"},
            {"open": "/"},
            {"wait_for": "#blogout", "timeout_s": 20}]},
        "environment": {
            "start": start,
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/", "timeout_s": 60},
            "digest_exclude": ["hist/**", "home/**", "files/**/.hist/**"],
        },
    }


APP = SuiteApp(
    name="copyparty", kind="files", source=f"pypi:copyparty=={VERSION}", single_page=True, admin_bulk=True,
    install=install, installed=installed, seed=seed, config=config, admin_user=ADMIN,
    notes="18 files in 10 folders (documents, CSV, PNG photos, a zip) uploaded through copyparty's HTTP API; "
          "the file list's multi-select cuts, pastes, deletes or zips several files at once.",
    extra={"venv": str(venv_dir("copyparty"))},
)
