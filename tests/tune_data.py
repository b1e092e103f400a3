"""Inputs of ``memlab tune`` tests: a dataset of many owners, a tune grid, profile files.

The bundled personas are copied under new owner ids (each copy's messages tagged, so the
simulated model draws each copy apart): enough owners for train, validation and held-out test.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from memlab.datasets.registry import resolve_dataset

__all__ = ["COPIES", "SELF_ONLY", "declared", "owners_dataset", "tune_grid"]

ROOT = Path(__file__).resolve().parent.parent
SELF_ONLY = ROOT / "notebooks" / "prompts" / "self_only.txt"
COPIES = 3


def declared(name: str) -> dict[str, Any]:
    """A bundled simulated profile's YAML, as written."""
    path = resources.files("memlab.simulation") / "profiles" / f"{name}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def owners_dataset(folder: Path, copies: int = COPIES) -> tuple[Path, list[str]]:
    """The personas copied ``copies`` times as ``folder/people.jsonl``, and its owners."""
    rows = [
        json.loads(line) for line in resolve_dataset("personas").read_text("utf-8").splitlines()
    ]
    out, owners = [], []
    for k in range(copies):
        for row in rows:
            copy = json.loads(json.dumps(row))
            copy["user_id"] = f"{row['user_id']}_{k}"
            owners.append(copy["user_id"])
            for session in copy["sessions"]:
                for message in session["messages"]:
                    if isinstance(message["content"], str):
                        message["content"] = f"({k}) {message['content']}"
            out.append(json.dumps(copy))
    path = folder / "people.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path, owners


def tune_grid(
    folder: Path, tune_key: dict[str, Any], backend: str = "sim:attentive", **base: Any
) -> Path:
    """``folder/tune.yaml`` over ``people.jsonl`` (written by :func:`owners_dataset`), with
    ``self_only.txt`` beside it and the split 0.4/0.2/0.4 (seed 3) unless ``tune_key`` sets
    one."""
    (folder / "self_only.txt").write_text(SELF_ONLY.read_text("utf-8"), encoding="utf-8")
    grid = {
        "name": "search",
        "dataset": "people.jsonl",
        "base": {"backend": backend, **base},
        "tune": {"split": {"train": 0.4, "validation": 0.2, "test": 0.4, "seed": 3}, **tune_key},
    }
    path = folder / "tune.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    return path
