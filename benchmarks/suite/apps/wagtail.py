"""Wagtail (PyPI), a Django CMS: a ``wagtail start`` project served by Django's ``runserver``.

The project is what ``wagtail start suitesite`` generates (its stock ``home`` and ``search`` apps, unchanged); the
suite adds one settings module, ``suitesite/settings/suite.py``, that puts the SQLite database and uploaded media
in ``{data}`` (read from ``WAGTAIL_SUITE_DATA``), keeps sessions in signed cookies (so a login writes nothing but
``last_login``) and turns off the admin's check for new Wagtail releases (it would call out to the internet).

The seed, made through Django's and Wagtail's own API (``manage.py migrate``, ``add_child``, ``save_revision``,
``publish``): the site "Northwind Trails" with a tree of 30 pages under the home page (five sections — About,
Trails, Guides, Journal, Shop — each with children; 24 published, 6 drafts with unpublished changes; search
descriptions and SEO titles), 6 users (the admin, two editors, a moderator, a contributor and one inactive
account) in Wagtail's Editors and Moderators groups, two collections, 10 images (PNGs drawn with Pillow, tagged),
6 documents and 4 redirects. The admin (``/admin/``) has bulk actions on pages (publish, unpublish, move,
delete), users (role, active state, delete), images and documents.

Odd: the stock template's only page type is ``HomePage`` with no body field, so pages carry titles, slugs and
search descriptions rather than body text; the public site shows Wagtail's welcome page at ``/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.suite.apps._pyapp import pypi_installer, run_in, run_python, venv_dir, venv_python
from benchmarks.suite.registry import SuiteApp

VERSION = "8.0.1"
NAME = "wagtail"
PROJECT = "suitesite"
ADMIN_USER, ADMIN_PASSWORD = "admin", "northwind-admin-1"

SETTINGS = '''"""The trajforge suite's settings: data (SQLite, media) in $WAGTAIL_SUITE_DATA, nothing else changed."""
import os

from .dev import *  # noqa: F401,F403

_DATA = os.environ["WAGTAIL_SUITE_DATA"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(_DATA, "db.sqlite3")}}
MEDIA_ROOT = os.path.join(_DATA, "media")
ALLOWED_HOSTS = ["*"]
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
WAGTAIL_ENABLE_UPDATE_CHECK = False
WAGTAIL_SITE_NAME = "Northwind Trails"
WAGTAILADMIN_BASE_URL = "http://127.0.0.1"
'''


def project_dir() -> Path:
    return venv_dir(NAME) / "site"


def _make_project(venv: Path) -> None:
    site = project_dir()
    if not (site / "manage.py").exists():
        site.mkdir(parents=True, exist_ok=True)
        run_in(NAME, [venv / "bin" / "wagtail", "start", PROJECT, site], "wagtail start")
    (site / PROJECT / "settings" / "suite.py").write_text(SETTINGS, encoding="utf-8")


install, installed = pypi_installer(NAME, [f"wagtail=={VERSION}"], VERSION, after=_make_project)

SEED = r'''
import io, os, sys
import django
django.setup()
from django.contrib.auth.models import Group
from django.contrib.auth import get_user_model
from django.core.files.images import ImageFile
from django.core.files.base import ContentFile
from PIL import Image as PILImage, ImageDraw
from wagtail.models import Page, Site, Collection
from wagtail.images.models import Image
from wagtail.documents.models import Document
from wagtail.contrib.redirects.models import Redirect
from home.models import HomePage

User = get_user_model()
admin_user, admin_password = sys.argv[1:3]
editors, moderators = Group.objects.get(name="Editors"), Group.objects.get(name="Moderators")
admin = User.objects.create_superuser(admin_user, "admin@northwind.example", admin_password,
                                      first_name="Alex", last_name="Morgan")
people = {}
for username, first, last, group, active in [
        ("mlindqvist", "Maya", "Lindqvist", editors, True), ("tortega", "Tomás", "Ortega", moderators, True),
        ("praman", "Priya", "Raman", editors, True), ("kmensah", "Kwame", "Mensah", None, True),
        ("jdubois", "Julien", "Dubois", editors, False)]:
    u = User.objects.create_user(username, f"{username}@northwind.example", "northwind-staff-1",
                                 first_name=first, last_name=last, is_active=active)
    if group is not None:
        u.groups.add(group)
    people[username] = u

site = Site.objects.get(is_default_site=True)
site.site_name = "Northwind Trails"
site.save()
home = site.root_page.specific
home.title, home.seo_title = "Northwind Trails", "Northwind Trails — hiking in the north"
home.search_description = "Guided hikes, trail guides and outdoor gear from the Northwind team."
home.save_revision(user=admin).publish()

TREE = {
    ("About us", "mlindqvist"): [("Our team", True), ("History", True), ("Sustainability", True),
                                 ("Press", False)],
    ("Trails", "praman"): [("Ridge Loop", True), ("Lakeside Path", True), ("Old Mill Trail", True),
                           ("Summit Route", True), ("Birch Valley Walk", False)],
    ("Guides", "tortega"): [("Packing for a day hike", True), ("Reading a topographic map", True),
                            ("Hiking with children", True), ("Winter safety", False)],
    ("Journal", "mlindqvist"): [("Spring opening of the Ridge Loop", True), ("New bridge at Old Mill", True),
                                ("Volunteer trail day recap", True), ("Wildflowers of June", True),
                                ("Autumn colours report", False)],
    ("Shop", "kmensah"): [("Maps and guidebooks", True), ("Gift cards", True), ("Shipping and returns", True),
                          ("Rental gear", False)],
}
for (section, owner), children in TREE.items():
    parent = home.add_child(instance=HomePage(title=section, owner=people[owner],
                                              search_description=f"{section} at Northwind Trails."))
    parent.save_revision(user=people[owner]).publish(user=admin)
    for title, live in children:
        page = parent.add_child(instance=HomePage(
            title=title, owner=people[owner], live=live, seo_title=f"{title} | Northwind Trails",
            search_description=f"{title}: {section.lower()} from the Northwind Trails team."))
        rev = page.save_revision(user=people[owner])
        if live:
            rev.publish(user=admin)

marketing = Collection.get_first_root_node().add_child(name="Marketing")
photos = Collection.get_first_root_node().add_child(name="Trail photos")
COLOURS = [("Ridge at dawn", (214, 120, 60)), ("Lakeside reeds", (70, 130, 160)), ("Old mill wheel", (120, 90, 60)),
           ("Summit cairn", (150, 150, 150)), ("Birch grove", (220, 220, 200)), ("Map detail", (90, 160, 90)),
           ("Trail sign", (180, 60, 60)), ("Volunteers at work", (200, 170, 50)), ("Bridge at Old Mill", (60, 60, 110)),
           ("Autumn maples", (230, 90, 30))]
for i, (title, colour) in enumerate(COLOURS):
    img = PILImage.new("RGB", (320, 200), colour)
    ImageDraw.Draw(img).rectangle([20 + i * 8, 30, 300 - i * 8, 170], outline=(255, 255, 255), width=4)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    slug = title.lower().replace(" ", "-")
    image = Image(title=title, file=ImageFile(io.BytesIO(buf.getvalue()), name=f"{slug}.png"),
                  collection=photos if i % 3 else marketing, uploaded_by_user=admin)
    image.save()
    image.tags.add("trail" if i % 2 else "landscape", "2024")

for title, text in [("Annual report 2024", "Visitors: 48,200. New trails: 2. Volunteers: 310."),
                    ("Trail map (print)", "Ridge Loop 11 km, Lakeside Path 6 km, Old Mill Trail 8 km."),
                    ("Volunteer handbook", "Safety first. Sign in at the ranger station."),
                    ("Press kit", "Logos and photos may be used with credit to Northwind Trails."),
                    ("Rental agreement", "Gear is rented per day; damage is charged at cost."),
                    ("Winter closure notice", "The Summit Route closes from December to March.")]:
    slug = title.lower().replace(" ", "-").replace("(", "").replace(")", "")
    doc = Document(title=title, collection=marketing, uploaded_by_user=admin)
    doc.file.save(f"{slug}.txt", ContentFile(text.encode()), save=False)
    doc.save()
    doc.tags.add("public")

for old, new in [("/trails/ridge", "/trails/ridge-loop/"), ("/blog", "/journal/"), ("/store", "/shop/"),
                 ("/team", "/about-us/our-team/")]:
    Redirect.objects.create(old_path=old, redirect_link=new, site=site)

# What an admin who has used the site leaves behind, which Wagtail otherwise writes lazily on a first read (and a
# read-only crawl would count as writes): every user's profile, and each file's size and hash.
from wagtail.users.models import UserProfile
for u in User.objects.all():
    UserProfile.get_for_user(u)
for item in [*Image.objects.all(), *Document.objects.all()]:
    item.get_file_size()
    item.get_file_hash()
print(Page.objects.count(), "pages")
'''


def _env(folder: Path) -> dict[str, str]:
    return {"DJANGO_SETTINGS_MODULE": f"{PROJECT}.settings.suite", "WAGTAIL_SUITE_DATA": str(folder)}


def seed(folder: Path) -> None:
    site = project_dir()
    run_in(NAME, [venv_python(NAME), "manage.py", "migrate", "--noinput"], "manage.py migrate", cwd=site,
           env=_env(folder))
    run_python(NAME, SEED, ADMIN_USER, ADMIN_PASSWORD, what="seed pages, users, images and documents", cwd=site,
               env={**_env(folder), "PYTHONPATH": str(site)})


def config(snapshot: Path) -> dict[str, Any]:
    return {
        "id": NAME, "entry": "/admin/", "version": VERSION,
        "login": {"when_present": "#id_password",
                  "steps": [{"type": "#id_username", "text": ADMIN_USER},
                            {"type": "#id_password", "text": ADMIN_PASSWORD},
                            {"tap": "form button[type=submit]"},
                            {"wait_for": "#main"}]},
        "environment": {
            "start": ["env", "DJANGO_SETTINGS_MODULE=suitesite.settings.suite", "WAGTAIL_SUITE_DATA={data}",
                      str(venv_python(NAME)), "manage.py", "runserver", "--noreload", "127.0.0.1:{port}"],
            "cwd": str(project_dir()),
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/admin/login/", "timeout_s": 60},
            # Written by reads, not by anything a user changes: renditions (thumbnails the admin makes on first
            # view, files and rows), the search index, who has an editor open, the comment subscription an editor
            # opens with, the AUTOINCREMENT counters those rows move, and the login's own timestamp.
            "digest_exclude": ["media/images/*", "table:db.sqlite3/wagtailimages_rendition",
                               "table:db.sqlite3/wagtailsearch_indexentry*",
                               "table:db.sqlite3/wagtailadmin_editingsession",
                               "table:db.sqlite3/wagtailcore_pagesubscription", "table:db.sqlite3/sqlite_sequence",
                               "table:db.sqlite3/auth_user.last_login"],
        },
    }


APP = SuiteApp(
    name=NAME, kind="cms", source=f"pypi:wagtail=={VERSION}", single_page=False, admin_bulk=True,
    install=install, installed=installed, seed=seed, config=config, admin_user=ADMIN_USER,
    notes="wagtail start project, stock page type; 30 pages, 6 users, 10 images, 6 documents, 4 redirects",
    coverage="python:wagtail",
)
