"""The settings of a single quick chaos round in a test: checkpoints every half second,
the input in 64 chunks 0.06 s apart (still arriving when the crash point fires),
the round's lines kept out of the test's output."""

from __future__ import annotations

from pathlib import Path

from laminar_kafka.chaos import ChaosSettings


def quick_round(bootstrap: str, work_dir: Path, records: int) -> ChaosSettings:
    return ChaosSettings(
        bootstrap=bootstrap,
        records=records,
        checkpoint_interval_s=0.5,
        work_dir=work_dir,
        say=lambda _m: None,
        chunks=64,
        pause_s=0.06,
    )
