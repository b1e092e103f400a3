"""LoCoMo importer against the shared copy of locomo10.json (not part of the repository)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memlab.datasets.loader import load_dataset
from memlab.datasets.locomo import (
    LocomoFormatError,
    convert_conversation,
    import_locomo,
    parse_locomo_datetime,
)
from memlab.datasets.models import ImagePart, Owner, TextPart

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo10.json"

needs_locomo = pytest.mark.skipif(
    not LOCOMO.is_file(),
    reason=f"LoCoMo source not available at {LOCOMO} (CC BY-NC 4.0, never committed); "
    "copy data/locomo10.json from github.com/snap-research/LoCoMo there to run this test",
)


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(LOCOMO.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Owner]]:
    dest = tmp_path_factory.mktemp("locomo") / "locomo.jsonl"
    summary = import_locomo(LOCOMO, dest)
    assert summary.owners == 20
    # Loading re-validates every line: schema, models and cross-field checks.
    return dest, load_dataset(dest, collect=True)


def _session_keys(conv: dict[str, Any]) -> list[str]:
    return [k for k, v in conv.items() if re.fullmatch(r"session_\d+", k) and v]


@needs_locomo
def test_ten_conversations_give_twenty_owners(
    raw: list[dict[str, Any]], imported: tuple[Path, list[Owner]]
) -> None:
    _, owners = imported
    assert len(raw) == 10
    assert len(owners) == 20
    expected_ids = [
        f"{s['sample_id']}.{s['conversation'][k]}" for s in raw for k in ("speaker_a", "speaker_b")
    ]
    assert [o.user_id for o in owners] == expected_ids


@needs_locomo
def test_session_and_observation_counts_match_source(
    raw: list[dict[str, Any]], imported: tuple[Path, list[Owner]]
) -> None:
    _, owners = imported
    by_id = {o.user_id: o for o in owners}
    for sample in raw:
        conv = sample["conversation"]
        n_sessions = len(_session_keys(conv))
        n_turns = sum(len(conv[k]) for k in _session_keys(conv))
        for speaker in (conv["speaker_a"], conv["speaker_b"]):
            owner = by_id[f"{sample['sample_id']}.{speaker}"]
            assert len(owner.sessions) == n_sessions
            assert sum(len(s.messages) for s in owner.sessions) == n_turns
            n_obs = sum(len(obs.get(speaker, [])) for obs in sample["observation"].values())
            assert sum(len(s.labels.facts) for s in owner.sessions) == n_obs
            n_own_turns = sum(
                1 for k in _session_keys(conv) for t in conv[k] if t["speaker"] == speaker
            )
            assert sum(m.role == "human" for s in owner.sessions for m in s.messages) == n_own_turns
    total_obs = sum(len(v) for s in raw for o in s["observation"].values() for v in o.values())
    assert sum(len(s.labels.facts) for o in owners for s in o.sessions) == total_obs


@needs_locomo
def test_facts_carry_evidence_and_ids(imported: tuple[Path, list[Owner]]) -> None:
    _, owners = imported
    fact = owners[0].sessions[0].labels.facts[0]
    assert fact.id == "conv-26/Caroline/s1/o1"
    assert fact.category == "context"
    assert fact.evidence == ["D1:3"]
    assert owners[0].sessions[0].thread_id == "conv-26/session_1"
    every = [f for o in owners for s in o.sessions for f in s.labels.facts]
    assert all(f.evidence and all(re.fullmatch(r"D\d+:\d+", e) for e in f.evidence) for f in every)


@needs_locomo
def test_image_turns_become_multimodal_with_caption(
    raw: list[dict[str, Any]], imported: tuple[Path, list[Owner]]
) -> None:
    _, owners = imported
    turns = [t for k in _session_keys(raw[0]["conversation"]) for t in raw[0]["conversation"][k]]
    messages = [m for s in owners[0].sessions for m in s.messages]
    assert len(turns) == len(messages)
    image_turns = 0
    for turn, msg in zip(turns, messages, strict=True):
        if "blip_caption" not in turn:
            assert msg.content == turn["text"]
            continue
        image_turns += 1
        assert isinstance(msg.content, list)
        images = [p for p in msg.content if isinstance(p, ImagePart)]
        assert images and all(p.caption == turn["blip_caption"] for p in images)
        if turn.get("img_url"):
            assert [p.image_url.url for p in images] == turn["img_url"]
        texts = [p.text for p in msg.content if isinstance(p, TextPart)]
        assert f"[image: {turn['blip_caption']}]" in texts
        assert msg.to_pipeline_message()["content"][-1]["type"] == "text"
    assert image_turns > 0


@needs_locomo
def test_timestamps_follow_session_dates(
    raw: list[dict[str, Any]], imported: tuple[Path, list[Owner]]
) -> None:
    _, owners = imported
    conv = raw[0]["conversation"]
    first = owners[0].sessions[0]
    assert first.started_at == parse_locomo_datetime(conv["session_1_date_time"])
    assert first.started_at.isoformat() == "2023-05-08T13:56:00+00:00"
    for owner in owners:
        stamps = [m.timestamp for s in owner.sessions for m in s.messages]
        assert stamps == sorted(stamps)
        assert all(t.utcoffset() is not None for t in stamps)


@needs_locomo
def test_output_file_is_jsonl_with_utc_z(imported: tuple[Path, list[Owner]]) -> None:
    dest, _ = imported
    lines = dest.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20
    assert '"started_at":"2023-05-08T13:56:00Z"' in lines[0]


def test_parse_locomo_datetime_variants() -> None:
    assert parse_locomo_datetime("12:48 am on 1 February, 2023").isoformat() == (
        "2023-02-01T00:48:00+00:00"
    )
    assert parse_locomo_datetime("10:04 pm on 20 Jan, 2023").hour == 22
    with pytest.raises(LocomoFormatError, match="unrecognized"):
        parse_locomo_datetime("yesterday")


def test_convert_small_sample_without_shared_file() -> None:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "9:00 am on 2 March, 2024",
            "session_1": [
                {"speaker": "Bob", "dia_id": "D1:1", "text": "Hi Ann"},
                {"speaker": "Ann", "dia_id": "D1:2", "text": "", "blip_caption": "a red bike"},
            ],
            "session_2_date_time": "9:00 am on 3 March, 2024",
        },
        "observation": {"session_1_observation": {"Ann": [["Ann has a red bike", "D1:2, D1:1"]]}},
    }
    ann, bob = convert_conversation(sample)
    assert [m.role for m in ann.sessions[0].messages] == ["ai", "human"]
    assert [m.role for m in bob.sessions[0].messages] == ["human", "ai"]
    assert ann.sessions[0].labels.facts[0].evidence == ["D1:2", "D1:1"]
    assert bob.sessions[0].labels.facts == []
    image = ann.sessions[0].messages[1]
    assert isinstance(image.content, list)
    assert image.images[0].image_url.url == "locomo:conv-x/D1:2"
    assert image.text == "[image: a red bike]"
    assert ann.sessions[0].labels.tags == ["multimodal"]
    assert ann.consistency_problems() == []
