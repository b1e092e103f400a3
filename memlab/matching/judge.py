"""Judged matching: an LLM decides whether a stored fact states a gold fact, under two prompts.

The same answers can score very differently under two reasonable judge prompts, so
:class:`LLMJudgeMatcher` asks every pair under each of its prompts (``lenient`` and
``strict`` by default) and keeps all verdicts: its own verdict is the first prompt's, and
:meth:`LLMJudgeMatcher.under` gives a matcher for each prompt so a run can be scored under
each one, with the prompts' agreement (:meth:`LLMJudgeMatcher.agreement`). Wrap the backend in
a :class:`memlab.backends.CachedBackend` (``memlab rescore --cache-dir``) so judged metrics are
reproducible and a second scoring costs no calls.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from memlab import plugins
from memlab.core.jsondoc.similarity import content_tokens, normalize_text
from memlab.core.pipeline.llm import Backend, CompletionRequest, GenerationParams
from memlab.matching.base import MatchResult

__all__ = ["FACT_JUDGE_PROMPTS", "JudgeAgreement", "LLMJudgeMatcher"]

_LENIENT = """You compare two facts about the same user.
Does the STORED fact state the GOLD fact (the same meaning, possibly in other words, with more
or less detail)? Answer with one word: yes or no.

GOLD: {gold}
STORED: {stored}
Answer:"""

_STRICT = """You compare two facts about the same user.
Answer yes only if the STORED fact states every claim of the GOLD fact with the same polarity
(liking vs disliking, doing vs not doing) and the same values (names, places, numbers, dates,
brands, diets). The STORED fact may leave out reasons and examples and may add detail. If it
states only part of the GOLD fact, something vaguer, or something else, answer no.
Answer with one word: yes or no.

GOLD: {gold}
STORED: {stored}
Answer:"""

FACT_JUDGE_PROMPTS: plugins.Registry[str] = plugins.declare(
    "matcher_judge_prompt",
    "fact judge prompt",
    entry_type=str,
    builtins={"lenient": _LENIENT, "strict": _STRICT},
)
"""The fact judge's prompts by name; ``{gold}`` and ``{stored}`` are filled in and the judge
answers yes or no. Plugins add theirs with ``FACT_JUDGE_PROMPTS.register(name, template)``.

Not the QA judge's prompts (:data:`memlab.qa.qa_prompts.JUDGE_PROMPTS`): those grade an
answer to a question against a reference answer, with other placeholders and another reply."""


@dataclass(frozen=True)
class JudgeAgreement:
    """How often the judge prompts gave the same verdict.

    Attributes:
        pairs: (stored, gold) pairs put to the judge (pairs without a shared word are
            rejected without a call and not counted).
        agreed: Pairs on which every prompt gave the same verdict.
    """

    pairs: int
    agreed: int

    @property
    def rate(self) -> float:
        """``agreed / pairs`` (NaN when nothing was judged)."""
        return self.agreed / self.pairs if self.pairs else float("nan")


class LLMJudgeMatcher:
    """Ask an LLM whether a stored fact states a gold fact (yes/no) under several prompts.

    Pairs that share no content token are rejected without a call, and every verdict is
    memoised per prompt, so scoring a run costs one call per plausible pair and prompt.

    Args:
        backend: Any :class:`memlab.core.pipeline.llm.Backend` (wrap it in a ``CachedBackend``).
        prompts: Names of :data:`FACT_JUDGE_PROMPTS` to ask, the first giving the verdict.
        max_tokens: Completion budget for the one-word answer.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        prompts: Sequence[str] = ("lenient", "strict"),
        max_tokens: int = 4,
    ) -> None:
        unknown = [p for p in prompts if p not in FACT_JUDGE_PROMPTS]
        if not prompts or unknown:
            known = ", ".join(FACT_JUDGE_PROMPTS)
            raise ValueError(f"unknown judge prompt(s) {unknown}; known: {known}")
        self.backend = backend
        self.prompts = tuple(prompts)
        self.max_tokens = max_tokens
        self.calls = 0
        self._verdicts: dict[tuple[str, str, str], bool] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``judge:<backend>`` as the registry resolves it."""
        return f"judge:{getattr(self.backend, 'name', type(self.backend).__name__)}"

    def verdict(self, prompt: str, stored: str, gold: str) -> bool:
        """The judge's answer under ``prompt`` (memoised; no call for pairs without overlap)."""
        key = (prompt, stored, gold)
        with self._lock:
            if key in self._verdicts:
                return self._verdicts[key]
        if not _plausible(stored, gold):
            return False
        text = FACT_JUDGE_PROMPTS[prompt].format(gold=gold, stored=stored)
        request = CompletionRequest(
            messages=[{"role": "user", "content": text}],
            params=GenerationParams(max_tokens=self.max_tokens),
        )
        answer = self.backend.complete(request).text.strip().casefold()
        verdict = answer.startswith("yes")
        with self._lock:
            self.calls += 1
            self._verdicts[key] = verdict
        return verdict

    def match(self, stored: str, gold: str) -> MatchResult:
        """Ask every prompt; the first prompt's answer is the verdict."""
        if not _plausible(stored, gold):
            return MatchResult(0.0, False, "judge not asked: no word in common")
        verdicts = {p: self.verdict(p, stored, gold) for p in self.prompts}
        said = ", ".join(f"{p} {'yes' if v else 'no'}" for p, v in verdicts.items())
        share = sum(verdicts.values()) / len(verdicts)
        return MatchResult(share, verdicts[self.prompts[0]], f"judge: {said}")

    def covers(self, stored: str, gold: str) -> bool:
        return self.match(stored, gold).matched

    def under(self, prompt: str) -> _PromptView:
        """A matcher giving this judge's verdicts under one prompt (sharing the memo)."""
        if prompt not in self.prompts:
            raise ValueError(f"prompt {prompt!r} is not one of this judge's {self.prompts}")
        return _PromptView(self, prompt)

    def agreement(self) -> JudgeAgreement:
        """Agreement of the prompts over every pair judged under all of them so far."""
        with self._lock:
            verdicts = dict(self._verdicts)
        pairs = {(s, g) for _, s, g in verdicts}
        complete = [
            [verdicts[(p, s, g)] for p in self.prompts]
            for s, g in pairs
            if all((p, s, g) in verdicts for p in self.prompts)
        ]
        agreed = sum(1 for answers in complete if len(set(answers)) == 1)
        return JudgeAgreement(pairs=len(complete), agreed=agreed)


@dataclass(frozen=True)
class _PromptView:
    judge: LLMJudgeMatcher
    prompt: str

    @property
    def name(self) -> str:
        return f"{self.judge.name}/{self.prompt}"

    def covers(self, stored: str, gold: str) -> bool:
        return self.judge.verdict(self.prompt, stored, gold)

    def match(self, stored: str, gold: str) -> MatchResult:
        verdict = self.covers(stored, gold)
        return MatchResult(float(verdict), verdict, f"judge {self.prompt}: {verdict}")


def _plausible(stored: str, gold: str) -> bool:
    """Worth asking: the texts share a content token (or one contains the other)."""
    return bool(content_tokens(stored) & content_tokens(gold)) or (
        normalize_text(gold) in normalize_text(stored)
    )
