"""Which member of a duplicate group to keep: the one a trainer would trust most, decided deterministically.

Order: human-accepted or replay-verified first, then the higher judge score, then a present-but-shorter
reasoning, then the smallest id — so the same input always keeps the same representative, whatever order
a runner delivers the group in.
"""

from __future__ import annotations

from schemas import Sample

VERIFICATION_RANK = {"human": 0, "replayed": 1, "judged": 2, "unverified": 3, "replay_failed": 4}


def representative_key(s: Sample, judge_key: str = "judge") -> tuple:
    reasoning = s.reasoning or ""
    return (VERIFICATION_RANK.get(str(s.verification), 5), -float(s.scores.get(judge_key, 0.0)),
            0 if reasoning else 1, len(reasoning), s.id)
