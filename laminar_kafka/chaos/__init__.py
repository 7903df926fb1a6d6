"""Chaos rounds: fault-injection runs that prove a pipeline's output exactly-once.

A round runs a pipeline as its own application on a real broker while its
input is produced, kills a worker task, the application or the broker (or
pauses a worker or the driver) with input in flight, shows the fault hit and
was recovered from, drains, and checks the committed output with the
workload's oracle. `ChaosRun` plays a seeded plan of rounds (`run`), each one a
`round`; the faults are in `kills`, `faults` and `driver_pause`, what proves
them in `evidence`, the inputs and oracles in `workloads`. `laminar-kafka chaos`
and `laminar-kafka demo` use it; the user's test kit is `laminar_kafka.testing`.
"""

from laminar_kafka.chaos.evidence import KillKind, RecoveryPath
from laminar_kafka.chaos.faults import FaultKind, parse_faults
from laminar_kafka.chaos.run import ChaosRun
from laminar_kafka.chaos.settings import ChaosSettings

__all__ = [
    "ChaosRun",
    "ChaosSettings",
    "FaultKind",
    "KillKind",
    "RecoveryPath",
    "parse_faults",
]
