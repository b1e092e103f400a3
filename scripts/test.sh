#!/usr/bin/env bash
# Install everything from scratch (if needed) and run every test, notebooks included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
# The layers of docs/architecture.md: no upward or sideways import, no cycle in a package.
.venv/bin/lint-imports --no-logo
set +e
# Notebooks replay from the committed cache only: a cache miss fails instead of calling the model.
MEMLAB_CACHE_MODE=read_only .venv/bin/python -m pytest tests notebooks \
    --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
exit "$status"
