#!/usr/bin/env bash
# The main job: install (first time only), then sweep the bundled personas dataset with the
# bundled local model over four configurations and write reports/demo/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
# The demo needs the local model and Jupyter (to open the notebooks after it), not the dev tools.
MEMLAB_EXTRAS=local,notebooks bash scripts/setup.sh
exec .venv/bin/memlab demo "$@"
