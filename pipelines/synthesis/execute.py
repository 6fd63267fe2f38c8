"""Run calls through a backend in batches, answering repeats from the cache and counting tokens.

Identical calls (the same edge in many paths) are sent once per run; answered calls are cached before the
next batch starts, so a run killed half-way keeps what it paid for and a rerun resumes from the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipelines.synthesis.accounting import Usage
from pipelines.synthesis.backends.base import Backend, Completion, Failure, Result
from pipelines.synthesis.cache import CallCache, cache_key
from pipelines.synthesis.calls import Call


class CallExecutor:
    def __init__(self, backend: Backend, cache: CallCache | None, usage: Usage, batch_size: int = 16,
                 on_progress: Callable[[int], None] | None = None):
        self.backend = backend
        self.cache = cache
        self.usage = usage
        self.batch_size = max(1, batch_size)
        self.on_progress = on_progress or (lambda _n: None)
        self._memo: dict[str, Result] = {}

    def _key(self, call: Call) -> str:
        return cache_key(self.backend.name, self.backend.model, self.backend.prompt_version, call)

    def run(self, calls: Sequence[Call]) -> list[Result]:
        keys = [self._key(c) for c in calls]
        todo: dict[str, Call] = {}
        for key, call in zip(keys, calls, strict=True):
            if key in self._memo or key in todo:
                self.on_progress(1)  # answered already (or about to be): done, as far as progress goes
                continue
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                self._memo[key] = hit
                self.usage.cache_hits += 1
                self.on_progress(1)
            else:
                todo[key] = call
        pending = list(todo.items())
        for start in range(0, len(pending), self.batch_size):
            batch = pending[start:start + self.batch_size]
            results = self.backend.run([c for _, c in batch])
            for (key, _), result in zip(batch, results, strict=True):
                self._memo[key] = result
                if isinstance(result, Completion):
                    self.usage.calls += 1
                    self.usage.prompt_tokens += result.prompt_tokens
                    self.usage.completion_tokens += result.completion_tokens
                    if self.cache is not None:
                        self.cache.put(key, result)
                elif isinstance(result, Failure):
                    self.usage.failures += 1
            self.on_progress(len(batch))
        return [self._memo[k] for k in keys]
