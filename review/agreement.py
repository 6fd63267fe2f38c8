"""Inter-annotator agreement on samples seen by two or more annotators.

Verdicts are compared as categories: ``accept``, ``edit`` and ``reject:<reason>`` — two annotators who both
reject a step, one because the point misses and one because the instruction is wrong, disagree about what is
wrong, and κ must say so (``LabelView.category`` / ``Mark.category`` build them). ``coarse`` folds the reason
away for the verdict-only figure shown beside it. Per pair of annotators we report the observed agreement and
Cohen's kappa (agreement corrected for what their label frequencies would give by chance); over all
multiply-labelled samples, Fleiss' kappa. Pure functions over ``{sample: {annotator: category}}``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations

CATEGORIES = ("accept", "reject", "edit")


def coarse(verdicts: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The same verdicts with reject reasons folded away (``reject:wrong_point`` → ``reject``)."""
    return {s: {a: c.split(":", 1)[0] for a, c in by.items()} for s, by in verdicts.items()}


@dataclass(frozen=True)
class PairAgreement:
    a: str
    b: str
    n: int  # samples both labelled
    observed: float  # fraction with the same verdict
    kappa: float | None  # None when chance agreement is 1 (both always gave one and the same verdict)


def cohen_kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' verdict pairs.

    >>> cohen_kappa([("accept", "accept"), ("reject", "reject")])
    1.0
    >>> cohen_kappa([("accept", "reject"), ("reject", "accept")])
    -1.0
    """
    n = len(pairs)
    if n == 0:
        return None
    po = sum(a == b for a, b in pairs) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    pe = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def pairwise(verdicts: dict[str, dict[str, str]]) -> list[PairAgreement]:
    """Agreement for every pair of annotators who share at least one sample."""
    shared: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for by_ann in verdicts.values():
        for a, b in combinations(sorted(by_ann), 2):
            shared.setdefault((a, b), []).append((by_ann[a], by_ann[b]))
    out = []
    for (a, b), pairs in sorted(shared.items()):
        observed = sum(x == y for x, y in pairs) / len(pairs)
        out.append(PairAgreement(a, b, len(pairs), observed, cohen_kappa(pairs)))
    return out


def fleiss_kappa(verdicts: dict[str, dict[str, str]]) -> float | None:
    """Fleiss' kappa over samples with ≥ 2 raters (raters per sample may vary; each sample weighs equally).

    >>> fleiss_kappa({"s1": {"a": "accept", "b": "accept"}, "s2": {"a": "reject", "b": "reject"}})
    1.0
    """
    items = [list(v.values()) for v in verdicts.values() if len(v) >= 2]
    if not items:
        return None
    p_items: list[float] = []
    totals: Counter[str] = Counter()
    n_ratings = 0
    for ratings in items:
        k = len(ratings)
        counts = Counter(ratings)
        p_items.append(sum(c * (c - 1) for c in counts.values()) / (k * (k - 1)))
        totals.update(counts)
        n_ratings += k
    p_bar = sum(p_items) / len(p_items)
    pe = sum((c / n_ratings) ** 2 for c in totals.values())
    if pe >= 1.0:
        return None
    return (p_bar - pe) / (1 - pe)
