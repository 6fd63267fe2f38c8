"""``python -m benchmarks.suite list|install|seed [--apps a,b]``: the suite's one install script."""

from __future__ import annotations

import argparse
import sys

from benchmarks.suite.registry import all_apps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.suite", description=__doc__)
    ap.add_argument("action", choices=["list", "install", "seed"])
    ap.add_argument("--apps", help="comma-separated names (default: all)")
    args = ap.parse_args(argv)
    apps = all_apps()
    names = args.apps.split(",") if args.apps else list(apps)
    unknown = sorted(set(names) - set(apps))
    if unknown:
        print(f"unknown suite app(s) {', '.join(unknown)}; known: {', '.join(apps)}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        app = apps[name]
        if args.action == "list":
            flags = ",".join(f for f, on in (("spa", app.single_page), ("admin-bulk", app.admin_bulk)) if on)
            print(f"{name:14} {app.kind:10} {'installed' if app.installed() else 'missing':9} {flags:15} {app.source}")
            continue
        try:
            if args.action == "install":
                app.install()
            app.snapshot(rebuild=args.action == "seed")
            print(f"{name}: ready", flush=True)
        except Exception as exc:  # one line per app; the others still install
            failed.append(name)
            print(f"{name}: FAILED: {exc}", file=sys.stderr, flush=True)
    if args.action == "list":
        kinds = {apps[n].kind for n in names}
        print(f"{len(names)} apps, {len(kinds)} kinds, {sum(apps[n].single_page for n in names)} single-page, "
              f"{sum(apps[n].admin_bulk for n in names)} with admin bulk actions")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
