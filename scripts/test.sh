#!/usr/bin/env bash
# Install everything from scratch (if needed) and run every test, notebooks included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The report's browser tests drive headless Chromium: install it when it is missing and this
# machine allows it (root or passwordless sudo, apt); otherwise they skip, and the run says so
# in its last line.
browser_missing=""
if ! command -v chromium >/dev/null 2>&1; then
    bash scripts/install_chromium.sh || browser_missing=1
fi
.venv/bin/ruff check memlab tests benchmarks
.venv/bin/mypy
# The layers of docs/architecture.md: no upward or sideways import, no cycle in a package.
.venv/bin/lint-imports --no-logo
# Two worker processes when pytest-xdist (the dev extra) is installed. --dist loadfile keeps
# each file whole on one worker, in order: a notebook's cells share one kernel, a module's
# fixtures are built once. Arguments come after, so `-n 0` runs everything in this process.
workers=()
if .venv/bin/python -c 'import xdist' 2>/dev/null; then
    workers=(-n 2 --dist loadfile)
fi
set +e
# Notebooks replay from the committed cache only: a cache miss fails instead of calling the model.
MEMLAB_CACHE_MODE=read_only .venv/bin/python -m pytest ${workers[@]+"${workers[@]}"} tests notebooks \
    --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
if [ -n "$browser_missing" ]; then
    skipped=$(.venv/bin/python -m pytest --collect-only -q tests/test_report_browser.py 2>/dev/null \
        | grep '::' | sed 's/.*:://' | paste -sd, - | sed 's/,/, /g')
    echo "!!! SKIPPED the browser tests of tests/test_report_browser.py (${skipped}): Chromium" \
        "is not installed and could not be installed here. Install it (sudo bash" \
        "scripts/install_chromium.sh, or your package manager's 'chromium') and rerun" \
        "bash scripts/test.sh. !!!" >&2
fi
exit "$status"
