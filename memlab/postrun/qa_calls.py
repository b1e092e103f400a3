"""The calls of a QA step: every distinct answer and verdict request, sent once, concurrently.

A QA step's time is the backend's latency; anything the process does between calls adds to
it. So the calls flow without barriers:

- answer requests are queued as soon as each replay's tasks are built (building the next
  owner's prompts overlaps the first calls);
- an answer's judge requests are queued the moment the answer returns, not after the last
  answer;
- work that does not need the replies (the fates of the evidence, scored by the matcher) runs
  on its own thread while the calls are in flight (``alongside``).

Requests are keyed like the response cache (:func:`memlab.backends.caching.cache.request_key`): two
lanes with the same prompt send it once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from queue import SimpleQueue
from typing import Generic, TypeVar

from memlab.backends.caching.cache import request_key
from memlab.core.pipeline.llm import Backend, CompletionRequest, GenerationParams
from memlab.postrun.progress import Progress
from memlab.qa.answering import AnswerTask, CallResult, call, judge_tasks
from memlab.qa.qa_prompts import JudgePrompt

__all__ = ["QACalls", "ask_and_grade", "call_key"]

T = TypeVar("T")


def call_key(backend: Backend, request: CompletionRequest) -> str:
    """The key of ``request`` to ``backend`` (the response cache's)."""
    return request_key(backend.name, request.model or backend.model, request)


@dataclass
class QACalls(Generic[T]):
    """The results of a QA step's calls by :func:`call_key`, and the ``alongside`` result."""

    answers: dict[str, CallResult] = field(default_factory=dict)
    verdicts: dict[str, CallResult] = field(default_factory=dict)
    alongside: T | None = None


@dataclass
class _Flow:
    """The calls in flight, those already queued (by kind and key), and the finished ones in
    the order they finished (each completion costs O(1): a wait over every pending future
    would cost O(pending) per completion, quadratic over a LoCoMo-sized step).

    Identical answer requests are sent once, but each task keeps its own question: two
    questions with the same text (LoCoMo asks some twice, once answerable and once
    adversarial) share the answer and are each graded against their own answer key.
    """

    pool: ThreadPoolExecutor
    pending: dict[Future[CallResult], tuple[str, str]] = field(default_factory=dict)
    queued: set[tuple[str, str]] = field(default_factory=set)
    finished: SimpleQueue[Future[CallResult]] = field(default_factory=SimpleQueue)
    tasks: dict[str, list[AnswerTask]] = field(default_factory=dict)

    def send(self, kind: str, backend: Backend, request: CompletionRequest) -> int:
        """Queue ``request`` unless the same one was; the number of calls queued (0 or 1)."""
        key = call_key(backend, request)
        if (kind, key) in self.queued:
            return 0
        self.queued.add((kind, key))
        future = self.pool.submit(call, backend, request)
        self.pending[future] = (kind, key)
        future.add_done_callback(self.finished.put)
        return 1

    def next_done(self) -> tuple[str, str, CallResult]:
        """The next call to finish: its kind, key and result."""
        future = self.finished.get()
        kind, key = self.pending.pop(future)
        return kind, key, future.result()


@dataclass
class _Grading:
    """Sends the judge requests of each answer as soon as the answer is known."""

    flow: _Flow
    answerer: Backend
    grader: Backend
    judges: Sequence[JudgePrompt]
    params: GenerationParams

    def ask(self, task: AnswerTask) -> int:
        """Queue ``task``'s answer request (once per distinct request); every task sharing
        it is graded when the answer returns (every batch is queued before any is read)."""
        key = call_key(self.answerer, task.request)
        self.flow.tasks.setdefault(key, []).append(task)
        return self.flow.send("answer", self.answerer, task.request)

    def grade(self, task: AnswerTask, result: CallResult) -> int:
        """Queue the judge requests of ``task``'s answer; the number of calls queued."""
        if result.text is None:
            return 0
        judged = judge_tasks(task.question, result.text, self.judges, self.params)
        return sum(self.flow.send("verdict", self.grader, j.request) for j in judged)


def ask_and_grade(
    batches: Iterable[Sequence[AnswerTask]],
    answerer: Backend,
    grader: Backend,
    judges: Sequence[JudgePrompt],
    judge_params: GenerationParams,
    *,
    max_workers: int,
    progress: bool = False,
    alongside: Callable[[], T] | None = None,
) -> QACalls[T]:
    """Answer every task of ``batches`` on ``answerer`` and grade each answer with ``judges``
    on ``grader``, on ``max_workers`` threads (see the module docstring).

    ``alongside`` runs on a thread of its own once every batch is built; its result is
    :attr:`QACalls.alongside`.
    """
    results: QACalls[T] = QACalls()
    pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memlab-qa")
    side = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlab-qa-side")
    finished = False
    try:
        with Progress("qa calls", "call", enabled=progress) as bar:
            flow = _Flow(pool)
            grading = _Grading(flow, answerer, grader, judges, judge_params)
            for tasks in batches:
                bar.add_total(sum(grading.ask(t) for t in tasks))
            later = side.submit(alongside) if alongside is not None else None
            while flow.pending:
                kind, key, result = flow.next_done()
                bar.update(1)
                if kind == "verdict":
                    results.verdicts[key] = result
                    continue
                results.answers[key] = result
                bar.add_total(sum(grading.grade(t, result) for t in flow.tasks.get(key, ())))
            results.alongside = later.result() if later is not None else None
        finished = True
    finally:
        # Interrupted (Ctrl-C): drop queued calls and do not wait for those in flight, which
        # may be waiting on a server; the cache writes each reply atomically or not at all.
        for executor in (pool, side):
            executor.shutdown(wait=finished, cancel_futures=True)
    return results
