"""Message filtering and conversation formatting (SPEC §1.2, §1.3)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel

from memlab.core.jsondoc.contract import MAX_MESSAGE_CHARS
from memlab.core.pipeline.messages import (
    UPLOAD_BLOCK_RE,
    content_text,
    filter_messages_for_memory,
    format_conversation_for_update,
    has_enough_for_update,
    message_content,
    message_role,
    message_tool_calls,
)


@dataclass
class Msg:
    """A LangChain-like message object (plain dataclass, copied with copy.copy)."""

    type: str
    content: Any
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


class PydMsg(BaseModel):
    """A LangChain-like pydantic message (copied with model_copy)."""

    type: str
    content: Any
    tool_calls: list[dict[str, Any]] = []


UPLOAD = "<uploaded_files>\n- /mnt/uploads/report.pdf (12 KB)\n</uploaded_files>\n"


@pytest.mark.parametrize(
    ("msg", "role"),
    [
        ({"role": "user", "content": "x"}, "human"),
        ({"role": "human", "content": "x"}, "human"),
        ({"role": "assistant", "content": "x"}, "ai"),
        ({"role": "ai", "content": "x"}, "ai"),
        ({"role": "tool", "content": "x"}, "tool"),
        ({"role": "system", "content": "x"}, "system"),
        ({"role": "critic", "content": "x"}, "other"),
        ({"content": "x"}, "other"),
        (Msg("human", "x"), "human"),
        (Msg("ai", "x"), "ai"),
        (Msg("tool", "x"), "tool"),
        (Msg("system", "x"), "system"),
        (Msg("chat", "x"), "other"),
        (object(), "other"),
    ],
)
def test_message_role(msg: Any, role: str) -> None:
    assert message_role(msg) == role


def test_tool_calls_and_content_accessors() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert message_tool_calls({"role": "assistant", "tool_calls": [call]}) == [call]
    assert message_tool_calls({"role": "assistant", "tool_calls": None}) == []
    assert message_tool_calls({"role": "assistant", "function_call": {"name": "f"}}) == [
        {"name": "f"}
    ]
    assert message_tool_calls(Msg("ai", "", [{"name": "f"}])) == [{"name": "f"}]
    assert message_tool_calls(Msg("ai", "hi")) == []
    assert message_content({"role": "user", "content": "a"}) == "a"
    assert message_content(Msg("human", ["a"])) == ["a"]


def test_content_text_keeps_only_text_parts() -> None:
    parts = [
        {"type": "text", "text": "look at"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
        "this chart",
        {"type": "text", "text": "please"},
        {"type": "audio", "text": "not text"},
    ]
    assert content_text(parts) == "look at this chart please"
    assert content_text("plain") == "plain"
    assert content_text(None) == ""
    assert content_text([{"type": "image_url", "image_url": {"url": "u"}}]) == ""


def test_filter_keeps_human_and_final_ai_drops_the_rest() -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Find flights to Lisbon"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function"}]},
        {"role": "tool", "content": "3 flights found", "tool_call_id": "1"},
        {"role": "assistant", "content": "I found three flights."},
    ]
    filtered = filter_messages_for_memory(messages)
    assert filtered == [messages[1], messages[4]]
    assert has_enough_for_update(filtered)


def test_filter_object_messages() -> None:
    messages = [
        Msg("system", "sys"),
        Msg("human", "I prefer window seats"),
        Msg("ai", "", [{"name": "search", "args": {}, "id": "1"}]),
        Msg("tool", "result"),
        Msg("ai", "Noted."),
    ]
    filtered = filter_messages_for_memory(messages)
    assert [m.content for m in filtered] == ["I prefer window seats", "Noted."]


def test_upload_only_human_dropped_with_following_reply() -> None:
    messages = [
        {"role": "user", "content": UPLOAD},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "file read"},
        {"role": "assistant", "content": "I have read report.pdf."},
        {"role": "user", "content": "I live in Porto."},
        {"role": "assistant", "content": "Porto is lovely."},
    ]
    filtered = filter_messages_for_memory(messages)
    assert [m["content"] for m in filtered] == ["I live in Porto.", "Porto is lovely."]


def test_upload_block_stripped_from_dict_without_mutation() -> None:
    original = {"role": "user", "content": UPLOAD + "Summarise the report, I am a CFO."}
    snapshot = copy.deepcopy(original)
    filtered = filter_messages_for_memory(
        [original, {"role": "assistant", "content": "Here is the summary."}]
    )
    assert filtered[0]["content"] == "Summarise the report, I am a CFO."
    assert filtered[0] is not original
    assert original == snapshot
    assert filtered[1]["content"] == "Here is the summary."


def test_upload_block_stripped_from_objects_without_mutation() -> None:
    plain = Msg("human", "Please check " + UPLOAD + "thanks")
    pyd = PydMsg(type="human", content=UPLOAD.upper() + "Keep it short")
    filtered = filter_messages_for_memory([plain, Msg("ai", "ok"), pyd, Msg("ai", "ok")])
    assert filtered[0].content == "Please check thanks"
    assert plain.content.startswith("Please check <uploaded_files>")
    assert isinstance(filtered[2], PydMsg)
    assert filtered[2].content == "Keep it short"
    assert pyd.content.startswith("<UPLOADED_FILES>")


def test_upload_block_in_multimodal_content() -> None:
    image = {"type": "image_url", "image_url": {"url": "u"}}
    only_upload = {"role": "user", "content": [{"type": "text", "text": UPLOAD}, image]}
    mixed = {"role": "user", "content": [{"type": "text", "text": UPLOAD + "My cat"}, image]}
    filtered = filter_messages_for_memory(
        [
            only_upload,
            {"role": "assistant", "content": "Got the files."},
            mixed,
            {"role": "assistant", "content": "Cute cat."},
        ]
    )
    assert len(filtered) == 2
    assert filtered[0]["content"] == [{"type": "text", "text": "My cat"}, image]
    assert mixed["content"][0]["text"].startswith("<uploaded_files>")


def test_upload_skip_is_reset_by_next_human() -> None:
    messages = [
        {"role": "user", "content": UPLOAD},
        {"role": "user", "content": "What does it say?"},
        {"role": "assistant", "content": "It says hello."},
    ]
    filtered = filter_messages_for_memory(messages)
    assert [m["content"] for m in filtered] == ["What does it say?", "It says hello."]


def test_upload_regex_is_non_greedy() -> None:
    text = "<uploaded_files>a</uploaded_files>keep<uploaded_files>b</uploaded_files>"
    assert UPLOAD_BLOCK_RE.sub("", text) == "keep"


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "hi"}],
        [{"role": "assistant", "content": "hi"}],
        [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}],
        [],
    ],
)
def test_has_enough_for_update_needs_human_and_ai(messages: list[Any]) -> None:
    assert not has_enough_for_update(filter_messages_for_memory(messages))


def test_format_conversation_basic() -> None:
    text = format_conversation_for_update(
        [
            {"role": "user", "content": "I moved to Berlin."},
            {"role": "assistant", "content": "Welcome to Berlin!"},
            Msg("human", "Thanks"),
        ]
    )
    assert text == "User: I moved to Berlin.\n\nAssistant: Welcome to Berlin!\n\nUser: Thanks"


def test_format_conversation_cuts_long_messages() -> None:
    long_text = "x" * (MAX_MESSAGE_CHARS + 1)
    exact = "y" * MAX_MESSAGE_CHARS
    text = format_conversation_for_update(
        [{"role": "user", "content": long_text}, {"role": "assistant", "content": exact}]
    )
    user_line, ai_line = text.split("\n\n")
    assert user_line == "User: " + "x" * MAX_MESSAGE_CHARS + "..."
    assert ai_line == "Assistant: " + exact


def test_format_conversation_multimodal_and_dropped_roles() -> None:
    text = format_conversation_for_update(
        [
            {"role": "system", "content": "system prompt"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is"},
                    {"type": "image_url", "image_url": {"url": "u"}},
                    {"type": "text", "text": "in this picture?"},
                ],
            },
            {"role": "tool", "content": "tool output"},
            Msg("ai", "A dog."),
        ]
    )
    assert text == "User: What is in this picture?\n\nAssistant: A dog."


def test_format_conversation_empty() -> None:
    assert format_conversation_for_update([]) == ""
    assert format_conversation_for_update([{"role": "system", "content": "s"}]) == ""
    only_image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]
    assert format_conversation_for_update(only_image) == ""
    assert format_conversation_for_update([{"role": "assistant", "content": "  "}]) == ""
