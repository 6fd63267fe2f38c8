"""Fava (PyPI), the web UI of the Beancount plain-text accounting system: one ledger file in ``{data}``.

A Beancount ledger is a text file its owner writes (that is the app's data format and its "API"); the seed writes
one household's first half of 2024 and checks it with Beancount's own ``bean-check`` (zero errors) before it is
used: 20 open accounts (checking, savings, a credit card, a brokerage account holding index-fund shares, salary,
a dozen expense accounts), about 100 transactions from realistic payees (rent, groceries, salary, utilities,
dining, travel with ``#lisbon-2024`` tags and links), monthly balance assertions, fund prices, events (a move to a
new city), notes, two stored queries and a budget (``custom "budget"``). Fava shows income statement, balance
sheet, trial balance, journal, query, documents, events, statistics, the editor and the import page.

Fava is a single-page app (Svelte, client-side routing between its reports). It has no users and no login; its
editor and "add transaction" dialog write the ledger file (the digest sees them). No admin bulk actions.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._pyapp import pypi_installer, run_in, venv_bin
from benchmarks.suite.registry import SuiteApp

VERSION = "1.30.16"
NAME = "fava"
LEDGER = "household.beancount"

install, installed = pypi_installer(NAME, [f"fava=={VERSION}"], VERSION)

ACCOUNTS = """2023-12-31 open Assets:Bank:Checking          EUR
2023-12-31 open Assets:Bank:Savings           EUR
2023-12-31 open Assets:Cash                   EUR
2023-12-31 open Assets:Brokerage:Cash         EUR
2023-12-31 open Assets:Brokerage:Funds        VWCE
2023-12-31 open Liabilities:CreditCard:Visa   EUR
2023-12-31 open Income:Salary:Northwind       EUR
2023-12-31 open Income:Interest:Savings       EUR
2023-12-31 open Expenses:Housing:Rent         EUR
2023-12-31 open Expenses:Housing:Utilities    EUR
2023-12-31 open Expenses:Food:Groceries       EUR
2023-12-31 open Expenses:Food:Dining          EUR
2023-12-31 open Expenses:Transport:Transit    EUR
2023-12-31 open Expenses:Transport:Bicycle    EUR
2023-12-31 open Expenses:Health:Pharmacy      EUR
2023-12-31 open Expenses:Leisure:Books        EUR
2023-12-31 open Expenses:Leisure:Cinema       EUR
2023-12-31 open Expenses:Travel               EUR
2023-12-31 open Expenses:Phone                EUR
2023-12-31 open Equity:Opening-Balances       EUR
"""

HEADER = """option "title" "Household accounts 2024"
option "operating_currency" "EUR"
2023-12-31 commodity VWCE
  name: "Vanguard FTSE All-World UCITS ETF"
"""

GROCERS = ["Lidl", "Albert Heijn", "Marché Bio", "Corner Bakery"]
DINING = ["Trattoria Roma", "Sushi Kaito", "The Green Fork", "Café Central"]
BOOKS = ["Bookshop Atlas", "Second Chapter Books"]


def ledger_text() -> str:
    """The ledger: deterministic (a fixed random seed), so every snapshot of one version is the same."""
    rnd = random.Random(2024)
    out = [HEADER, ACCOUNTS,
           "2023-12-31 * \"Opening balances\"\n  Assets:Bank:Checking  2450.00 EUR\n"
           "  Assets:Bank:Savings  8200.00 EUR\n  Assets:Cash  120.00 EUR\n  Equity:Opening-Balances\n"]
    checking, card = 2450.00, 0.0

    def txn(date: str, payee: str, narration: str, legs: list[tuple[str, float]], tags: str = "") -> None:
        lines = [f'{date} * "{payee}" "{narration}"{tags}']
        lines += [f"  {account}  {amount:.2f} EUR" for account, amount in legs]
        out.append("\n".join(lines) + "\n")

    for month in range(1, 7):
        m = f"2024-{month:02d}"
        txn(f"{m}-01", "Northwind Trails", "Salary", [("Assets:Bank:Checking", 3400.00),
                                                      ("Income:Salary:Northwind", -3400.00)])
        txn(f"{m}-02", "Oakwood Lettings", "Rent", [("Expenses:Housing:Rent", 1150.00),
                                                    ("Assets:Bank:Checking", -1150.00)])
        utilities = round(rnd.uniform(70, 140), 2)
        txn(f"{m}-05", "City Energy", "Electricity and gas", [("Expenses:Housing:Utilities", utilities),
                                                              ("Assets:Bank:Checking", -utilities)])
        txn(f"{m}-07", "Telco Mobile", "Phone plan", [("Expenses:Phone", 19.99), ("Assets:Bank:Checking", -19.99)])
        checking += 3400 - 1150 - utilities - 19.99
        for week in range(4):
            day = f"{m}-{3 + week * 7:02d}"
            amount = round(rnd.uniform(35, 95), 2)
            txn(day, rnd.choice(GROCERS), "Weekly groceries", [("Expenses:Food:Groceries", amount),
                                                              ("Liabilities:CreditCard:Visa", -amount)])
            card += amount
        for _ in range(2):
            amount = round(rnd.uniform(18, 70), 2)
            txn(f"{m}-{rnd.randint(8, 27):02d}", rnd.choice(DINING), "Dinner",
                [("Expenses:Food:Dining", amount), ("Liabilities:CreditCard:Visa", -amount)])
            card += amount
        txn(f"{m}-10", "Metro Transit", "Monthly pass", [("Expenses:Transport:Transit", 49.00),
                                                         ("Assets:Bank:Checking", -49.00)])
        checking -= 49
        if month % 2 == 0:
            amount = round(rnd.uniform(12, 30), 2)
            txn(f"{m}-14", rnd.choice(BOOKS), "Books", [("Expenses:Leisure:Books", amount),
                                                        ("Assets:Cash", -amount)])
            txn(f"{m}-20", "Pharmacy Sant Jordi", "Pharmacy", [("Expenses:Health:Pharmacy", 14.60),
                                                               ("Liabilities:CreditCard:Visa", -14.60)])
            card += 14.60
        txn(f"{m}-25", "Visa", "Credit card bill", [("Liabilities:CreditCard:Visa", round(card, 2)),
                                                    ("Assets:Bank:Checking", -round(card, 2))])
        checking -= round(card, 2)
        card = 0.0
        txn(f"{m}-26", "Transfer", "Monthly saving", [("Assets:Bank:Savings", 400.00),
                                                      ("Assets:Bank:Checking", -400.00)])
        checking -= 400
        out.append(f'{m}-27 * "Broker" "Monthly index fund purchase"\n'
                   f"  Assets:Brokerage:Funds  2 VWCE {{{100 + month * 1.5:.2f} EUR}}\n"
                   f"  Assets:Bank:Checking  {-2 * (100 + month * 1.5):.2f} EUR\n")
        checking -= 2 * (100 + month * 1.5)
        out.append(f"{m}-28 price VWCE {101 + month * 1.7:.2f} EUR\n")
        next_month = f"2024-{month + 1:02d}-01"
        out.append(f"{next_month} balance Assets:Bank:Checking  {checking:.2f} EUR\n")
        if month in (3, 6):
            txn(f"{m}-30", "Savings Bank", "Quarterly interest", [("Assets:Bank:Savings", 21.40),
                                                                  ("Income:Interest:Savings", -21.40)])
    for day, what, amount in [("2024-05-11", "Flight to Lisbon", 186.00), ("2024-05-12", "Hotel Alfama", 342.50),
                              ("2024-05-14", "Tram and museum", 38.20), ("2024-05-15", "Pastéis de Belém", 9.80)]:
        txn(day, "Lisbon trip", what, [("Expenses:Travel", amount), ("Assets:Bank:Savings", -amount)],
            " #lisbon-2024 ^lisbon-trip")
    out.append('2024-02-17 * "Velo Repairs" "New chain and brake pads" #bicycle\n'
               "  Expenses:Transport:Bicycle  64.00 EUR\n  Assets:Cash  -64.00 EUR\n")
    out.append('2024-01-01 event "location" "Utrecht"\n2024-04-01 event "location" "Amsterdam"\n'
               '2024-04-01 event "employer" "Northwind Trails"\n')
    out.append('2024-03-15 note Assets:Bank:Checking "Called the bank about the new debit card"\n'
               '2024-06-03 note Liabilities:CreditCard:Visa "Card limit raised to 3000 EUR"\n')
    out.append('2024-01-01 query "dining-by-month" "SELECT month, sum(position) WHERE account ~ \'Dining\' '
               'GROUP BY month"\n'
               '2024-01-01 query "largest-expenses" "SELECT date, payee, narration, position WHERE account ~ '
               '\'Expenses\' ORDER BY position DESC LIMIT 20"\n')
    out.append('2024-01-01 custom "budget" Expenses:Food:Groceries "monthly" 300.00 EUR\n'
               '2024-01-01 custom "budget" Expenses:Food:Dining "monthly" 120.00 EUR\n'
               '2024-01-01 custom "fava-option" "language" "en"\n')
    return "\n".join(out)


def seed(folder: Path) -> None:
    ledger = folder / LEDGER
    ledger.write_text(ledger_text(), encoding="utf-8")
    run_in(NAME, [venv_bin(NAME, "bean-check"), ledger], "bean-check the seeded ledger")


def config(snapshot: Path) -> dict[str, Any]:
    return {
        "id": NAME, "entry": "/", "version": VERSION,
        "environment": {
            "start": [str(venv_bin(NAME, "fava")), "--host", "127.0.0.1", "--port", "{port}", f"{{data}}/{LEDGER}"],
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/", "timeout_s": 60},
            "digest_exclude": ["*.picklecache"],
        },
    }


APP = SuiteApp(
    name=NAME, kind="finance", source=f"pypi:fava=={VERSION}", single_page=True, admin_bulk=False,
    install=install, installed=installed, seed=seed, config=config,
    notes="one Beancount ledger (Jan-Jun 2024, ~100 transactions, prices, budget, queries); no users, no login",
    coverage="python:fava",
)
