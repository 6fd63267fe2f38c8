"""sqlite-web (PyPI), a web browser and editor for one SQLite database, behind its password login.

The seed is the database the app is pointed at: a small logistics company ("Harbor Logistics") built with SQLite
itself — 6 departments, 30 employees (with managers), 12 customers, 8 projects, 40 project assignments, 90
timesheet entries and 25 invoices, foreign keys between them, three indexes, a view (hours per project) and a
trigger that stamps an invoice's ``updated_at``. sqlite-web shows every table's structure, content (20 rows a
page, sortable), an insert/edit/delete form per row, a query editor, import/export, and the index/trigger/view
pages; it can add and drop columns, indexes and whole tables (the environment makes that harmless).

It runs with ``-P`` (the password comes from ``SQLITE_WEB_PASSWORD``) and ``-f`` (foreign keys enforced). One user
(the password); server-rendered pages, no client-side routing, no bulk actions (rows are edited one at a time).
"""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._pyapp import pypi_installer, venv_bin
from benchmarks.suite.registry import SuiteApp

VERSION = "0.8.2"
NAME = "sqlite-web"
DB = "harbor.db"
PASSWORD = "harbor-admin-1"

install, installed = pypi_installer(NAME, [f"sqlite-web=={VERSION}"], VERSION)

DEPARTMENTS = ["Operations", "Warehouse", "Sales", "Finance", "Customer Service", "IT"]
FIRST = ["Amara", "Bjorn", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kemi", "Lars",
         "Mei", "Nadia", "Oskar", "Paula", "Quentin", "Rosa", "Sanjay", "Tuva", "Umar", "Vera", "Wendel", "Ximena",
         "Yusuf", "Zofia", "Anton", "Beatriz", "Cyrus", "Dalia"]
LAST = ["Okafor", "Lindgren", "Ferrari", "Volkov", "Demir", "Haddad", "Schmidt", "Tanaka", "Moreno", "Weber",
        "Adeyemi", "Nilsen", "Zhang", "Rahman", "Berg", "Souza", "Martin", "Alvarez", "Iyer", "Hansen", "Farouk",
        "Petrova", "Jansen", "Ruiz", "Aydin", "Kowalska", "Novak", "Costa", "Karimi", "Haddad"]
CUSTOMERS = [("Bluefin Seafoods", "Bergen"), ("Cedar & Pine Furniture", "Tallinn"), ("Delta Pharma", "Basel"),
             ("Evergreen Grocers", "Utrecht"), ("Fjord Outdoor", "Oslo"), ("Granite Tools", "Aberdeen"),
             ("Harvest Mills", "Lyon"), ("Ironbridge Motors", "Birmingham"), ("Juniper Books", "Dublin"),
             ("Kestrel Electronics", "Eindhoven"), ("Lumen Lighting", "Milan"), ("Maple Coffee Roasters", "Ghent")]
PROJECTS = ["Cold-chain upgrade", "Port of Rotterdam lane", "Warehouse robotics pilot", "Customs e-filing",
            "Route planning rewrite", "Returns centre", "Driver safety training", "Fleet electrification"]

SCHEMA = """
CREATE TABLE departments (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, floor INTEGER);
CREATE TABLE employees (id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE, department_id INTEGER NOT NULL REFERENCES departments(id),
    manager_id INTEGER REFERENCES employees(id), hired_on TEXT, salary INTEGER, active INTEGER DEFAULT 1);
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, contact_email TEXT);
CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL, customer_id INTEGER REFERENCES customers(id),
    lead_id INTEGER REFERENCES employees(id), starts_on TEXT, budget_eur INTEGER, status TEXT);
CREATE TABLE assignments (id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
    employee_id INTEGER NOT NULL REFERENCES employees(id), role TEXT);
CREATE TABLE timesheets (id INTEGER PRIMARY KEY, employee_id INTEGER NOT NULL REFERENCES employees(id),
    project_id INTEGER NOT NULL REFERENCES projects(id), day TEXT NOT NULL, hours REAL NOT NULL, note TEXT);
CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
    project_id INTEGER REFERENCES projects(id), issued_on TEXT, amount_eur REAL, paid INTEGER DEFAULT 0,
    updated_at TEXT);
CREATE INDEX employees_department ON employees(department_id);
CREATE INDEX timesheets_project_day ON timesheets(project_id, day);
CREATE INDEX invoices_customer ON invoices(customer_id);
CREATE VIEW project_hours AS SELECT p.name AS project, round(sum(t.hours), 1) AS hours, count(*) AS entries
    FROM timesheets t JOIN projects p ON p.id = t.project_id GROUP BY p.id;
CREATE TRIGGER invoices_touch AFTER UPDATE ON invoices BEGIN
    UPDATE invoices SET updated_at = datetime('now') WHERE id = NEW.id; END;
"""


def seed(folder: Path) -> None:
    """The Harbor Logistics database (deterministic: a fixed random seed)."""
    rnd = random.Random(7)
    with closing(sqlite3.connect(folder / DB)) as con, con:
        con.executescript(SCHEMA)
        con.executemany("INSERT INTO departments (name, floor) VALUES (?, ?)",
                        [(d, 1 + i % 3) for i, d in enumerate(DEPARTMENTS)])
        for i, (first, last) in enumerate(zip(FIRST, LAST, strict=True)):
            dept = 1 + i % len(DEPARTMENTS)
            manager = None if i < len(DEPARTMENTS) else dept  # the first of each department manages it
            con.execute("INSERT INTO employees (first_name, last_name, email, department_id, manager_id, hired_on, "
                        "salary, active) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (first, last, f"{first.lower()}.{last.lower()}{i}@harbor.example", dept, manager,
                         f"20{15 + i % 9:02d}-{1 + i % 12:02d}-{1 + i % 27:02d}", 38000 + rnd.randrange(0, 40) * 500,
                         0 if i in (11, 23) else 1))
        con.executemany("INSERT INTO customers (name, city, contact_email) VALUES (?, ?, ?)",
                        [(n, c, "orders@" + n.split()[0].lower() + ".example") for n, c in CUSTOMERS])
        for i, name in enumerate(PROJECTS):
            con.execute("INSERT INTO projects (name, customer_id, lead_id, starts_on, budget_eur, status) "
                        "VALUES (?, ?, ?, ?, ?, ?)", (name, 1 + i % len(CUSTOMERS), 1 + i % 6,
                                                      f"2024-{1 + i:02d}-01", 25000 + 5000 * i,
                                                      ["active", "planned", "done"][i % 3]))
        pairs = sorted({(1 + rnd.randrange(len(PROJECTS)), 1 + rnd.randrange(len(FIRST))) for _ in range(60)})[:40]
        con.executemany("INSERT INTO assignments (project_id, employee_id, role) VALUES (?, ?, ?)",
                        [(p, e, rnd.choice(["analyst", "driver", "coordinator", "engineer"])) for p, e in pairs])
        notes = ["site visit", "planning meeting", "loading bay survey", "client call", "report", "training"]
        con.executemany("INSERT INTO timesheets (employee_id, project_id, day, hours, note) VALUES (?, ?, ?, ?, ?)",
                        [(e, p, f"2024-0{3 + k % 4}-{1 + k % 28:02d}", rnd.choice([2, 3.5, 4, 6, 7.5, 8]),
                          rnd.choice(notes)) for k, (p, e) in enumerate(pairs * 3) if k < 90])
        con.executemany("INSERT INTO invoices (customer_id, project_id, issued_on, amount_eur, paid, updated_at) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        [(1 + k % len(CUSTOMERS), 1 + k % len(PROJECTS), f"2024-{1 + k % 6:02d}-{10 + k % 15}",
                          round(rnd.uniform(900, 24000), 2), int(k % 4 != 0), f"2024-{1 + k % 6:02d}-{10 + k % 15}")
                         for k in range(25)])


def config(snapshot: Path) -> dict[str, Any]:
    return {
        "id": NAME, "entry": "/", "version": VERSION,
        "login": {"when_present": "#id_password",
                  "steps": [{"type": "#id_password", "text": PASSWORD},
                            {"tap": "form button[type=submit]"},
                            {"wait_for": "a[href='/logout/']"}]},
        "environment": {
            "start": ["env", f"SQLITE_WEB_PASSWORD={PASSWORD}", str(venv_bin(NAME, "sqlite_web")), "--host",
                      "127.0.0.1", "--port", "{port}", "--no-browser", "--password", "--foreign-keys",
                      "--rows-per-page", "20", f"{{data}}/{DB}"],
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/login/", "timeout_s": 60},
        },
    }


APP = SuiteApp(
    name=NAME, kind="database", source=f"pypi:sqlite-web=={VERSION}", single_page=False, admin_bulk=False,
    install=install, installed=installed, seed=seed, config=config, admin_user="(password only)",
    notes="a 7-table company database (30 employees, 90 timesheets, 25 invoices), view, trigger; password login",
    coverage="python:sqlite_web",
)
