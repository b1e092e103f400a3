"""The walk of one sweep: which memlab modules ``memlab run`` visits, and how often.

Runs a tiny simulated sweep with memory QA (``memlab run personas --backend sim:careful --qa
--max-owners 1``, into a temporary folder) under a profile hook and counts the distinct
cross-module calls: a *stop* is one (calling function, called function) pair whose modules
differ, both inside memlab; a module's *visits* are the stops that enter it, and its
*callers* the distinct modules those stops come from. Distinct pairs, not calls, so the count
does not grow with the number of owners, sessions or questions.

    python scripts/sweep_walk.py [--top 10]

Prints the stops, the modules (files) visited, and the most visited modules.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any


def _walk(argv: list[str]) -> set[tuple[str, str, str, str]]:
    from memlab.cli.main import main

    edges: set[tuple[str, str, str, str]] = set()

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        caller_frame = frame.f_back
        if caller_frame is None or not callee.startswith("memlab"):
            return
        caller = caller_frame.f_globals.get("__name__", "")
        if caller.startswith("memlab") and caller != callee:
            edges.add((caller, caller_frame.f_code.co_name, callee, frame.f_code.co_name))

    sys.setprofile(hook)
    try:
        code = main(argv)
    finally:
        sys.setprofile(None)
    if code != 0:
        raise SystemExit(f"memlab run exited with {code}")
    return edges


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10, help="modules to list (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["run", "personas", "--backend", "sim:careful", "--qa", "--max-owners", "1"]
        argv += ["--runs-dir", str(Path(tmp) / "runs"), "--no-progress"]
        argv += ["--cache-dir", str(Path(tmp) / "cache")]
        edges = _walk(argv)
    visits = collections.Counter(callee for _c, _f, callee, _g in edges)
    modules = {m for c, _f, callee, _g in edges for m in (c, callee)}
    callers = collections.Counter(callee for _c, callee in {(c, g) for c, _f, g, _h in edges})
    print(f"stops: {len(edges)}  modules: {len(modules)}")
    print("visits (function pairs)  callers (modules)  module")
    for module, count in visits.most_common(args.top):
        print(f"{count:23d}  {callers[module]:17d}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
