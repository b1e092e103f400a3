"""The simulated model answering questions and judging answers, with known truth.

The simulated model (:mod:`memlab.simulation.model`) recognises QA prompts the way it
recognises update prompts, by the dataset content they hold:

- a **judge prompt** is one a known judge template produced (the built-in ``lenient`` and
  ``strict`` ones, or those the backend is given):
  :meth:`~memlab.core.prompt_template.PromptTemplate.parse` reads back the question, the
  reference and the answer;
- an **answer prompt** is any other prompt that holds a question of the dataset (its exact
  text; the longest one wins) and no memory document JSON (update prompts hold one). The
  question is the one of the owner asked after the session the request names
  (:attr:`~memlab.core.pipeline.llm.CompletionRequest.about`, which the QA step sends to the
  simulated model), so two owners whose sessions and questions read alike get each their own
  answers; a request that names none takes the first owner with that question text.

Answering (rates from :class:`~memlab.simulation.profile_model.SimQAProfile`): the question's
evidence is *in the prompt* when every evidence fact is there, as a line of its own, in a
wording the simulated updater stores (or verbatim, as a gold memory holds it; a bullet and a
``[category | confidence]`` tag may precede it, as injected facts are shown; a fact only
mentioned inside a summary line does not count, so the known truth follows the facts the
pipeline stored and injected), or, for a question without evidence
facts, every evidence turn is there (its text, or the text a leak of its must-not-store string
stores). Then an answerable question gets its answer with ``answer_rate`` (else a wrong guess);
an abstain or adversarial question gets its trap (``wrong_answer``) with ``trap_rate`` (else
an abstention). Without its evidence, any question gets an abstention with ``abstain_rate``,
else a wrong guess: the question's ``wrong_answer``, else the answer of another question of the
owner, picked by a draw. A ``procedure`` question is answered by naming the steps of its
procedure that the prompt shows, each with the profile's ``procedural.answer_step_rate``
(:func:`~memlab.simulation.procedural.answer_procedure`; :class:`~memlab.simulation.
procedural.ProcedureAnswer` is its provenance); it is never judged.

Judging: an answer equal to the reference (after case and space folding) is CORRECT; the
simulated abstention is CORRECT exactly when the question expects one; a wrong answer the
simulated answerer can give for that question (its guesses, its trap, its answer under the
other answer key) is on topic, and accepted with the judge prompt's declared leniency; any other
answer is WRONG. One draw per (question, answer) serves every judge, so a more lenient judge
accepts everything a stricter one does.

Judging calibration triples (:class:`KnownVerdict`, e.g. the judge calibration set's): the
simulated judge cannot read a paraphrase, so it is told each triple's verdict and whether a
WRONG answer is on topic, and grades them as it grades its own answers: a CORRECT triple is
CORRECT (``match``), an on-topic WRONG one is accepted with the judge prompt's leniency
(``on_topic``), any other WRONG one is WRONG (``unrecognised``). A judge auditing it thus
agrees with the verdicts on all but the on-topic WRONG triples it accepts: an expected
agreement of ``1 - leniency * on_topic / n``.

Every decision carries its provenance (:class:`AnswerDecision`, :class:`JudgeDecision`), so
tests compute expected accuracy, abstention and judge flip rates from declared rates and
provenance, never from the scoring code. Draws are hashes of the backend seed, the request
seed, the owner, the question and (for judges) the answer, like every draw of the simulator.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from memlab.core.pipeline.llm import BackendError
from memlab.errors import excerpt
from memlab.qa.qa_prompts import ABSTAIN_REFERENCE, JudgePrompt, judge_prompts
from memlab.simulation.fact_texts import leaked, wordings
from memlab.simulation.procedural import ProcedureAnswer, answer_procedure
from memlab.simulation.profile_model import SimProceduralProfile, SimQAProfile, uniform

if TYPE_CHECKING:  # importing memlab.datasets loads its models; the backends stay light
    from memlab.datasets.models import Owner
    from memlab.datasets.questions import Question

__all__ = [
    "ABSTAIN_TEXT",
    "CALIBRATION_OWNER",
    "GUESS_FALLBACK",
    "AnswerDecision",
    "AnswerOutcome",
    "JudgeDecision",
    "KnownVerdict",
    "Recognised",
    "SimQA",
]

ABSTAIN_TEXT = "I don't know: nothing I remember about the user says."
"""The simulated answerer's abstention."""

GUESS_FALLBACK = "Something else entirely."
"""The guess of a question with no wrong answer and no other answer of its owner to borrow."""

CALIBRATION_OWNER = "calibration"
"""The ``user_id`` of a :class:`JudgeDecision` about a calibration triple."""

AnswerOutcome = Literal["answer", "abstain", "guess", "trap"]
Recognised = Literal["match", "abstain", "on_topic", "unrecognised"]

_TURN_PROBE_CHARS = 200
_MIN_TURN_PROBE = 12
_MEMORY_JSON = '"facts":'


@dataclass(frozen=True)
class AnswerDecision:
    """What the simulated answerer said and why (the known truth of one answer).

    Attributes:
        user_id, question_id: The question answered (the first of ``ambiguous`` when several
            questions have its text).
        evidence_present: Whether its evidence was in the prompt.
        found: The evidence items found (gold fact ids, ``session:message`` turns).
        outcome: ``answer`` (its answer), ``abstain``, ``guess`` (a wrong answer) or ``trap``
            (the wrong answer of an abstain or adversarial question).
        source: Where the text comes from: ``answer``, ``abstain``, ``wrong_answer``,
            ``answer of <question id>`` or ``fallback``.
        text: The reply.
        right: Whether the reply is a right response (its answer, or an abstention when
            the question expects one).
        ambiguous: Other questions of the dataset with the same text.
    """

    user_id: str
    question_id: str
    evidence_present: bool
    found: tuple[str, ...]
    outcome: AnswerOutcome
    source: str
    text: str
    right: bool
    ambiguous: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeDecision:
    """What a simulated judge decided and why.

    Attributes:
        judge: The judge prompt's name.
        user_id, question_id: The question whose answer was graded.
        recognised: ``match`` (the reference), ``abstain`` (the simulated abstention),
            ``on_topic`` (a wrong answer the simulated answerer gives) or ``unrecognised``.
        lenient: True when the verdict is a declared lenient acceptance of a wrong answer.
        verdict: True for CORRECT.
    """

    judge: str
    user_id: str
    question_id: str
    recognised: Recognised
    lenient: bool
    verdict: bool

    @property
    def text(self) -> str:
        """The judge's reply."""
        return json.dumps({"label": "CORRECT" if self.verdict else "WRONG"})


class KnownVerdict(Protocol):
    """A graded (question, reference, answer) triple whose verdict the simulated judge is
    told (:class:`memlab.qa.judge_calibration.JudgeTriple` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def reference(self) -> str: ...
    @property
    def answer(self) -> str: ...
    @property
    def correct(self) -> bool: ...
    @property
    def on_topic(self) -> bool: ...


@dataclass
class _Probes:
    """The texts that show a question's evidence in a prompt."""

    facts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    turns: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def found(self, prompt: str) -> tuple[bool, tuple[str, ...]]:
        lines = _fact_texts(prompt)
        facts = [k for k, texts in self.facts.items() if any(t in lines for t in texts)]
        turns = [k for k, texts in self.turns.items() if any(t in prompt for t in texts)]
        if self.facts:
            present = len(facts) == len(self.facts)
        else:
            present = bool(self.turns) and len(turns) == len(self.turns)
        return present, (*facts, *turns)


_FACT_LINE = re.compile(r"^\s*(?:[-*]\s+)?(?:\[[^\]\n]*\]\s+)?(.+?)\s*$", re.MULTILINE)


def _fact_texts(prompt: str) -> set[str]:
    """Each line of ``prompt`` as a fact would be written there: without a bullet and a
    ``[category | confidence]`` tag. A summary line (``- Work: a; b``) stays whole, so a fact
    the memory only mentions in a summary is not a stored fact."""
    return {m.group(1) for m in _FACT_LINE.finditer(prompt)}


def _fold(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .!")


class SimQA:
    """Answers and verdicts of the simulated model for the questions of ``owners``.

    Args:
        owners: The dataset (its questions and labels).
        profile: The declared rates.
        seed: The backend seed, mixed into every draw (with the profile's content when its
            draws are independent).
        judges: Judge prompts whose rendered prompts are recognised (default: the built-in
            ``lenient`` and ``strict``).
        calibration: Triples it grades by their known verdict (see the module docstring).
        procedural: The rate it names a procedure's shown steps with (``answer_step_rate``;
            default: the profile section's defaults).
    """

    def __init__(
        self,
        owners: Sequence[Owner],
        profile: SimQAProfile,
        seed: int | str = 0,
        judges: Sequence[JudgePrompt] | None = None,
        calibration: Sequence[KnownVerdict] = (),
        procedural: SimProceduralProfile | None = None,
    ) -> None:
        self.profile = profile
        self.procedural = procedural or SimProceduralProfile()
        self._known = {
            (_fold(t.question), _fold(t.reference), _fold(t.answer)): t for t in calibration
        }
        self.seed = seed
        self.judges = list(judges) if judges is not None else _builtin_judges()
        self._by_text: dict[str, list[tuple[Owner, Question]]] = {}
        self._probes: dict[tuple[str, str], _Probes] = {}
        self._answers: dict[str, list[tuple[str, str]]] = {}  # owner -> (question id, answer)
        for owner in owners:
            for question in owner.questions:
                self._by_text.setdefault(question.question.strip(), []).append((owner, question))
                self._probes[owner.user_id, question.id] = _probes(owner, question)
            self._answers[owner.user_id] = [
                (q.id, q.answer) for q in owner.questions if q.answer is not None
            ]
        self._texts = sorted(self._by_text, key=len, reverse=True)

    def decide(
        self, prompt: str, request_seed: int | None = 0, about: tuple[str, int] | None = None
    ) -> AnswerDecision | JudgeDecision | ProcedureAnswer | None:
        """The decision for a QA prompt, or None when ``prompt`` is not one (an update).
        ``about``: the owner and session index an answer request asks about.

        Raises:
            BackendError: A judge prompt about a question the dataset does not have.
        """
        for judge in self.judges:
            values = judge.parse(prompt)
            if values is not None:
                return self._judge(judge.name, values, request_seed)
        if _MEMORY_JSON in prompt:
            return None
        text = next((t for t in self._texts if t in prompt), None)
        if text is None:
            return None
        (owner, question), *others = _first_about(self._by_text[text], about)
        if question.kind == "procedure":
            return self._procedure(owner, question, prompt.replace(text, ""), request_seed)
        return self._answer(owner, question, prompt, request_seed, others)

    # ------------------------------------------------------------------ answering

    def _answer(
        self,
        owner: Owner,
        question: Question,
        prompt: str,
        request_seed: int | None,
        others: Sequence[tuple[Owner, Question]],
    ) -> AnswerDecision:
        rates = self.profile
        key = (self.seed, request_seed, owner.user_id, question.id)
        u = uniform(*key, "qa-answer")
        present, found = self._probes[owner.user_id, question.id].found(prompt)
        outcome: AnswerOutcome
        if not present:
            outcome = "abstain" if u < rates.abstain_rate else "guess"
        elif question.kind == "answerable":
            outcome = "answer" if u < rates.answer_rate else "guess"
        else:
            outcome = "trap" if u < rates.trap_rate else "abstain"
        text, source = self._text(owner, question, outcome, uniform(*key, "qa-guess"))
        right = outcome == "answer" or (outcome == "abstain" and question.expects_abstention)
        return AnswerDecision(
            user_id=owner.user_id,
            question_id=question.id,
            evidence_present=present,
            found=found,
            outcome=outcome,
            source=source,
            text=text,
            right=right,
            ambiguous=tuple(q.id for _, q in others),
        )

    def _procedure(
        self, owner: Owner, question: Question, prompt: str, request_seed: int | None
    ) -> ProcedureAnswer:
        """The answer to a procedure question (:func:`~memlab.simulation.procedural.
        answer_procedure`); a procedure the labels lack shows no step."""
        procedure = str(question.procedure)
        gold = owner.gold_procedures().get(procedure)
        key = (self.seed, request_seed, owner.user_id, question.id)
        return answer_procedure(
            (owner.user_id, question.id, procedure),
            gold.steps if gold is not None else (),
            prompt,
            self.procedural.answer_step_rate,
            lambda step: uniform(*key, step, "qa-step"),
            ABSTAIN_TEXT,
        )

    def _text(
        self, owner: Owner, question: Question, outcome: AnswerOutcome, u: float
    ) -> tuple[str, str]:
        if outcome == "answer" and question.answer is not None:
            return question.answer, "answer"
        if outcome == "abstain":
            return ABSTAIN_TEXT, "abstain"
        if question.wrong_answer is not None:
            return question.wrong_answer, "wrong_answer"
        right = _fold(question.answer or "")
        pool = [(qid, a) for qid, a in self._answers[owner.user_id] if _fold(a) != right]
        if not pool:
            return GUESS_FALLBACK, "fallback"
        qid, answer = pool[int(u * len(pool))]
        return answer, f"answer of {qid}"

    # ------------------------------------------------------------------ judging

    def _judge(self, judge: str, values: dict[str, str], request_seed: int | None) -> JudgeDecision:
        triple = self._known.get(
            (_fold(values["question"]), _fold(values["gold_answer"]), _fold(values["answer"]))
        )
        if triple is not None:
            return self._judge_known(judge, triple, request_seed)
        asked = values["question"].strip()
        found = self._by_text.get(asked)
        if not found:
            raise BackendError(
                f"simulated judge: the question {excerpt(asked)} is not one of its dataset; "
                "build the 'sim:' backend with the dataset the questions come from"
            )
        answer, reference = _fold(values["answer"]), _fold(values["gold_answer"])
        # Of the questions with this text, the one whose reference the prompt holds.
        owner, question = next(
            ((o, q) for o, q in found if reference in map(_fold, _references(q))), found[0]
        )
        recognised: Recognised
        lenient = False
        if answer == reference:
            recognised, verdict = "match", True
        elif answer == _fold(ABSTAIN_TEXT):
            recognised, verdict = "abstain", question.expects_abstention
        elif answer in self._on_topic(owner, question):
            recognised = "on_topic"
            u = uniform(self.seed, request_seed, owner.user_id, question.id, answer, "qa-judge")
            lenient = verdict = u < self.profile.leniency(judge)
        else:
            recognised, verdict = "unrecognised", False
        return JudgeDecision(judge, owner.user_id, question.id, recognised, lenient, verdict)

    def _judge_known(
        self, judge: str, triple: KnownVerdict, request_seed: int | None
    ) -> JudgeDecision:
        recognised: Recognised
        lenient = False
        if triple.correct:
            recognised, verdict = "match", True
        elif triple.on_topic:
            recognised = "on_topic"
            u = uniform(self.seed, request_seed, CALIBRATION_OWNER, triple.id, "qa-judge")
            lenient = verdict = u < self.profile.leniency(judge)
        else:
            recognised, verdict = "unrecognised", False
        return JudgeDecision(judge, CALIBRATION_OWNER, triple.id, recognised, lenient, verdict)

    def _on_topic(self, owner: Owner, question: Question) -> set[str]:
        """Wrong answers the simulated answerer may give, and the answer under either key."""
        texts = {a for _, a in self._answers[owner.user_id]}
        texts.update(t for t in (question.wrong_answer, GUESS_FALLBACK) if t)
        if question.audit is not None:
            texts.update(
                t for t in (question.audit.original_answer, question.audit.audited_answer) if t
            )
        return {_fold(t) for t in texts}


def _first_about(
    found: Sequence[tuple[Owner, Question]], about: tuple[str, int] | None
) -> list[tuple[Owner, Question]]:
    """``found`` with the question ``about`` names first: its owner's question asked after
    that session, else its owner's first (``found`` as it is without ``about``)."""
    if about is None:
        return list(found)
    user_id, index = about

    def rank(pair: tuple[Owner, Question]) -> int:
        owner, question = pair
        if owner.user_id != user_id:
            return 2
        return 0 if owner.session_index(question.after_session) == index else 1

    return sorted(found, key=rank)  # stable: the dataset's order among equals


def _references(question: Question) -> list[str]:
    """The texts a judge prompt may hold as the reference of ``question`` (either key)."""
    texts = [question.answer or ABSTAIN_REFERENCE]
    if question.audit is not None and question.audit.original_answer:
        texts.append(question.audit.original_answer)
    return texts


def _builtin_judges() -> list[JudgePrompt]:
    registry = judge_prompts()
    return [registry.get(name) for name in registry.names()]


def _probes(owner: Owner, question: Question) -> _Probes:
    """What shows each evidence item of ``question`` in a prompt."""
    gold = owner.gold_facts()
    probes = _Probes()
    for gold_id in question.evidence.facts:
        probes.facts[gold_id] = tuple(wordings(gold[gold_id].content))
    for turn in question.evidence.turns:
        index = owner.session_index(turn.session)
        session = owner.sessions[index]
        text = session.messages[turn.message].text.strip()
        texts = [text[:_TURN_PROBE_CHARS]] if len(text) >= _MIN_TURN_PROBE else []
        secrets = [s for s in session.labels.must_not_store if s.casefold() in text.casefold()]
        texts += [leaked(s) for s in secrets]
        if texts:
            probes.turns[f"{session.thread_id}:{turn.message}"] = tuple(texts)
    return probes
