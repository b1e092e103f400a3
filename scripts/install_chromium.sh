#!/usr/bin/env bash
# Install headless Chromium (Debian package "chromium") for the report browser test.
# Idempotent: does nothing when chromium is already on PATH. Needs root (or sudo) and apt.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    echo "chromium already installed: $(command -v chromium)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    else
        echo "install_chromium.sh: run as root (or install sudo) to install chromium" >&2
        exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_chromium.sh: apt-get not found; install Chromium with your package manager" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium </dev/null
echo "installed $(chromium --version)"
