"""`insight` encoder (failed episodes only): the failure pattern, its root cause, a corrective
strategy and a detection signal, located at the failing step and the last divergent action."""
from __future__ import annotations

import dspy

from memarch.modules.encoders._experience_algorithms import analyse_failure
from memarch.modules.encoders._experience_encoder import ExperienceEncoder
from memarch.modules.signatures.experience import DiagnoseFailure
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register


def insight_text(task: str, pattern: str, cause: str, strategy: str, signal: str) -> str:
    return (f"Failure ({pattern}) on task: {task}\nRoot cause: {cause}\nNext time: {strategy}\n"
            f"Warning sign: {signal}")


@register("encoder", "insight", families="experience", uses_lm=True, rank=2,
          description="root cause of a failure: pattern, cause, corrective strategy, detection signal")
class InsightEncoder(ExperienceEncoder):
    """Explain why an episode failed.

    LM-free: the failing step is the last step the environment rejected (else the last step);
    the last divergent action is the latest action on an entity the task does not name (else
    the last accepted state-changing action); rules on the error observation and the episode's
    ``answer`` / ``expected`` metadata label the pattern (wrong_entity, wrong_value,
    format_error, incomplete_search, precondition_violation, tool_error, wrong_action).

    Example::

        [item] = InsightEncoder(resources).encode(failed_episode)
        item.fields["failure_pattern"], item.source_ids   # "wrong_entity", ["s3"]
    """

    def __init__(self, resources=None, **config):
        super().__init__(resources, **config)
        self.diagnose = dspy.Predict(DiagnoseFailure)

    def applies_to(self, episode: Episode) -> bool:
        return episode.outcome == "failure"

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        fa = analyse_failure(episode)
        if fa is None:
            return []
        fields = {"failure_pattern": fa.failure_pattern, "root_cause": fa.root_cause,
                  "corrective_strategy": fa.corrective_strategy, "detection_signal": fa.detection_signal}
        text = insight_text(episode.task, fa.failure_pattern, fa.root_cause, fa.corrective_strategy,
                            fa.detection_signal)
        return [self.make_item(episode, text, fields, fa.source_ids, outcome="failure")]

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        if not episode.steps:
            return []
        ids = [s.id for s in episode.steps]

        def validate(pred: dspy.Prediction):
            ins = pred.insight
            if not ins.root_cause.strip() or not ins.corrective_strategy.strip():
                raise ValueError("root_cause and corrective_strategy must be non-empty")
            if ins.failing_step_id.strip().strip("[]") not in ids:
                raise ValueError(f"failing_step_id {ins.failing_step_id!r} is not a step id ({', '.join(ids[:8])})")
            return ins

        ins = self.predict(self.diagnose, validate, task=episode.task, trajectory=self.trajectory_text(episode))
        fields = {"failure_pattern": ins.failure_pattern, "root_cause": ins.root_cause,
                  "corrective_strategy": ins.corrective_strategy, "detection_signal": ins.detection_signal}
        text = insight_text(episode.task, ins.failure_pattern, ins.root_cause, ins.corrective_strategy,
                            ins.detection_signal)
        return [self.make_item(episode, text, fields, [ins.failing_step_id.strip().strip("[]")], outcome="failure")]
