"""Pruners: a trial scored instance by instance (a dialogue at a time) stops early when Optuna's
pruner says so; a pruned trial keeps its partial outcomes and costs the share of instances it saw.

- ``names``      the pruners by name (``--pruner``): `PRUNERS`, `check_pruner`, `make_pruner`;
- ``instances``  what a pruner is told and what a stopped trial keeps: `InstanceReporter`, `staged`,
                 `partial_result`, `instance_of`.

May import: ``pipeline``, ``errors`` and Optuna (the bottom of ``optimizers``).
"""
from memarch.optimizers.pruners.instances import InstanceReporter, OnInstance, instance_of, partial_result, staged
from memarch.optimizers.pruners.names import PRUNERS, check_pruner, make_pruner

__all__ = ["InstanceReporter", "OnInstance", "PRUNERS", "check_pruner", "instance_of", "make_pruner",
           "partial_result", "staged"]
