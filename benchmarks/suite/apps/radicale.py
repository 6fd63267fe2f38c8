"""Radicale (PyPI, pinned): a CalDAV/CardDAV server with its own web UI (``/.web/``: log in, list, create,
edit, delete and upload calendars and address books; a small JavaScript app that never reloads the page).

The seed is a three-person household-and-work setup made through Radicale's own CalDAV/CardDAV API while it
serves (``MKCOL`` with calendar properties, then one ``PUT`` per event, task and contact): ``anna`` has a work
calendar, a family calendar, a to-do list and an address book; ``ben`` and ``chloe`` each have a calendar. Users are
in an htpasswd file; every user owns only their collections (``owner_only``), so ``anna``, who owns the most, is
the account the crawl uses. Its state is the storage folder (digested; Radicale's item cache and lock file are
left out) and the htpasswd file.
"""

from __future__ import annotations

import base64
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._webapp import free_port, pip_app, serving, venv_bin, venv_dir
from benchmarks.suite.registry import SuiteApp

VERSION = "3.9.0"
install, installed = pip_app("radicale", [f"radicale=={VERSION}"], VERSION)
USERS = {"anna": "anna-cal-pw", "ben": "ben-cal-pw", "chloe": "chloe-cal-pw"}
ADMIN = "anna"

CAL_PROPS = """<?xml version="1.0" encoding="utf-8"?>
<D:mkcol xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav" xmlns:I="http://apple.com/ns/ical/">
 <D:set><D:prop>
  <D:resourcetype><D:collection/><C:calendar/></D:resourcetype>
  <D:displayname>{name}</D:displayname>
  <C:calendar-description>{description}</C:calendar-description>
  <I:calendar-color>{color}</I:calendar-color>
  <C:supported-calendar-component-set><C:comp name="{comp}"/></C:supported-calendar-component-set>
 </D:prop></D:set>
</D:mkcol>"""
BOOK_PROPS = """<?xml version="1.0" encoding="utf-8"?>
<D:mkcol xmlns:D="DAV:" xmlns:CR="urn:ietf:params:xml:ns:carddav">
 <D:set><D:prop>
  <D:resourcetype><D:collection/><CR:addressbook/></D:resourcetype>
  <D:displayname>{name}</D:displayname>
  <CR:addressbook-description>{description}</CR:addressbook-description>
 </D:prop></D:set>
</D:mkcol>"""

# (user, collection, display name, description, colour, component, [(uid, summary, start, end, where)])
CALENDARS = [
    ("anna", "work", "Work", "Meetings and deadlines at the studio", "#1f6feb", "VEVENT", [
        ("w1", "Weekly team sync", "20240603T090000", "20240603T093000", "Room 2"),
        ("w2", "Client call: Harbour Cafe", "20240604T140000", "20240604T150000", "Phone"),
        ("w3", "Design review", "20240606T100000", "20240606T113000", "Room 1"),
        ("w4", "Weekly team sync", "20240610T090000", "20240610T093000", "Room 2"),
        ("w5", "Print files due", "20240628T170000", "20240628T173000", ""),
        ("w6", "Quarterly planning", "20240701T130000", "20240701T160000", "Main hall"),
    ]),
    ("anna", "family", "Family", "School, sports and visits", "#2da44e", "VEVENT", [
        ("f1", "Swimming lesson", "20240605T170000", "20240605T180000", "City pool"),
        ("f2", "Parents' evening", "20240611T190000", "20240611T203000", "Northside School"),
        ("f3", "Grandma's birthday", "20240615T120000", "20240615T170000", "Lakeside"),
        ("f4", "Dentist", "20240619T083000", "20240619T090000", "Dr. Okafor"),
        ("f5", "Summer holiday starts", "20240722T080000", "20240722T090000", ""),
    ]),
    ("ben", "calendar", "Ben's calendar", "Training and matches", "#bf3989", "VEVENT", [
        ("b1", "Football training", "20240604T180000", "20240604T193000", "Riverside pitch"),
        ("b2", "Match vs. Eastfield", "20240608T110000", "20240608T130000", "Eastfield"),
        ("b3", "Bike service", "20240612T160000", "20240612T163000", "Cycle shop"),
    ]),
    ("chloe", "calendar", "Chloe's calendar", "Lectures and exams", "#d4a72c", "VEVENT", [
        ("c1", "Statistics lecture", "20240603T100000", "20240603T120000", "Hall B"),
        ("c2", "Exam: Linear algebra", "20240614T090000", "20240614T120000", "Hall A"),
        ("c3", "Study group", "20240610T150000", "20240610T170000", "Library"),
    ]),
]
TASKS = [("t1", "Book the summer holiday ferry", "20240610"), ("t2", "Renew the car insurance", "20240620"),
         ("t3", "Send the Harbour Cafe quote", "20240605"), ("t4", "Buy a birthday present for Grandma", "20240614")]
CONTACTS = [("p1", "Maria Ortega", "maria@studio.example", "+44 20 7946 0101", "Lindqvist & Ortega"),
            ("p2", "Jonas Lindqvist", "jonas@studio.example", "+44 20 7946 0102", "Lindqvist & Ortega"),
            ("p3", "Dr. Ife Okafor", "reception@dental.example", "+44 20 7946 0150", "Okafor Dental"),
            ("p4", "Sam Reed", "sam.reed@mail.example", "+44 7700 900123", ""),
            ("p5", "Harbour Cafe", "hello@harbourcafe.example", "+44 20 7946 0177", "Harbour Cafe"),
            ("p6", "Northside School office", "office@northside.example", "+44 20 7946 0190", "Northside School")]


def _event(uid: str, summary: str, start: str, end: str, where: str) -> str:
    loc = f"LOCATION:{where}\r\n" if where else ""
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//trajforge//suite seed//EN\r\nBEGIN:VEVENT\r\n"
            f"UID:{uid}@suite.example\r\nDTSTAMP:20240601T080000Z\r\nDTSTART:{start}\r\nDTEND:{end}\r\n"
            f"SUMMARY:{summary}\r\n{loc}END:VEVENT\r\nEND:VCALENDAR\r\n")


def _todo(uid: str, summary: str, due: str) -> str:
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//trajforge//suite seed//EN\r\nBEGIN:VTODO\r\n"
            f"UID:{uid}@suite.example\r\nDTSTAMP:20240601T080000Z\r\nDUE;VALUE=DATE:{due}\r\nSUMMARY:{summary}\r\n"
            "STATUS:NEEDS-ACTION\r\nEND:VTODO\r\nEND:VCALENDAR\r\n")


def _card(uid: str, name: str, email: str, phone: str, org: str) -> str:
    first, _, last = name.rpartition(" ")
    return (f"BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{uid}@suite.example\r\nFN:{name}\r\nN:{last};{first};;;\r\n"
            f"EMAIL:{email}\r\nTEL:{phone}\r\n" + (f"ORG:{org}\r\n" if org else "") + "END:VCARD\r\n")


def _args(data: str, port: str) -> list[str]:
    return ["-m", "radicale", "--config", "", "--server-hosts", f"127.0.0.1:{port}",
            "--auth-type", "htpasswd", "--auth-htpasswd-filename", f"{data}/users",
            "--auth-htpasswd-encryption", "plain", "--rights-type", "owner_only",
            "--storage-filesystem-folder", f"{data}/collections", "--logging-level", "warning"]


def seed(folder: Path) -> None:
    (folder / "users").write_text("".join(f"{u}:{p}\n" for u, p in USERS.items()), encoding="utf-8")
    (folder / "collections").mkdir()
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    def call(user: str, method: str, path: str, body: str, ctype: str) -> None:
        token = base64.b64encode(f"{user}:{USERS[user]}".encode()).decode()
        req = urllib.request.Request(base + path, data=body.encode(), method=method,
                                     headers={"Authorization": f"Basic {token}", "Content-Type": ctype})
        urllib.request.urlopen(req, timeout=30).close()

    xml, ics = "application/xml; charset=utf-8", "text/calendar; charset=utf-8"
    with serving([str(venv_bin("radicale", "python")), *_args(str(folder), str(port))], base + "/.web/"):
        for user, coll, name, desc, color, comp, events in CALENDARS:
            call(user, "MKCOL", f"/{user}/{coll}/", CAL_PROPS.format(name=name, description=desc, color=color,
                                                                   comp=comp), xml)
            for ev in events:
                call(user, "PUT", f"/{user}/{coll}/{ev[0]}.ics", _event(*ev), ics)
        call(ADMIN, "MKCOL", f"/{ADMIN}/tasks/", CAL_PROPS.format(name="To do", description="Household tasks",
                                                                  color="#8250df", comp="VTODO"), xml)
        for task in TASKS:
            call(ADMIN, "PUT", f"/{ADMIN}/tasks/{task[0]}.ics", _todo(*task), ics)
        call(ADMIN, "MKCOL", f"/{ADMIN}/contacts/", BOOK_PROPS.format(name="Contacts",
                                                                      description="Work and family contacts"), xml)
        for card in CONTACTS:
            call(ADMIN, "PUT", f"/{ADMIN}/contacts/{card[0]}.vcf", _card(*card), "text/vcard; charset=utf-8")


def config(snapshot: Path) -> dict[str, Any]:
    python = str(venv_bin("radicale", "python"))
    return {
        "id": "radicale", "entry": "/.web/", "version": VERSION,
        "login": {"when_present": "#loginscene input[data-name=user]", "steps": [
            {"type": "#loginscene input[data-name=user]", "text": ADMIN},
            {"type": "#loginscene input[data-name=password]", "text": USERS[ADMIN]},
            {"tap": "#loginscene form[data-name=form] button[type=submit]"},
            {"wait_for": "#collectionsscene", "timeout_s": 20}]},
        "environment": {
            "start": [python, *_args("{data}", "{port}")],
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/.web/", "timeout_s": 60},
            "digest_exclude": ["collections/.Radicale.lock", "**/.Radicale.cache/**", "**/.Radicale.tmp-*"],
        },
    }


APP = SuiteApp(
    name="radicale", kind="calendar", source=f"pypi:radicale=={VERSION}", single_page=True, admin_bulk=False,
    install=install, installed=installed, seed=seed, config=config, admin_user=ADMIN,
    notes="3 users; anna: Work (6 events), Family (5), To do (4 tasks), Contacts (6 vCards); ben and chloe: one "
          "calendar each (3 events). No admin screen: each user manages only their own collections.",
    extra={"venv": str(venv_dir("radicale"))},
)
