"""A simulated model with known behaviour: the test instrument that metrics are checked against.

``sim:PROFILE`` (``sim:careful``, ``sim:sloppy``, ``sim:chatty`` or ``sim:/path/profile.yaml``)
builds a :class:`SimulatedBackend` for the dataset it replays. For each prompt it finds the
session whose conversation the prompt holds (and how far into it the conversation goes) and
the current memory (fact ids and contents), and answers as the profile declares
(:mod:`memlab.simulation.profile`):

- Only the update that sees the session up to its last agent run (the session's *final*
  update) proposes anything; earlier updates of a session return the minimal reply.
- Each gold fact revealed in the session is proposed with ``propose_rate``, in a wording drawn
  from ``wording``, with a confidence drawn from ``confidence``.
- Each gold fact stored in an original wording (and not yet restated) is proposed again,
  reworded (:func:`~memlab.simulation.fact_texts.restated`), with ``restate_rate``.
- ``invent_rate`` invented facts per final update, from a pool that states no gold fact, with
  confidences from ``invented_confidence``.
- For each gold fact the session retracts, the ids of the stored facts that state it (in any
  wording the model uses) are removed with ``remove_retracted``.
- Each ``must_not_store`` string of the session is proposed as a fact with ``leak_rate``.
- Every reply, final or not, is broken with the rate of each failure category.

A profile with ``prompt_effects`` reads the update prompt's template: the rates above are
those of :meth:`SimProfile.for_template <memlab.simulation.profile_model.SimProfile.for_template>`
for the template's own text, which is the prompt with the conversation found in it and the
memory (the JSON object with ``facts`` outside the conversation) put back as their
placeholders. Text in the conversation or the memory therefore never triggers an effect, and
the text matched is the variant's template byte for byte, so the SHA-256 recorded per template
(:meth:`SimulatedBackend.prompt_effects`, :attr:`SimDecision.effects`) is the one a lane
records for its prompt. Profiles without effects ignore the prompt's text
(:attr:`SimulatedBackend.reads_prompts`).

The model records where every wording it proposes came from (:meth:`SimulatedBackend.origins`:
the gold fact, ``invented`` or ``leak``): the truth that metrics and matchers are checked
against (:class:`~memlab.simulation.provenance.ProvenanceMatcher`).

Prompts that ask a question of the dataset, or ask to grade an answer, are answered and judged
as the profile's ``qa`` section declares (:mod:`memlab.simulation.qa_replies`; :meth:`decide_qa`
gives the provenance). Prompts of the tiered memory's calls (session summary, importance,
compression) are answered as its ``tiered`` section declares (:mod:`memlab.simulation.tiered`;
:meth:`decide_tiered`), and the wordings they keep are recorded like proposals. The
procedural memory's ``procedures`` call is answered as its ``procedural`` section declares
(:mod:`memlab.simulation.procedural`; :meth:`decide_procedures` gives the provenance).

Every random choice is a hash of the backend seed, the request seed, the owner and what the
choice is about (the gold fact id for fact decisions, the thread and how much of it the
prompt holds for reply-level decisions), never a global RNG: the same prompt gives the same
reply, and lanes that differ only in merge policy see the same model decisions. A profile with
``draws: independent`` mixes its own content (and, for update decisions, the update template)
into every draw, so a candidate lane draws apart from its baseline instead of sharing its
draws (:mod:`memlab.simulation.profile`).

Lanes using it are labelled "simulated" in tables, charts and reports (its backend entry
declares it simulated, :mod:`memlab.simulation.plugin`); it is not a model and its numbers say
nothing about any model.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.core.jsondoc.contract import minimal_update
from memlab.core.jsondoc.parsing import FailureCategory
from memlab.core.pipeline.llm import BackendError, Completion, CompletionRequest
from memlab.core.pipeline.messages import filter_messages_for_memory, format_conversation_for_update
from memlab.qa.qa_prompts import JudgePrompt
from memlab.simulation.fact_texts import INVENTED_FACTS, leaked, restated, worded, wordings
from memlab.simulation.procedural import ProcedureAnswer, ProceduresDecision, SimProcedural
from memlab.simulation.profile import load_profile
from memlab.simulation.profile_model import SimProceduralProfile, SimProfile, SimTieredProfile
from memlab.simulation.profile_model import uniform as _uniform
from memlab.simulation.qa_replies import AnswerDecision, JudgeDecision, KnownVerdict, SimQA
from memlab.simulation.replies import Breakage, broken_reply
from memlab.simulation.tiered import SimTiered, TieredDecision

if TYPE_CHECKING:  # importing memlab.datasets loads its models; the core must stay light
    from memlab.datasets.models import Owner, Session

__all__ = ["SimDecision", "SimulatedBackend"]

_DECODER = json.JSONDecoder()
Span = tuple[int, int] | None
"""Where a part of a prompt is (start, end), or None when the prompt lacks it."""


@dataclass(frozen=True, eq=False)  # hashed by identity: an index key
class _SessionView:
    owner: Owner
    index: int
    session: Session
    blocks: tuple[str, ...]
    """The conversation paragraphs the pipeline shows up to the session's last agent run."""


@dataclass
class SimDecision:
    """What the simulated model decided for one prompt (the known truth of its reply).

    Attributes:
        user_id, thread_id, session_index: The session the prompt belongs to.
        final: True for the update that sees the session up to its last agent run.
        failure: The injected reply failure, or None for a well-formed reply.
        new_facts: Proposed facts; each has ``content``, ``category``, ``confidence`` and
            ``kind`` (``gold``, ``restated``, ``invented`` or ``leak``) and ``source`` (the gold
            fact id, the must-not-store string or the invented text).
        remove: Fact ids to remove.
        update: The contract object behind the reply (before any failure is applied).
        template_sha256: SHA-256 of the update prompt's own text (the prompt with the
            conversation and memory put back as placeholders: the variant's template).
        effects: Labels of the profile's prompt effects that applied to it, in order.
    """

    user_id: str
    thread_id: str
    session_index: int
    final: bool
    failure: FailureCategory | None
    new_facts: list[dict[str, Any]] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    update: dict[str, Any] = field(default_factory=dict)
    template_sha256: str = ""
    effects: tuple[str, ...] = ()


class SimulatedBackend:
    """The known-truth simulated model for one dataset (see the module docstring).

    Args:
        profile: A :class:`SimProfile`, a built-in profile name or a YAML profile path.
        dataset: The dataset the sweep replays (path, bundled name, or loaded owners).
        seed: Mixed into every draw with the request's seed (repeated samples differ).
        judges: Judge prompts whose prompts it grades (default: the built-in ones).
        calibration: Graded triples whose judge prompts it grades by their known verdict
            (:class:`~memlab.simulation.qa_replies.KnownVerdict`; ``memlab judge audit`` passes the
            calibration set, with ``dataset=[]``).
    """

    name = "sim"

    def __init__(
        self,
        profile: SimProfile | str | Path,
        *,
        dataset: str | Path | Sequence[Owner],
        seed: int = 0,
        judges: Sequence[JudgePrompt] | None = None,
        calibration: Sequence[KnownVerdict] = (),
    ) -> None:
        self.profile = profile if isinstance(profile, SimProfile) else load_profile(profile)
        self.seed = seed
        # What every draw starts with: the seed alone when draws are coupled (the default,
        # unchanged), the seed and the profile's content when they are independent.
        self._draw_seed: int | str = seed
        if self.profile.draws == "independent":
            self._draw_seed = f"{seed}/{self.identity()['profile_sha256'][:16]}"
        owners = _load_owners(dataset)
        self._qa = SimQA(
            owners, self.profile.qa, self._draw_seed, judges, calibration, self.profile.procedural
        )
        self._views = [
            _SessionView(owner, i, session, _blocks(session))
            for owner in owners
            for i, session in enumerate(owner.sessions)
        ]
        self._views = [v for v in self._views if v.blocks]
        self._index = _SessionIndex(self._views)
        self._wordings = {owner.user_id: _wording_index(owner) for owner in owners}
        self.gold_facts: dict[str, str] = {
            fact.id: fact.content
            for owner in owners
            for session in owner.sessions
            for fact in session.labels.facts
        }
        """Every gold fact of the dataset: id -> content."""
        self._origins: dict[str, set[str]] = {}
        # (template SHA-256, owner or "" when no effect depends on the owner) -> in force
        self._templates: dict[tuple[str, str], tuple[SimProfile, tuple[str, ...]]] = {}
        self._lock = threading.Lock()
        self._tiered = SimTiered(
            self.profile,
            ((v.owner.user_id, v.index, v.session.labels.facts, v.blocks) for v in self._views),
            self._draw_seed,
            lambda content, gold_id: self._record(content, "gold", gold_id),
            self.origins,
        )
        self._procedural = SimProcedural(
            self.profile,
            (
                (v.owner.user_id, v.index, v.session.labels.procedures, v.blocks)
                for v in self._views
            ),
            seed,
        )

    @property
    def reads_prompts(self) -> bool:
        """Whether the update prompt's text changes its replies (its profile declares prompt
        effects); the default profiles answer every prompt variant alike."""
        return self.profile.reads_prompts

    @property
    def model(self) -> str:
        """``simulated-<profile name>``."""
        return f"simulated-{self.profile.name}"

    def __repr__(self) -> str:
        return f"SimulatedBackend(profile={self.profile.name!r}, seed={self.seed})"

    def identity(self) -> dict[str, Any]:
        """The behaviour, not only its name: an edited profile file is another model."""
        dumped = self.profile.model_dump(mode="json")
        if self.profile.tiered == SimTieredProfile():
            del dumped["tiered"]  # profiles from before the tiered calls keep their identity
        if self.profile.procedural == SimProceduralProfile():
            del dumped["procedural"]  # and those from before the procedures call
        if not self.profile.prompt_effects:
            del dumped["prompt_effects"]  # and those from before prompt effects
        for effect in dumped.get("prompt_effects", ()):
            if effect.get("owners") is None:
                del effect["owners"]  # and effects for every owner, from before owner limits
        if self.profile.draws == "coupled":
            del dumped["draws"]  # and those from before the design was declared
        profile = json.dumps(dumped, sort_keys=True)
        return {
            "simulated": True,
            "profile_sha256": hashlib.sha256(profile.encode("utf-8")).hexdigest(),
            "seed": self.seed,
        }

    def origins(self, content: str) -> frozenset[str]:
        """Where the wording ``content`` came from, as recorded when the model proposed it:
        gold fact ids (a restatement counts as the fact it restates), ``"invented"`` or
        ``"leak"``; empty when the model never proposed it."""
        with self._lock:
            return frozenset(self._origins.get(_key(content), ()))

    def _record(self, content: str, kind: str, source: str) -> None:
        origin = source if kind in ("gold", "restated") else kind
        with self._lock:
            self._origins.setdefault(_key(content), set()).add(origin)

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        qa = self._qa.decide(prompt, request.params.seed, request.about)
        tiered = self._tiered.decide(prompt, request.params.seed) if qa is None else None
        learned = None
        if qa is None and tiered is None:
            learned = self._procedural.decide(prompt, request.params.seed)
        if qa is not None:
            text, finish = qa.text, "stop"
        elif tiered is not None:
            text, finish = self._tiered.render(tiered)
        elif learned is not None:
            text, finish = self._procedural.render(learned)
        else:
            text, finish = _render(self.decide(prompt, request.params.seed))
        return Completion(
            text=text,
            prompt_tokens=max(1, len(prompt) // 4),
            completion_tokens=len(text) // 4,
            latency_s=0.0,
            finish_reason=finish,
            model=self.model,
            backend=self.name,
        )

    # ------------------------------------------------------------------ decisions

    def decide_qa(
        self, prompt: str, request_seed: int | None = 0, about: tuple[str, int] | None = None
    ) -> AnswerDecision | JudgeDecision | ProcedureAnswer | None:
        """The answer or verdict for a QA prompt with its provenance (``about``: the owner and
        session an answer request names; a procedure question's answer is a
        :class:`~memlab.simulation.procedural.ProcedureAnswer`); None for other prompts."""
        return self._qa.decide(prompt, request_seed, about)

    def decide_tiered(self, prompt: str, request_seed: int | None = 0) -> TieredDecision | None:
        """The decision for a tiered memory call with its provenance; None for other prompts."""
        return self._tiered.decide(prompt, request_seed)

    def decide_procedures(
        self, prompt: str, request_seed: int | None = 0
    ) -> ProceduresDecision | None:
        """The decision for a ``procedures`` call with its provenance; None for other prompts."""
        return self._procedural.decide(prompt, request_seed)

    def decide(self, prompt: str, request_seed: int | None = 0) -> SimDecision:
        """Decide the reply to ``prompt`` (what :meth:`complete` renders as text).

        Raises:
            BackendError: The prompt holds no conversation of the dataset.
        """
        view, seen, conversation = self._find_session(prompt)
        facts, memory = _memory(prompt, conversation)
        template = _template(prompt, conversation, memory)
        owner = view.owner
        profile, effects = self._for_template(template, owner.user_id)
        template_sha256 = hashlib.sha256(template.encode("utf-8")).hexdigest()
        draw_seed = self._draw_seed
        if self.profile.draws == "independent":
            draw_seed = f"{draw_seed}/{template_sha256[:16]}"
        base = (draw_seed, request_seed, owner.user_id)
        call = (*base, view.session.thread_id, seen)
        decision = SimDecision(
            user_id=owner.user_id,
            thread_id=view.session.thread_id,
            session_index=view.index,
            final=seen == len(view.blocks),
            failure=profile.pick_failure(_uniform(*call, "failure")),
            update=minimal_update(),
            template_sha256=template_sha256,
            effects=effects,
        )
        if decision.final:
            self._final_update(decision, profile, view, facts, base)
        return decision

    def _for_template(self, template: str, owner: str) -> tuple[SimProfile, tuple[str, ...]]:
        """The profile in force for update prompts of ``template`` sent for ``owner`` and the
        effects applied (recorded by the template's SHA-256, see :meth:`prompt_effects`)."""
        sha = hashlib.sha256(template.encode("utf-8")).hexdigest()
        key = (sha, owner if self.profile.owner_effects else "")
        with self._lock:
            known = self._templates.get(key)
        if known is None:
            known = self.profile.for_template(template, owner)
            with self._lock:
                self._templates[key] = known
        return known

    def prompt_effects(self) -> dict[str, tuple[str, ...]]:
        """Every update template the model was sent (its SHA-256, which is the prompt
        variant's for a rendered variant) -> the labels of the profile's prompt effects
        applied to it, in order (empty: the declared rates as they are); with effects limited
        to some owners, those applied to any owner's prompts."""
        found: dict[str, list[str]] = {}
        with self._lock:
            for (sha, _owner), (_profile, effects) in self._templates.items():
                labels = found.setdefault(sha, [])
                labels += [label for label in effects if label not in labels]
        order = [effect.label for effect in self.profile.prompt_effects]
        return {sha: tuple(sorted(labels, key=order.index)) for sha, labels in found.items()}

    def _final_update(
        self,
        decision: SimDecision,
        profile: SimProfile,
        view: _SessionView,
        facts: list[dict[str, Any]],
        base: tuple[object, ...],
    ) -> None:
        labels = view.session.labels
        wordings = self._wordings[view.owner.user_id]
        call = (*base, view.session.thread_id)
        stored: dict[str, list[dict[str, Any]]] = {}  # gold id -> stored facts stating it
        for fact in facts:
            origin = wordings.get(_key(str(fact.get("content", ""))))
            if origin is not None:
                stored.setdefault(origin[0], []).append(fact)
        proposals = decision.new_facts

        def propose(content: str, category: str, u: float, kind: str, source: str) -> None:
            confidence = profile.pick_confidence(u, invented=kind == "invented")
            self._record(content, kind, source)
            proposals.append(
                {
                    "content": content,
                    "category": category,
                    "confidence": confidence,
                    "kind": kind,
                    "source": source,
                }
            )

        for gold in labels.facts:
            if gold.id in stored or _uniform(*base, gold.id, "propose") >= profile.propose_rate:
                continue
            style = profile.pick_wording(_uniform(*base, gold.id, "wording"))
            u = _uniform(*base, gold.id, "confidence")
            propose(worded(gold.content, style), gold.category, u, "gold", gold.id)
        for gold_id, held in stored.items():
            if gold_id in labels.retracts:
                continue  # the session says it is wrong: not restated
            originals = [f for f in held if wordings[_key(str(f["content"]))][1] == "original"]
            if not originals or len(originals) < len(held):
                continue  # nothing to restate, or already restated
            if _uniform(*call, gold_id, "restate") < profile.restate_rate:
                u = _uniform(*call, gold_id, "restate-confidence")
                category = str(originals[0].get("category") or "context")
                propose(restated(str(originals[0]["content"])), category, u, "restated", gold_id)
        pool = _invention_pool(view.owner.user_id, self._draw_seed)
        per_update = math.ceil(profile.invent_rate)
        for j in range(profile.inventions(_uniform(*call, "invent"))):
            text = pool[(view.index * per_update + j) % len(pool)]
            propose(text, "preference", _uniform(*call, "invent-confidence", j), "invented", text)
        for k, secret in enumerate(labels.must_not_store):
            if _uniform(*call, "leak", k) < profile.leak_rate:
                u = _uniform(*call, "leak-confidence", k)
                propose(leaked(secret), "context", u, "leak", secret)
        for gold_id in labels.retracts:
            if gold_id in stored and _uniform(*base, gold_id, "remove") < profile.remove_retracted:
                decision.remove.extend(str(f.get("id")) for f in stored[gold_id])
        _fill_update(decision, view)

    def _find_session(self, prompt: str) -> tuple[_SessionView, int, tuple[int, int]]:
        """The session whose conversation the prompt holds, how many paragraphs of it, and
        where in the prompt they are (start, end)."""
        best = self._index.find(prompt)
        if not best:
            raise BackendError(
                "simulated model: the prompt holds no conversation of its dataset; build the "
                "'sim:' backend with the dataset the sweep replays (option dataset=...)"
            )
        top = max(seen for seen, _pos in best.values())
        matches = [view for view, (seen, _pos) in best.items() if seen == top]
        if len(matches) > 1:
            names = ", ".join(f"{v.owner.user_id}/{v.session.thread_id}" for v in matches[:3])
            more = f" and {len(matches) - 3} more" if len(matches) > 3 else ""
            raise BackendError(
                f"simulated model: the prompt matches {len(matches)} sessions ({names}{more}); "
                "give sessions distinct conversations"
            )
        view = matches[0]
        start = best[view][1]
        return view, top, (start, start + len("\n\n".join(view.blocks[:top])))


class _SessionIndex:
    """Finds the sessions whose conversation a prompt holds, in time linear in the prompt.

    Sessions are indexed by the start of their first paragraph; a prompt is only looked up
    where a paragraph can start (at a role label such as ``User: ``), instead of searching it
    for every session of the dataset.
    """

    _KEY = 64

    def __init__(self, views: Sequence[_SessionView]) -> None:
        self._heads: dict[str, list[_SessionView]] = {}
        for view in views:
            self._heads.setdefault(view.blocks[0][: self._KEY], []).append(view)
        self._lengths = sorted({len(head) for head in self._heads})
        self._labels = sorted({view.blocks[0].split(": ", 1)[0] + ": " for view in views})

    def find(self, prompt: str) -> dict[_SessionView, tuple[int, int]]:
        """Each session found in ``prompt`` -> the paragraphs of it the prompt holds, and
        where they start (the first place holding the most)."""
        found: dict[_SessionView, tuple[int, int]] = {}
        for label in self._labels:
            pos = prompt.find(label)
            while pos != -1:
                for length in self._lengths:
                    for view in self._heads.get(prompt[pos : pos + length], ()):
                        seen = _paragraphs_at(prompt, pos, view.blocks)
                        if seen > found.get(view, (0, 0))[0]:
                            found[view] = (seen, pos)
                pos = prompt.find(label, pos + 1)
        return found


def _paragraphs_at(prompt: str, pos: int, blocks: tuple[str, ...]) -> int:
    """How many of ``blocks`` (joined by blank lines) ``prompt`` holds from ``pos`` on."""
    if not prompt.startswith(blocks[0], pos):
        return 0
    end, seen = pos + len(blocks[0]), 1
    while seen < len(blocks) and prompt.startswith("\n\n" + blocks[seen], end):
        end += 2 + len(blocks[seen])
        seen += 1
    return seen


# ---------------------------------------------------------------------- helpers


def _load_owners(dataset: str | Path | Sequence[Owner]) -> list[Owner]:
    if isinstance(dataset, str | Path):
        from memlab.datasets.loader import load_dataset
        from memlab.datasets.registry import resolve_dataset

        return load_dataset(resolve_dataset(dataset))
    return list(dataset)


def _blocks(session: Session) -> tuple[str, ...]:
    """Paragraphs of the conversation the pipeline formats at the session's last agent run."""
    messages = session.messages
    last = max(
        (i for i, m in enumerate(messages) if m.role == "ai" and not m.tool_calls), default=-1
    )
    if last < 0:
        return ()
    kept = filter_messages_for_memory([m.to_pipeline_message() for m in messages[: last + 1]])
    blocks = (format_conversation_for_update([m]) for m in kept)
    return tuple(b for b in blocks if b)


def _key(content: str) -> str:
    return content.strip().casefold()


def _wording_index(owner: Owner) -> dict[str, tuple[str, str]]:
    """Every wording the model may store for a gold fact -> (gold id, original|restated)."""
    index: dict[str, tuple[str, str]] = {}
    for session in owner.sessions:
        for gold in session.labels.facts:
            for text, kind in wordings(gold.content).items():
                index.setdefault(_key(text), (gold.id, kind))
    return index


def _invention_pool(user_id: str, seed: int | str) -> list[str]:
    """The invented facts in an owner-specific order (each used once per owner)."""
    return sorted(INVENTED_FACTS, key=lambda text: _uniform(seed, user_id, "pool", text))


def _memory(prompt: str, conversation: tuple[int, int]) -> tuple[list[dict[str, Any]], Span]:
    """The ``facts`` of the memory (the first JSON object in the prompt, outside the
    conversation, that has them) and where the object is; no facts and None without one."""
    start = prompt.find("{")
    while start != -1:
        if conversation[0] <= start < conversation[1]:
            start = prompt.find("{", conversation[1])
            continue
        try:
            value, end = _DECODER.raw_decode(prompt, start)
        except ValueError:
            start = prompt.find("{", start + 1)
            continue
        if isinstance(value, dict) and isinstance(value.get("facts"), list):
            return [f for f in value["facts"] if isinstance(f, dict)], (start, end)
        start = prompt.find("{", start + 1)
    return [], None


def _template(prompt: str, conversation: tuple[int, int], memory: Span) -> str:
    """The update prompt's own text: the prompt with the conversation and the memory put back
    as their placeholders. For a prompt a :class:`~memlab.core.prompt_template.PromptVariant`
    rendered, this is its template, byte for byte (rendering substitutes each placeholder
    once), so its SHA-256 is the variant's."""
    spans = [(*conversation, "{conversation}")]
    if memory is not None and (memory[1] <= conversation[0] or memory[0] >= conversation[1]):
        spans = sorted([*spans, (*memory, "{current_memory}")])
    pieces, at = [], 0
    for start, end, placeholder in spans:
        pieces += [prompt[at:start], placeholder]
        at = end
    return "".join([*pieces, prompt[at:]])


def _fill_update(decision: SimDecision, view: _SessionView) -> None:
    update = decision.update
    update["newFacts"] = [
        {k: fact[k] for k in ("content", "category", "confidence")} for fact in decision.new_facts
    ]
    update["factsToRemove"] = list(decision.remove)
    gold = [f["content"] for f in decision.new_facts if f["kind"] == "gold"]
    # Never conversation text: the memory in later prompts must not look like a conversation.
    summary = "; ".join(gold) if gold else f"Session {view.index + 1}: nothing durable."
    for section in view.session.labels.sections:
        group = "user" if section in update["user"] else "history"
        update[group][section] = {"summary": summary, "shouldUpdate": True}


_PROSE = "Here is the memory update for this conversation:\n{body}\nI kept only durable facts."
_THINK = "<think>The user shared a few things worth keeping; nothing else changes.</think>\n{body}"
_NO_JSON = "I reviewed the conversation and updated the memory accordingly."


def _render(decision: SimDecision) -> tuple[str, str]:
    """The reply text for a decision, broken as its failure says, and the finish reason."""
    update = decision.update
    breakage = Breakage(
        prose=_PROSE,
        think=_THINK,
        no_json=_NO_JSON,
        wrong_shape={k: update[k] for k in ("newFacts", "factsToRemove")},
        violation={**update, "factsToRemove": "none"},
    )
    return broken_reply(update, decision.failure, breakage)
