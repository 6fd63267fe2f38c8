"""Roundup (PyPI), the issue tracker: its "classic" template on the SQLite backend, tracker home in ``{data}``.

Made by the app's own tools: ``roundup-admin install classic sqlite`` and ``roundup-admin initialise`` (the admin
password), then Roundup's Python API (``tracker.open('admin')``, ``db.user.create``, ``db.issue.create``,
``db.msg.create``) logs the seed: 6 users (the admin, a second admin, four users with real names, addresses and
organisations), 8 keywords, 24 issues of a small web shop's tracker with realistic titles, 1–4 messages each
from different authors, every classic status and priority, assignees, nosy lists, a superseded duplicate. Roundup
mails nosy users on every change; ``mail debug`` writes those mails to ``tracker/mail-debug.log`` instead of
sending them (it stays digested: a notification is an effect of the action). The digest leaves out ``db-otk``
and ``db-session``: Roundup writes a one-time CSRF key into ``db-otk`` each time it renders a form, so viewing
an issue would otherwise count as a write and reset the instance after every step.

Odd: Roundup writes absolute links from its ``web`` setting (``config.ini``), which must match the instance's port;
the start command is a small launcher that opens the tracker as ``roundup-server`` does and sets ``web`` to
``http://127.0.0.1:{port}/tracker/`` in memory, then runs ``roundup-server`` unchanged (``config.ini`` in
``{data}`` is never rewritten, so a fresh instance's digest equals the snapshot's). Server-rendered pages; the
admin has class and user lists and a CSV-style "edit all items" page per class, but no select-rows bulk actions.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._pyapp import pypi_installer, run_in, run_python, venv_bin, venv_python
from benchmarks.suite.registry import SuiteApp

VERSION = "2.6.0"
NAME = "roundup"
ADMIN_USER, ADMIN_PASSWORD = "admin", "tracker-admin-1"

install, installed = pypi_installer(NAME, [f"roundup=={VERSION}"], VERSION)

LAUNCH = r'''
import os, sys
import roundup.instance
from roundup.scripts import roundup_server

port, home = sys.argv[1], sys.argv[2]
_open = roundup.instance.open


def open_on_this_port(tracker_home, optimize=0):
    tracker = _open(tracker_home, optimize)
    tracker.config["TRACKER_WEB"] = "http://127.0.0.1:%s/tracker/" % port
    return tracker


roundup.instance.open = open_on_this_port
# roundup-server refuses to run as root unless told which user to be: the current one (ignored when not root)
sys.argv = ["roundup-server", "-n", "127.0.0.1", "-p", port, "-u", str(os.getuid()), "tracker=" + home]
roundup_server.run()
'''

USERS = [("mlindqvist", "Maya Lindqvist", "Northwind Shop", "User"),
         ("tortega", "Tomás Ortega", "Northwind Shop", "User"),
         ("praman", "Priya Raman", "Northwind Shop", "User"),
         ("kmensah", "Kwame Mensah", "Mensah Consulting", "User"),
         ("aokafor", "Amara Okafor", "Northwind Shop", "Admin")]
KEYWORDS = ["checkout", "payments", "search", "accessibility", "mobile", "performance", "emails", "inventory"]
# title, priority, status, assignee, keywords, messages (author, text)
ISSUES = [
    ("Checkout button does nothing on Safari 17", "critical", "in-progress", "praman", ["checkout", "mobile"],
     [("kmensah", "Customers on iPhones report that 'Place order' does nothing."),
      ("praman", "Reproduced on Safari 17.2; the click handler throws on a missing polyfill."),
      ("mlindqvist", "Please prioritise, this is about 8% of our orders.")]),
    ("Refunds for split payments are rounded wrongly", "urgent", "chatting", "tortega", ["payments"],
     [("aokafor", "A 3-way split of 100.00 refunds 33.33 three times, one cent is lost."),
      ("tortega", "We should allocate the remainder to the first payment.")]),
    ("Search ignores accented letters", "bug", "need-eg", "praman", ["search"],
     [("mlindqvist", "Searching 'creme' does not find 'Crème brûlée mould'."),
      ("praman", "Which search box: header or catalogue filter? An example URL would help.")]),
    ("Add Apple Pay to the checkout", "feature", "deferred", None, ["checkout", "payments"],
     [("kmensah", "Three large customers asked for it."), ("tortega", "Deferred until the PSP migration.")]),
    ("Order confirmation email shows the wrong currency", "bug", "testing", "tortega", ["emails", "payments"],
     [("mlindqvist", "Orders paid in SEK get 'EUR' in the email."),
      ("tortega", "Fixed in the template, please test on staging.")]),
    ("Product images load slowly on the category page", "bug", "in-progress", "praman", ["performance"],
     [("aokafor", "Category pages take 6 s on 4G."), ("praman", "Adding lazy loading and smaller thumbnails.")]),
    ("Screen reader reads prices twice", "bug", "unread", None, ["accessibility"],
     [("kmensah", "VoiceOver reads '12 euros 12.00 EUR' for every price.")]),
    ("Stock count goes negative after a cancelled order", "urgent", "resolved", "tortega", ["inventory"],
     [("mlindqvist", "Cancelling an order twice releases its stock twice."),
      ("tortega", "The cancel action is now idempotent."), ("mlindqvist", "Confirmed fixed, thanks!")]),
    ("Wishlist is lost after logging in", "bug", "chatting", "praman", ["mobile"],
     [("kmensah", "Items added while logged out disappear after login."),
      ("praman", "We need to merge the anonymous wishlist into the account.")]),
    ("Export orders as CSV for accounting", "feature", "in-progress", "tortega", ["payments"],
     [("aokafor", "Finance wants a monthly CSV with VAT per line.")]),
    ("Newsletter sign-up accepts invalid addresses", "bug", "done-cbb", "praman", ["emails"],
     [("mlindqvist", "'maya@' was accepted."), ("praman", "Basic validation added; full check later.")]),
    ("Dark mode for the storefront", "wish", "deferred", None, ["accessibility"],
     [("kmensah", "Nice to have for evening shoppers.")]),
    ("Delivery date picker allows Sundays", "bug", "testing", "tortega", ["checkout"],
     [("mlindqvist", "We do not deliver on Sundays, but the picker offers them.")]),
    ("Low-stock alert email for the warehouse", "feature", "unread", None, ["inventory", "emails"],
     [("aokafor", "Email the warehouse when an item falls under 5 units.")]),
    ("Search suggestions show discontinued products", "bug", "in-progress", "praman", ["search", "inventory"],
     [("kmensah", "The 'Trail 2' backpack is discontinued but still suggested.")]),
    ("Cart total wrong with two discount codes", "critical", "resolved", "tortega", ["checkout", "payments"],
     [("mlindqvist", "Two codes are applied to each other's discounted price."),
      ("tortega", "Only one code per order now, as the terms say.")]),
    ("Page title missing on the returns page", "bug", "resolved", "praman", ["accessibility"],
     [("kmensah", "The returns page has an empty <title>.")]),
    ("Gift cards cannot be combined with PayPal", "bug", "need-eg", "tortega", ["payments"],
     [("aokafor", "A customer could not pay the rest of a gift-card order with PayPal."),
      ("tortega", "Which gift card (printed or e-card)?")]),
    ("Mobile menu covers the search field", "bug", "unread", None, ["mobile", "search"],
     [("mlindqvist", "On small screens the open menu hides the search box.")]),
    ("Show delivery estimate on product pages", "feature", "chatting", "praman", ["inventory"],
     [("kmensah", "Customers ask 'when will it arrive?' before adding to cart."),
      ("praman", "We can use the warehouse lead times.")]),
    ("Translate the checkout into Swedish", "feature", "deferred", None, ["checkout"],
     [("aokafor", "Swedish customers are 12% of sales.")]),
    ("Password reset email goes to spam", "urgent", "in-progress", "tortega", ["emails"],
     [("kmensah", "Several customers found the reset email in spam."),
      ("tortega", "Setting up DKIM for the shop domain.")]),
    ("Slow admin order list with 50k orders", "bug", "testing", "praman", ["performance"],
     [("aokafor", "The admin order list takes 20 s to open.")]),
    ("Checkout button unresponsive on iOS", "bug", "resolved", None, ["checkout", "mobile"],
     [("mlindqvist", "Probably the same as the Safari issue.")]),
]

SEED = r'''
import json, sys
import roundup.instance
home, users, keywords, issues = sys.argv[1], *[json.loads(a) for a in sys.argv[2:5]]
tracker = roundup.instance.open(home)
db = tracker.open("admin")
ids = {"admin": db.user.lookup("admin")}
for username, realname, org, roles in users:
    ids[username] = db.user.create(username=username, realname=realname, organisation=org, roles=roles,
                                   address=username + "@northwind.example", password=None)
kw = {name: db.keyword.create(name=name) for name in keywords}
created = []
for title, priority, status, assignee, kws, messages in issues:
    msgs = [db.msg.create(author=ids[author], content=text, date=None) for author, text in messages]
    authors = sorted({ids[a] for a, _ in messages} | ({ids[assignee]} if assignee else set()))
    fields = dict(title=title, priority=db.priority.lookup(priority), status=db.status.lookup(status),
                  keyword=[kw[k] for k in kws], messages=msgs, nosy=authors)
    if assignee:
        fields["assignedto"] = ids[assignee]
    created.append(db.issue.create(**fields))
db.issue.set(created[-1], superseder=[created[0]])
db.commit()
db.close()
print(len(created), "issues")
'''


def seed(folder: Path) -> None:
    home = folder / "tracker"
    admin = venv_bin(NAME, "roundup-admin")
    run_in(NAME, [admin, "-i", home, "install", "classic", "sqlite",
                  "tracker_web=http://127.0.0.1:8080/tracker/,mail_debug=mail-debug.log,mail_domain=northwind.example,"
                  "tracker_name=Northwind Shop issues"], "roundup-admin install")
    run_in(NAME, [admin, "-i", home, "initialise", ADMIN_PASSWORD], "roundup-admin initialise")
    run_python(NAME, SEED, home, json.dumps(USERS), json.dumps(KEYWORDS), json.dumps(ISSUES),
               what="create users, keywords and issues")
    # Roundup switches its database to WAL mode; the snapshot is stored in rollback mode, so copying it (the
    # SQLite backup API) never leaves -wal/-shm files beside the pristine copy. Each instance turns WAL on again.
    with closing(sqlite3.connect(home / "db" / "db")) as con:
        con.execute("PRAGMA journal_mode=DELETE")


def config(snapshot: Path) -> dict[str, Any]:
    return {
        "id": NAME, "entry": "/tracker/", "version": VERSION,
        "login": {"when_present": "input[name=__login_password]",
                  "steps": [{"type": "input[name=__login_name]", "text": ADMIN_USER},
                            {"type": "input[name=__login_password]", "text": ADMIN_PASSWORD},
                            {"tap": "input[type=submit][value=Login]"},
                            {"wait_for": "a[href*='@action=logout']"}]},
        "environment": {
            "start": [str(venv_python(NAME)), "-c", LAUNCH, "{port}", "{data}/tracker"],
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/tracker/", "timeout_s": 60},
            # db-otk (the one-time CSRF keys every page with a form issues) and db-session (login sessions) are
            # Roundup's own bookkeeping, written by merely viewing a page: not tracker data an action changes
            "digest_exclude": ["tracker/db/lock", "tracker/db/db-otk*", "tracker/db/db-session*", "*__pycache__*",
                               "*.pyc"],
        },
    }


APP = SuiteApp(
    name=NAME, kind="issues", source=f"pypi:roundup=={VERSION}", single_page=False, admin_bulk=False,
    install=install, installed=installed, seed=seed, config=config, admin_user=ADMIN_USER,
    notes="classic template, SQLite; 6 users, 8 keywords, 24 issues with 1-4 messages each",
    coverage="python:roundup",
)
