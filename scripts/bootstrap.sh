#!/usr/bin/env bash
# Bring a checkout to a runnable state: system browser + chromedriver, the Python virtualenv,
# and the repo-local Appium server with its Chromium driver and fake driver (Android stand-in for tests).
#
# Idempotent by design: every step first checks whether its result is already there (binaries on
# disk, sha256 stamps of requirements.txt / pyproject.toml / package-lock.json, the installed-driver
# list), so a second run does no network or package work and finishes in about a second.
#
# Works as root on a fresh Debian machine. As a non-root user it uses sudo when available; without
# sudo it only reports which system packages are missing and carries on with the user-level steps.
# Nothing is installed globally through npm, and pip is never pointed at a CUDA index: requirements.txt
# pins torch, which the machine's pip configuration resolves to the local CPU wheel.
#
# Environment knobs:
#   PYTHON           interpreter used to create .venv (default: python3)
#   BOOTSTRAP_STRICT set to 1 to exit non-zero when something could not be installed (default when CI is set)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

PYTHON="${PYTHON:-python3}"
VENV_DIR="$REPO_ROOT/.venv"
APPIUM_DIR="$REPO_ROOT/tools/appium"
export APPIUM_HOME="$APPIUM_DIR/.appium"
CHROMIUM_DRIVER_PKG="appium-chromium-driver"
CHROMIUM_DRIVER_VERSION="3.1.1"
# Appium's own fake driver: serves a UiAutomator2-style XML file as an "app", so the Android adapter is tested
# through a real Appium server without an Android device (tests/test_android_fake_driver.py).
FAKE_DRIVER_PKG="@appium/fake-driver"
FAKE_DRIVER_VERSION="6.2.4"
NODE_MIN_MAJOR=20
NODE_MIN_MINOR=19

STRICT="${BOOTSTRAP_STRICT:-}"
if [[ -z "$STRICT" && -n "${CI:-}" ]]; then STRICT=1; fi

PROBLEMS=()
log() { printf '[bootstrap] %s\n' "$*"; }
warn() { printf '[bootstrap] WARNING: %s\n' "$*" >&2; PROBLEMS+=("$*"); }
die() { printf '[bootstrap] ERROR: %s\n' "$*" >&2; exit 1; }

# sha256 of the concatenation of the given files (missing files hash as empty), used for stamps.
hash_files() { cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1; }
stamp_matches() { [[ -f "$1" && "$(cat "$1")" == "$2" ]]; }

# Serialise concurrent runs (e.g. `make -j test demo`): both would otherwise race on pip/npm.
LOCK_FILE="${TMPDIR:-/tmp}/trajforge-bootstrap-$(printf '%s' "$REPO_ROOT" | sha256sum | cut -c1-12).lock"
exec 9>"$LOCK_FILE"
if command -v flock >/dev/null 2>&1; then flock 9; fi

# ---------------------------------------------------------------------------------------------------
# 1. System packages (Debian): only touched when a required binary is actually missing.
# ---------------------------------------------------------------------------------------------------
apt_missing=()
[[ -x /usr/bin/chromium ]] || apt_missing+=(chromium)
[[ -x /usr/bin/chromedriver ]] || apt_missing+=(chromium-driver)
# zh-locale crawls need CJK glyphs in screenshots, else every Chinese label renders as empty boxes.
if ! command -v fc-list >/dev/null 2>&1 || [[ -z "$(fc-list :lang=zh 2>/dev/null | head -n 1)" ]]; then
    apt_missing+=(fonts-noto-cjk)
fi
# The review UI's tests run a real PostgreSQL server (initdb + postgres from Debian's package).
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || apt_missing+=(postgresql)
command -v node >/dev/null 2>&1 || apt_missing+=(nodejs)
command -v npm >/dev/null 2>&1 || apt_missing+=(npm)
if [[ ! -d "$VENV_DIR" ]] && command -v "$PYTHON" >/dev/null 2>&1 \
    && ! "$PYTHON" -c 'import ensurepip' >/dev/null 2>&1; then
    apt_missing+=(python3-venv)
fi

if ((${#apt_missing[@]})); then
    SUDO=()
    if [[ "$(id -u)" -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then SUDO=(sudo -n); else SUDO=(none); fi
    fi
    if [[ "${SUDO[0]:-}" == none ]] || ! command -v apt-get >/dev/null 2>&1; then
        warn "missing system packages: ${apt_missing[*]} (need root/sudo and apt-get: apt-get install -y ${apt_missing[*]})"
    else
        log "installing system packages: ${apt_missing[*]}"
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${apt_missing[@]}"
    fi
else
    log "system packages present (chromium, chromedriver, node, npm)"
fi

# ---------------------------------------------------------------------------------------------------
# 2. Python virtualenv: requirements re-installed only when requirements.txt changes; the editable
#    install of this repo re-run only when pyproject.toml changes (entry points, package list).
# ---------------------------------------------------------------------------------------------------
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found; install Python 3.11"
[[ -f requirements.txt ]] || die "requirements.txt is missing in $REPO_ROOT"
[[ -f pyproject.toml ]] || die "pyproject.toml is missing in $REPO_ROOT"

if [[ ! -x "$VENV_DIR/bin/python" ]]; then
    log "creating virtualenv $VENV_DIR"
    "$PYTHON" -m venv "$VENV_DIR"
fi
VPY="$VENV_DIR/bin/python"

REQ_STAMP="$VENV_DIR/.trajforge-requirements.sha256"
REQ_HASH="$(hash_files requirements.txt)"
if stamp_matches "$REQ_STAMP" "$REQ_HASH"; then
    log "python requirements up to date"
else
    log "installing python requirements (requirements.txt changed or first run)"
    "$VPY" -m pip install -r requirements.txt
    printf '%s' "$REQ_HASH" >"$REQ_STAMP"
    rm -f "$VENV_DIR/.trajforge-editable.sha256"  # a dependency change may have replaced our package
fi

EDIT_STAMP="$VENV_DIR/.trajforge-editable.sha256"
EDIT_HASH="$(hash_files pyproject.toml)"
if stamp_matches "$EDIT_STAMP" "$EDIT_HASH"; then
    log "editable install up to date"
else
    log "installing this repo in editable mode"
    "$VPY" -m pip install -e . --no-deps
    printf '%s' "$EDIT_HASH" >"$EDIT_STAMP"
fi

# ---------------------------------------------------------------------------------------------------
# 3. Appium server (tools/appium/node_modules) and its drivers (tools/appium/.appium): Chromium, and the
#    fake driver that stands in for an Android device in tests.
# ---------------------------------------------------------------------------------------------------
node_ok=0
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    node_ver="$(node -p 'process.versions.node')"
    IFS=. read -r node_major node_minor _ <<<"$node_ver"
    if ((node_major > NODE_MIN_MAJOR || (node_major == NODE_MIN_MAJOR && node_minor >= NODE_MIN_MINOR))); then
        node_ok=1
    else
        warn "node $node_ver is too old for appium 3 (need >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR); skipping Appium setup"
    fi
else
    warn "node/npm not available; skipping Appium setup"
fi

if ((node_ok)); then
    NPM_STAMP="$APPIUM_DIR/node_modules/.trajforge-lock.sha256"
    NPM_HASH="$(hash_files "$APPIUM_DIR/package.json" "$APPIUM_DIR/package-lock.json")"
    if stamp_matches "$NPM_STAMP" "$NPM_HASH" && [[ -x "$APPIUM_DIR/node_modules/.bin/appium" ]]; then
        log "appium npm packages up to date"
    else
        log "installing appium npm packages"
        if [[ -f "$APPIUM_DIR/package-lock.json" ]]; then
            (cd "$APPIUM_DIR" && npm ci --no-audit --no-fund)
        else
            (cd "$APPIUM_DIR" && npm install --no-audit --no-fund)
        fi
        printf '%s' "$(hash_files "$APPIUM_DIR/package.json" "$APPIUM_DIR/package-lock.json")" >"$NPM_STAMP"
    fi

    APPIUM_BIN="$APPIUM_DIR/node_modules/.bin/appium"
    # One listing for all drivers (each `appium driver list` costs about a second).
    installed_drivers="$("$APPIUM_BIN" driver list --installed --json 2>/dev/null || true)"
    # Installed version of the driver listed under $1 (chromium, fake), or "" when it is not installed.
    installed_driver_version() {
        printf '%s' "$installed_drivers" | node -e '
            let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
                try { const d = JSON.parse(s)[process.argv[1]]; process.stdout.write(d && d.installed ? d.version : ""); }
                catch { process.stdout.write(""); }
            });' "$1"
    }
    # ensure_driver NAME NPM_PACKAGE VERSION: install the pinned version, replacing any other installed one.
    ensure_driver() {
        local name="$1" pkg="$2" want="$3" have
        have="$(installed_driver_version "$name")"
        if [[ "$have" == "$want" ]]; then
            log "appium $name driver $want installed"
            return
        fi
        if [[ -n "$have" ]]; then
            log "replacing appium $name driver $have"
            "$APPIUM_BIN" driver uninstall "$name"
        fi
        log "installing appium $name driver $want into $APPIUM_HOME"
        "$APPIUM_BIN" driver install --source=npm "$pkg@$want"
    }
    ensure_driver chromium "$CHROMIUM_DRIVER_PKG" "$CHROMIUM_DRIVER_VERSION"
    ensure_driver fake "$FAKE_DRIVER_PKG" "$FAKE_DRIVER_VERSION"
fi

# ---------------------------------------------------------------------------------------------------
# 4. Third-party test apps (issue #3 explorers): TiddlyWiki from npm and I Hate Money from PyPI, into
#    tools/thirdparty/ (gitignored). Versions and the install live in tests/thirdparty.py, which the
#    crawl tests also call; stamp files make a second run a no-op. I Hate Money gets its own venv because
#    it pins SQLAlchemy 2.0 and .venv pins 2.1.
# ---------------------------------------------------------------------------------------------------
#    The exploration benchmark's other registry apps (datasette, Trac: own venvs; docsify, Node-RED: npm) live in
#    tests/thirdparty_apps.py and are installed by the same command.
if [[ -f "$REPO_ROOT/tools/thirdparty/tiddlywiki/.installed-version" \
      && -f "$REPO_ROOT/tools/thirdparty/ihatemoney-venv/.installed-version" \
      && -f "$REPO_ROOT/tools/thirdparty/datasette-venv/.installed-version" \
      && -f "$REPO_ROOT/tools/thirdparty/trac-venv/.installed-version" \
      && -f "$REPO_ROOT/tools/thirdparty/docsify/.installed-version" \
      && -f "$REPO_ROOT/tools/thirdparty/node-red/.installed-version" ]]; then
    log "third-party test apps present (tiddlywiki, ihatemoney, datasette, trac, docsify, node-red)"
elif ((node_ok)); then
    log "installing third-party test apps (tiddlywiki, ihatemoney, datasette, trac, docsify, node-red) into tools/thirdparty"
    "$VPY" -m tests.thirdparty install || warn "third-party test apps could not be installed"
else
    warn "node/npm not usable; skipping the third-party test apps"
fi

# ---------------------------------------------------------------------------------------------------
if ((${#PROBLEMS[@]})); then
    log "finished with ${#PROBLEMS[@]} problem(s):"
    for p in "${PROBLEMS[@]}"; do log "  - $p"; done
    if [[ "$STRICT" == 1 ]]; then exit 1; fi
    log "continuing (browser tests will skip locally; set BOOTSTRAP_STRICT=1 to fail instead)"
else
    log "ready"
fi
