"""What this machine can hold: CPUs and memory, for numeric options that scale with them.

Options that multiply work or memory (worker processes of a local Dask cluster, bootstrap
resamples) are checked against :func:`cpu_count` and :func:`memory_budget` before anything
starts, so a typo such as ``dask-local:256`` or ``--resamples 1000000000`` is an error that
says what fits instead of a machine that swaps.
"""

from __future__ import annotations

import os

__all__ = ["available_memory", "cpu_count", "memory_budget"]

_FALLBACK_MEMORY = 2 * 1024**3  # when the platform does not say


def cpu_count() -> int:
    """CPUs this process may run on (its affinity where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available_memory() -> int:
    """Bytes of memory available to new allocations (``MemAvailable`` on Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return _FALLBACK_MEMORY


def memory_budget(share: float = 0.25) -> int:
    """Bytes one computation may use: ``share`` of the available memory."""
    return int(available_memory() * share)
