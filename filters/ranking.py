"""The one ranking that picks representatives: every dedupe decision in a run uses it, so the row kept for a
group is the best of that group under the same order everywhere, whatever order a runner delivers rows in.

Order, best first:

1. verification — human-accepted, then replay-verified, judged, unverified, replay-failed;
2. the higher judge score (absent counts as 0);
3. clean before noise — a noise-injected copy (``Lineage.negative``) never wins over a clean record;
4. (step rows) a training target before a context-only step (``train_target`` False);
5. reflection kept — a trajectory or step carrying reflection (a recovery) before one without: reflections are
   rare and are what teach an agent to notice and undo its own mistake;
6. the shorter trajectory (fewer steps: the more direct demonstration of the same goal);
7. deterministic tie-breaks: the trajectory id, the step index, the position in the input.

What is deliberately *not* in it: reasoning length. Preferring the shorter reasoning is how every reflection
step used to lose its tie.
"""

from __future__ import annotations

VERIFICATION_RANK = {"human": 0, "replayed": 1, "judged": 2, "unverified": 3, "replay_failed": 4}

Rank = tuple[int, float, int, int, int, int, str, int, int]


def trajectory_rank(verification: str, judge: float, negative: bool, reflective: bool, num_steps: int,
                    trajectory_id: str, key: int) -> Rank:
    """The rank of a whole trajectory (smaller is better)."""
    return (VERIFICATION_RANK.get(verification, 5), -judge, int(negative), 0, int(not reflective), num_steps,
            trajectory_id, 0, key)


def step_rank(traj: Rank, train_target: bool, reflective: bool, index: int) -> Rank:
    """The rank of one step row: its trajectory's rank with the step's own target / reflection facts."""
    v, judge, negative, _, _, steps, tid, _, key = traj
    return (v, judge, negative, int(not train_target), int(not reflective), steps, tid, index, key)
