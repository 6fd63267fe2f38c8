"""Token and cost accounting for a synthesis run (what was paid for, and what the cache saved)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class Usage:
    calls: int = 0  # calls answered by the backend in this run
    cache_hits: int = 0
    failures: int = 0
    reasks: int = 0  # answers rejected by the checks and asked again
    prompt_tokens: int = 0
    completion_tokens: int = 0
    price_in_per_mtok: float = 0.0  # currency units per million prompt tokens
    price_out_per_mtok: float = 0.0

    @property
    def cost(self) -> float:
        return (self.prompt_tokens * self.price_in_per_mtok + self.completion_tokens * self.price_out_per_mtok) / 1e6

    def as_dict(self) -> dict[str, float | int]:
        return {**asdict(self), "cost": round(self.cost, 6)}
