"""Writes datasets/procedures.jsonl: owners who teach the assistant how they do a task, step by
step, then ask it to carry the task out in a later session.

Written for memlab. Each owner has three sessions: the first teaches one procedure (one
message per step), the second teaches another, the third is small talk; each procedure is
asked for after the third session by a question that contains one of its triggers.

Run: python datasets/procedures_src/build.py
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

OWNERS = {
    "pia": [
        (
            "release the mobile app",
            ["release"],
            [
                "Bump the version number in the build file",
                "Run the full test suite on CI",
                "Tag the commit with the version",
                "Upload the signed bundle to the store console",
                "Post the changelog in the team channel",
            ],
        ),
        (
            "rotate the API keys",
            ["api keys", "rotate"],
            [
                "Create a new key in the vault",
                "Deploy services with the new key",
                "Revoke the old key after one day",
            ],
        ),
    ],
    "omar": [
        (
            "bake sourdough bread",
            ["sourdough", "bake bread"],
            [
                "Feed the starter the night before",
                "Mix flour water and starter",
                "Fold the dough every thirty minutes",
                "Shape the loaf and proof it overnight",
                "Bake covered at 250 degrees for twenty minutes",
                "Uncover and bake until dark brown",
            ],
        ),
        (
            "clean the espresso machine",
            ["espresso machine", "descale"],
            [
                "Backflush the group head with detergent",
                "Soak the portafilter baskets",
                "Run descaler through the boiler",
                "Flush with clean water twice",
            ],
        ),
    ],
    "lena": [
        (
            "close the monthly books",
            ["monthly books", "month end"],
            [
                "Export the bank statements",
                "Reconcile every account against the ledger",
                "Book the accrued invoices",
                "Send the trial balance to the accountant",
            ],
        ),
        (
            "onboard a new hire",
            ["onboard", "new hire"],
            [
                "Order a laptop two weeks ahead",
                "Create their email account",
                "Book the welcome lunch",
                "Assign a buddy from the team",
                "Schedule the security training",
            ],
        ),
    ],
    "ravi": [
        (
            "restore the database backup",
            ["restore", "database backup"],
            [
                "Stop the application servers",
                "Download the latest snapshot from storage",
                "Restore the snapshot into a fresh instance",
                "Run the integrity checks",
                "Point the servers at the new instance",
                "Start the application servers",
            ],
        ),
        (
            "prepare the quarterly report",
            ["quarterly report"],
            [
                "Pull the revenue numbers from the dashboard",
                "Update the charts in the template",
                "Write the summary paragraph",
                "Send the draft to finance for review",
            ],
        ),
    ],
    "mei": [
        (
            "repot the orchids",
            ["repot", "orchids"],
            [
                "Soak the bark mix for an hour",
                "Remove the orchid from its old pot",
                "Trim dead roots with sterile scissors",
                "Place the orchid in the new pot with bark",
                "Wait a week before watering",
            ],
        ),
        (
            "plan the weekly meals",
            ["weekly meals", "meal plan"],
            [
                "Check what is left in the fridge",
                "Pick five dinners for the week",
                "Write the shopping list by aisle",
                "Order the groceries for Saturday delivery",
            ],
        ),
    ],
    "tomas": [
        (
            "service the bicycle",
            ["service the bike", "bicycle"],
            [
                "Clean the chain with degreaser",
                "Lubricate the chain",
                "Check the brake pads for wear",
                "Inflate the tyres to five bar",
                "Tighten the stem and handlebar bolts",
            ],
        ),
        (
            "publish the newsletter",
            ["newsletter"],
            [
                "Collect the links in the draft document",
                "Write the editorial",
                "Paste everything into the mail template",
                "Send a test mail to myself",
                "Schedule the mailing for Tuesday morning",
            ],
        ),
    ],
    "sara": [
        (
            "file the travel expenses",
            ["travel expenses", "expense report"],
            [
                "Photograph every receipt",
                "Fill in the expense form per day",
                "Attach the receipts to the form",
                "Submit the form to the manager for approval",
            ],
        ),
        (
            "set up a new laptop",
            ["new laptop", "set up a laptop"],
            [
                "Install the system updates",
                "Install the password manager",
                "Restore the dotfiles from the repository",
                "Sign in to the company chat",
                "Enable disk encryption",
            ],
        ),
    ],
    "jonas": [
        (
            "tune the guitar",
            ["tune the guitar", "guitar"],
            [
                "Clip the tuner on the headstock",
                "Tune the low E string first",
                "Tune the remaining strings from low to high",
                "Check the tuning with a chord",
            ],
        ),
        (
            "change the furnace filter",
            ["furnace filter"],
            [
                "Switch the furnace off",
                "Slide out the old filter",
                "Write the date on the new filter",
                "Insert the new filter with the arrow up",
                "Switch the furnace back on",
            ],
        ),
    ],
}

SMALL_TALK = [
    (
        "The weather was lovely this weekend, I went for a long walk.",
        "That sounds refreshing. Anything else on your mind?",
    ),
    ("Nothing much, just saying hi.", "Hi! Enjoy your day."),
]


def _at(start: datetime, seconds: int) -> str:
    return (start + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _teaching(user: str, k: int, proc: tuple[str, list[str], list[str]], start: datetime):
    name, triggers, steps = proc
    messages = [
        {"role": "system", "content": "You are a helpful assistant.", "timestamp": _at(start, 0)},
        {
            "role": "human",
            "content": f"I want you to learn how I {name}, so you can do it for "
            "me next time. I'll go step by step.",
            "timestamp": _at(start, 10),
        },
        {"role": "ai", "content": "Sure, tell me each step in order.", "timestamp": _at(start, 20)},
    ]
    t = 30
    for i, step in enumerate(steps, 1):
        messages.append(
            {"role": "human", "content": f"Step {i}: {step}.", "timestamp": _at(start, t)}
        )
        messages.append(
            {"role": "ai", "content": f"Got it, step {i} noted.", "timestamp": _at(start, t + 5)}
        )
        t += 20
    messages.append(
        {"role": "human", "content": "That's all the steps.", "timestamp": _at(start, t)}
    )
    messages.append(
        {
            "role": "ai",
            "content": f"Thanks, I know how you {name} now.",
            "timestamp": _at(start, t + 5),
        }
    )
    procedure = {"id": f"{user}.proc{k}", "name": name, "steps": steps, "triggers": triggers}
    return {
        "thread_id": f"{user}-{k:02d}",
        "started_at": _at(start, 0),
        "messages": messages,
        "labels": {"procedures": [procedure]},
    }


def _small_talk(user: str, k: int, start: datetime):
    messages = [
        {"role": "system", "content": "You are a helpful assistant.", "timestamp": _at(start, 0)}
    ]
    t = 10
    for human, ai in SMALL_TALK:
        human = f"{user.title()} here. {human}"  # every owner's conversation is their own
        messages.append({"role": "human", "content": human, "timestamp": _at(start, t)})
        messages.append({"role": "ai", "content": ai, "timestamp": _at(start, t + 5)})
        t += 20
    return {
        "thread_id": f"{user}-{k:02d}",
        "started_at": _at(start, 0),
        "messages": messages,
        "labels": {"noise": True},
    }


def owner(user: str, procs: list, first: datetime) -> dict:
    sessions = [
        _teaching(user, 1, procs[0], first),
        _teaching(user, 2, procs[1], first + timedelta(days=9)),
        _small_talk(user, 3, first + timedelta(days=23)),
    ]
    questions = [
        {
            "id": f"{user}.q{k}",
            "question": f"I need to {name} again today. Walk me through it step by step.",
            "category": "procedure",
            "kind": "procedure",
            "after_session": 2,
            "procedure": f"{user}.proc{k}",
        }
        for k, (name, _, _) in enumerate(procs, 1)
    ]
    return {
        "user_id": user,
        "persona": f"Teaches the assistant how they {procs[0][0]} and how they {procs[1][0]}.",
        "language": "en",
        "sessions": sessions,
        "questions": questions,
    }


def main() -> None:
    first = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    lines = [
        json.dumps(owner(user, procs, first + timedelta(days=i)), separators=(",", ":"))
        for i, (user, procs) in enumerate(OWNERS.items())
    ]
    out = Path(__file__).resolve().parents[1] / "procedures.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
