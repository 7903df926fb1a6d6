"""How a pipeline runs: its stages, and the tasks of each stage."""

from laminar_kafka.plan.stages import InternalTopic, Stage, StagePlan, plan_stages
from laminar_kafka.plan.tasks import TaskLayout, lay_out_tasks

__all__ = ["InternalTopic", "Stage", "StagePlan", "TaskLayout", "lay_out_tasks", "plan_stages"]
