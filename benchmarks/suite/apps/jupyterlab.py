"""JupyterLab (PyPI, pinned): a notebook IDE, a single-page app (file browser, tabs, menus, command palette,
notebooks with a live Python kernel).

The seed is a small data team's workspace made with Jupyter's own tools: ``nbformat`` writes the notebooks and
``jupyter nbconvert --execute`` runs them so their outputs are real, next to CSV data, Markdown notes and a Python
module in a few folders. Every Jupyter folder (config, data, runtime, IPython profile) points into ``{data}``, so
an instance keeps all of its state there; the kernel's runtime files, checkpoints, the IPython history and the
lab's autosaved layout change on every click and are left out of the digest. Login is Jupyter's token form (the
token is the only account: it has every right, like an admin). The extension manager (it would query PyPI) is
disabled in the lab's page config.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._webapp import pip_app, venv_bin, venv_dir
from benchmarks.suite.registry import SuiteApp
from tests.thirdparty import _run

VERSION = "4.6.6"
TOKEN = "trajforge-lab-token"
install, installed = pip_app("jupyterlab", [f"jupyterlab=={VERSION}"], VERSION)

# The folders Jupyter would otherwise keep under $HOME, all inside the instance's data folder.
DIRS = {"JUPYTER_CONFIG_DIR": "jupyter/config", "JUPYTER_DATA_DIR": "jupyter/data",
        "JUPYTER_RUNTIME_DIR": "jupyter/runtime", "IPYTHONDIR": "jupyter/ipython"}
WORK = "work"  # the file browser's root

SALES_CSV = """month,region,units,revenue
2024-01,North,120,14400
2024-01,South,95,11400
2024-02,North,132,15840
2024-02,South,101,12120
2024-03,North,150,18000
2024-03,South,88,10560
2024-04,North,141,16920
2024-04,South,117,14040
2024-05,North,163,19560
2024-05,South,124,14880
2024-06,North,170,20400
2024-06,South,131,15720
"""
STATIONS_CSV = """station,date,temp_c,rain_mm
Riverside,2024-06-01,18.2,0.0
Riverside,2024-06-02,19.5,2.4
Riverside,2024-06-03,17.1,11.0
Hilltop,2024-06-01,14.8,0.0
Hilltop,2024-06-02,15.9,3.1
Hilltop,2024-06-03,13.2,14.6
Harbour,2024-06-01,17.0,0.2
Harbour,2024-06-02,18.4,1.0
Harbour,2024-06-03,16.3,8.8
"""
HELPERS_PY = '''"""Small helpers shared by the team's notebooks."""
import csv


def read_rows(path):
    """Rows of a CSV file as dicts."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def total(rows, field):
    return sum(float(r[field]) for r in rows)
'''
README_MD = """# Analytics workspace

Notebooks of the analytics team, one folder per topic.

- `sales/` — monthly sales by region, the quarterly summary
- `weather/` — readings of the three field stations
- `notes/` — meeting notes and the onboarding checklist
- `lib/helpers.py` — CSV helpers the notebooks import
"""
NOTES = {
    "notes/meeting-2024-06-10.md": "# Team meeting, 10 June\n\n* Q2 sales summary is due Friday (Priya).\n"
                                   "* The Hilltop station lost power on 3 June; readings after 14:00 are missing.\n"
                                   "* Next: a dashboard for the regional managers.\n",
    "notes/onboarding.md": "# Onboarding checklist\n\n1. Read the workspace README.\n2. Run `sales/monthly.ipynb`.\n"
                           "3. Ask Marco for access to the station archive.\n",
    "notes/ideas.txt": "forecast June with a moving average\ncompare rain against sales in the South\n",
}

# (path, [(cell type, source)]) — run in order by nbconvert, from the notebook's own folder.
NOTEBOOKS: list[tuple[str, list[tuple[str, str]]]] = [
    ("sales/monthly.ipynb", [
        ("markdown", "# Monthly sales\n\nUnits and revenue per region, January to June 2024."),
        ("code", "import sys\nsys.path.insert(0, '../lib')\nfrom helpers import read_rows, total\n"
                 "rows = read_rows('sales.csv')\nlen(rows)"),
        ("code", "for region in ('North', 'South'):\n"
                 "    mine = [r for r in rows if r['region'] == region]\n"
                 "    print(f\"{region}: {total(mine, 'units'):.0f} units, {total(mine, 'revenue'):,.0f} EUR\")"),
        ("markdown", "## Best month\n\nThe month with the highest revenue over both regions."),
        ("code", "by_month = {}\nfor r in rows:\n    by_month[r['month']] = by_month.get(r['month'], 0) + "
                 "int(r['revenue'])\nmax(by_month.items(), key=lambda kv: kv[1])"),
    ]),
    ("sales/quarterly-summary.ipynb", [
        ("markdown", "# Quarterly summary\n\nQ1 against Q2, for the regional managers."),
        ("code", "import csv\nwith open('sales.csv') as fh:\n    rows = list(csv.DictReader(fh))\n"
                 "q = lambda m: 'Q1' if m <= '2024-03' else 'Q2'\nsummary = {}\nfor r in rows:\n"
                 "    summary[q(r['month'])] = summary.get(q(r['month']), 0) + int(r['revenue'])\nsummary"),
        ("code", "growth = (summary['Q2'] - summary['Q1']) / summary['Q1']\nprint(f'Growth Q1 to Q2: {growth:.1%}')"),
    ]),
    ("weather/stations.ipynb", [
        ("markdown", "# Field stations\n\nDaily temperature and rain at Riverside, Hilltop and Harbour."),
        ("code", "import csv, statistics\nwith open('stations.csv') as fh:\n    rows = list(csv.DictReader(fh))\n"
                 "stations = sorted({r['station'] for r in rows})\nstations"),
        ("code", "for s in stations:\n    temps = [float(r['temp_c']) for r in rows if r['station'] == s]\n"
                 "    rain = sum(float(r['rain_mm']) for r in rows if r['station'] == s)\n"
                 "    print(f'{s:10} mean {statistics.mean(temps):.1f} C, rain {rain:.1f} mm')"),
        ("markdown", "Hilltop is the coldest and the wettest; see the meeting notes about its power cut."),
    ]),
    ("scratch.ipynb", [
        ("markdown", "# Scratch\n\nQuick checks."),
        ("code", "sum(range(1, 101))"),
        ("code", "from datetime import date\ndate(2024, 6, 30) - date(2024, 1, 1)"),
    ]),
]


def _env(data: Path) -> dict[str, str]:
    return {**os.environ, **{k: str(data / v) for k, v in DIRS.items()}}


def seed(folder: Path) -> None:
    for rel in DIRS.values():
        (folder / rel).mkdir(parents=True, exist_ok=True)
    work = folder / WORK
    files = {"README.md": README_MD, "sales/sales.csv": SALES_CSV, "weather/stations.csv": STATIONS_CSV,
             "lib/helpers.py": HELPERS_PY, **NOTES}
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text, encoding="utf-8")
    python = str(venv_bin("jupyterlab", "python"))
    writer = ("import json, sys, nbformat\nfrom nbformat import v4\n"
              "path, cells = sys.argv[1], json.loads(sys.argv[2])\n"
              "nb = v4.new_notebook(cells=[v4.new_markdown_cell(s) if t == 'markdown' else v4.new_code_cell(s)"
              " for t, s in cells])\nnb.metadata['kernelspec'] = {'name': 'python3', 'display_name': 'Python 3',"
              " 'language': 'python'}\nnbformat.write(nb, path)\n")
    for rel, cells in NOTEBOOKS:
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        _run([python, "-c", writer, str(path), json.dumps(cells)], f"write the notebook {rel}")
    notebooks = [str(work / rel) for rel, _ in NOTEBOOKS]
    import subprocess

    for nb in notebooks:  # run from the notebook's folder, the way the lab runs it, so relative paths resolve
        done = subprocess.run([str(venv_bin("jupyterlab", "jupyter")), "nbconvert", "--to", "notebook", "--execute",
                               "--inplace", nb], cwd=Path(nb).parent, env=_env(folder), capture_output=True,
                              text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"jupyterlab seed: nbconvert --execute {nb} failed: {done.stderr.strip()[-400:]}")
    # The extension manager lists and installs extensions from PyPI: nothing a disposable instance may reach, so
    # the lab's own page config disables it (a user's setting, not a change to the app).
    labconfig = folder / DIRS["JUPYTER_CONFIG_DIR"] / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/extensionmanager-extension": True}}, indent=1), encoding="utf-8")
    for junk in ("runtime",):
        for p in (folder / "jupyter" / junk).glob("*"):
            p.unlink()


def config(snapshot: Path) -> dict[str, Any]:
    lab = venv_bin("jupyterlab", "jupyter-lab")
    dirs = " ".join(f"{k}={{data}}/{v}" for k, v in DIRS.items())
    start = (f"{dirs} exec {lab} --no-browser --ip 127.0.0.1 --port {{port}} --ServerApp.port_retries=0 "
             f"--ServerApp.root_dir={{data}}/{WORK} --IdentityProvider.token={TOKEN} "
             f"--LabApp.workspaces_dir={{data}}/jupyter/workspaces "
             f"--LabApp.user_settings_dir={{data}}/jupyter/settings "
             "--ServerApp.open_browser=False --ServerApp.allow_root=True --LabApp.news_url=None "
             "--LabApp.check_for_updates_class="
             "jupyterlab.NeverCheckForUpdate")
    return {
        "id": "jupyterlab", "entry": "/lab", "version": VERSION,
        "login": {"when_present": "input[name=password]", "steps": [
            {"type": "input[name=password]", "text": TOKEN},
            {"tap": "#login_submit"},
            {"wait_for": ".jp-DirListing-content", "timeout_s": 60}]},
        "environment": {
            "start": start,
            "snapshot": {"files": str(snapshot)},
            "health": {"path": "/login", "timeout_s": 90},
            "digest_exclude": ["jupyter/runtime/*", "jupyter/runtime/**", "jupyter/ipython/**", "jupyter/workspaces/**",
                               "**/.ipynb_checkpoints/**", "jupyter/data/**", "**/__pycache__/**"],
            "reset_on_restart": "always",  # running kernels keep state in memory
        },
    }


APP = SuiteApp(
    name="jupyterlab", kind="notebook", source=f"pypi:jupyterlab=={VERSION}", single_page=True, admin_bulk=False,
    install=install, installed=installed, seed=seed, config=config, admin_user="token",
    notes="4 executed notebooks, CSV data, Markdown notes and a helper module in sales/, weather/, notes/, lib/; "
          "the file browser's multi-select acts on several files at once, but there is no admin screen.",
    extra={"venv": str(venv_dir("jupyterlab"))},
)
