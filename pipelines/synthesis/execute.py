"""Run calls through a backend in batches: cache hits first, validation of every answer, bounded re-asks.

An answer is only as good as ``answers.check_answer`` says: a malformed or inconsistent answer is re-asked (up
to ``max_attempts`` in all, each re-ask telling the model what was wrong) and is never cached, so a bad reply
that arrived with HTTP 200 cannot poison tomorrow's run. A valid answer is cached under the *first* attempt's
key as soon as its batch returns, so a run killed half-way keeps what it paid for and a rerun is free.
Identical calls are sent once per run. What comes back per call is a ``Completion`` (valid) or a ``Failure``
whose reason is the backend's (timeout, server error) or the last rejection's (``malformed_json``, …) with
the rejected text in its detail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.answers import check_answer
from pipelines.synthesis.backends.base import Backend, Completion, Failure, Result
from pipelines.synthesis.cache import CallCache, cache_key
from pipelines.synthesis.calls import Call
from pipelines.synthesis.parse import SynthParseError

DEFAULT_MAX_ATTEMPTS = 3


def judge(call: Call, result: Result) -> Failure | None:
    """None when ``result`` is a valid answer to ``call``, else the ``Failure`` it amounts to."""
    if not isinstance(result, Completion):
        return result
    try:
        check_answer(call.kind, call.payload, result.text)
    except SynthParseError as exc:
        return Failure(exc.reason, f"{exc.detail} | answer: {result.text[:1500]}")
    return None


class CallExecutor:
    def __init__(self, backend: Backend, cache: CallCache | None, usage: Usage, batch_size: int = 16,
                 on_progress: Callable[[int], None] | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS):
        self.backend = backend
        self.cache = cache
        self.usage = usage
        self.batch_size = max(1, batch_size)
        self.on_progress = on_progress or (lambda _n: None)
        self.max_attempts = max(1, max_attempts)
        self._memo: dict[str, Result] = {}

    def key(self, call: Call) -> str:
        return cache_key(self.backend.name, self.backend.model, self.backend.prompt_version, call,
                         self.backend.revision)

    def _from_cache(self, key: str, call: Call) -> Completion | None:
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None or judge(call, hit) is not None:
            return None  # an entry the current checks reject (they got stricter) is a miss
        self.usage.cache_hits += 1
        return hit

    def _ask(self, calls: list[Call]) -> list[Result]:
        out: list[Result] = []
        for start in range(0, len(calls), self.batch_size):
            batch = calls[start:start + self.batch_size]
            results = self.backend.run(batch)
            for result in results:
                if isinstance(result, Completion):
                    self.usage.calls += 1
                    self.usage.prompt_tokens += result.prompt_tokens
                    self.usage.completion_tokens += result.completion_tokens
                else:
                    self.usage.failures += 1
            out += results
        return out

    def run(self, calls: Sequence[Call]) -> list[Result]:
        keys = [self.key(c) for c in calls]
        todo: dict[str, Call] = {}
        for key, call in zip(keys, calls, strict=True):
            if key in self._memo or key in todo:
                self.on_progress(1)
                continue
            hit = self._from_cache(key, call)
            if hit is not None:
                self._memo[key] = hit
                self.on_progress(1)
            else:
                todo[key] = call
        pending = list(todo.items())  # (first attempt's key, the call to send now)
        for attempt in range(self.max_attempts):
            if not pending:
                break
            results = self._ask([c for _, c in pending])
            again: list[tuple[str, Call]] = []
            for (key, call), result in zip(pending, results, strict=True):
                bad = judge(call, result)
                if bad is None:
                    assert isinstance(result, Completion)
                    self._memo[key] = result
                    if self.cache is not None:
                        self.cache.put(key, result)
                elif isinstance(result, Completion) and attempt + 1 < self.max_attempts:
                    self.usage.reasks += 1
                    again.append((key, call.reask(bad.reason)))  # the code only: the model's own text stays out
                    continue
                else:
                    self._memo[key] = bad
                self.on_progress(1)
            pending = again
        return [self._memo[k] for k in keys]
