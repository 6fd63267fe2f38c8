"""Recovery samples: a wrong step, the unexpected screen, a reflection, and the way back — all from the graph.

For a synthesized trajectory and a step k on state s, the graph offers *distractor* edges: other actions from
s that lead somewhere else (state w). If the graph also holds an edge from w back to s (a back action or a link
home), the recovery trajectory is: steps before k, the wrong step (s → w), the recovery step (w → s) whose
reasoning starts with ``<reflection>…</reflection>`` naming the unexpected screen and the intended one, then the
original steps from k on. Every action is a recorded graph edge, so recovery trajectories replay like any
other. ``scores`` label the wrong step (``wrong_step``) so trainers can mask it as a target, and the recovery
step (``recovery_step``) so rewards can credit reflection.
"""

from __future__ import annotations

from pipelines.synthesis.calls import screen_name, step_call
from pipelines.synthesis.graph_input import AppGraph
from pipelines.synthesis.prompts import PromptSet
from schemas import Step, Trajectory, Transition
from schemas.base import stable_id

REFLECTION = {
    "en": "<reflection>This is {got}, not {expected}: tapping “{wrong}” was a mistake.</reflection> "
          "To get back to {expected}, I should {instruction_lc}.",
    "zh": "<reflection>当前是{got}而不是{expected}：点击“{wrong}”是错误的。</reflection>"
          "为了回到{expected}，我应该{instruction}。",
}


def _edge_between(graph: AppGraph, src: str, dst: str) -> Transition | None:
    return next((e for e in graph.out.get(src, []) if e.to_state == dst), None)


def _label(graph: AppGraph, edge: Transition) -> str:
    obs = graph.observation(edge.from_observation_id)
    el = obs.element(edge.action.target_element_id) if edge.action.target_element_id else None
    return el.label if el is not None else edge.action.describe()


def recovery_trajectories(graph: AppGraph, trajs: list[Trajectory], prompts: PromptSet,
                          per_trajectory: int = 1) -> list[Trajectory]:
    """Up to ``per_trajectory`` recovery variants of each trajectory (the first steps that allow one)."""
    from pipelines.synthesis.backends.offline import OfflineBackend

    rules = OfflineBackend(prompts)
    by_id = {t.id: t for t in graph.transitions}
    out: list[Trajectory] = []
    for traj in trajs:
        edges = [by_id.get(i) for i in traj.lineage.source_ids]
        if None in edges or traj.app_id != graph.app_id:
            continue
        lang = traj.task.language if traj.task.language in REFLECTION else "en"
        made = 0
        for k, edge in enumerate(edges):
            if made >= per_trajectory:
                break
            assert edge is not None
            for wrong in graph.out.get(edge.from_state, []):
                if wrong.to_state in (edge.to_state, edge.from_state):
                    continue
                back = _edge_between(graph, wrong.to_state, edge.from_state)
                if back is None:
                    continue
                wrong_payload = step_call(graph, wrong, lang).payload
                back_payload = step_call(graph, back, lang).payload
                back_instruction = rules.instruction(back_payload)
                got = screen_name(graph.observation(back.from_observation_id))
                expected = screen_name(graph.observation(edge.from_observation_id))
                lc = back_instruction[:1].lower() + back_instruction[1:] if lang == "en" else back_instruction
                reflection = REFLECTION[lang].format(got=got, expected=expected, wrong=_label(graph, wrong),
                                                     instruction=back_instruction, instruction_lc=lc)
                wrong_instruction = rules.instruction(wrong_payload)
                steps = [s.model_copy() for s in traj.steps[:k]]
                steps.append(Step(index=k, observation=graph.observation(wrong.from_observation_id),
                                  action=wrong.action, instruction=wrong_instruction,
                                  reasoning=rules.reasoning(wrong_payload, wrong_instruction),
                                  next_observation_id=wrong.to_observation_id))
                steps.append(Step(index=k + 1, observation=graph.observation(back.from_observation_id),
                                  action=back.action, instruction=back_instruction, reasoning=reflection,
                                  next_observation_id=back.to_observation_id))
                for s in traj.steps[k:]:
                    steps.append(s.model_copy(update={"index": len(steps)}))
                ids = [*traj.lineage.source_ids[:k], wrong.id, back.id, *traj.lineage.source_ids[k:]]
                lineage = traj.lineage.model_copy(update={"source_ids": ids})
                out.append(traj.model_copy(update={
                    "id": stable_id("recovery", traj.id, wrong.id, back.id),
                    "steps": steps, "lineage": lineage,
                    "scores": {**traj.scores, "recovery": 1.0, "wrong_step": float(k), "recovery_step": float(k + 1)},
                }))
                made += 1
                break
    return out
