"""``task=judge_agreement``: the task (``task``) and its statistics (``stats``)."""

from harness.tasks.agreement.task import JudgeAgreement

__all__ = ["JudgeAgreement"]
