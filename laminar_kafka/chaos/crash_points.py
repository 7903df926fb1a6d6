"""Which crash points a pipeline reaches, by name or all of them (for chaos rounds and
for runs in one process)."""

from __future__ import annotations

from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint


def pick_points(
    names: str, stages: int, file_sinks: bool = False, stateful: bool = True
) -> list[FaultPoint]:
    """Crash points by name, comma-separated; "all": every one the pipeline reaches
    (one of `stages` stages, writing files or not, keeping state or not)."""
    if names == "all":
        return [
            p
            for p in FaultPoint
            if (stages > 1 or not p.multi_stage)
            and (file_sinks or not p.file_sinks_only)
            and (stateful or not p.stateful_only)
            and not p.latest_start_only
        ]
    known = {p.value: p for p in FaultPoint}
    picked = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in picked if n not in known]
    if unknown:
        raise ConfigError(f"unknown crash points {unknown}: use {', '.join(known)} or 'all'")
    between = [n for n in picked if known[n].multi_stage and stages == 1]
    if between:
        raise ConfigError(
            f"crash point {between[0]} lies between stages, and this pipeline has one stage"
        )
    files = [n for n in picked if known[n].file_sinks_only and not file_sinks]
    if files:
        raise ConfigError(f"crash point {files[0]} needs a file sink, and this pipeline has none")
    stateless = [n for n in picked if known[n].stateful_only and not stateful]
    if stateless:
        raise ConfigError(f"crash point {stateless[0]} needs a step that keeps state")
    latest = [n for n in picked if known[n].latest_start_only]
    if latest:
        raise ConfigError(
            f"crash point {latest[0]} needs a run started with --from-checkpoint latest, "
            "and chaos rounds start without it"
        )
    return [known[n] for n in picked]
