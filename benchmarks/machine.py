"""The machine a benchmark ran on, and how busy it was: printed beside every figure.

A figure reproduces only on a like machine, so each run records the CPU
(model, cores, MHz and governor where readable), memory, the Python and the
Kafka client versions, the broker's version when known, the load average at
the start and at the end, and what the CPUs did in between, from
`/proc/stat`: the share of time stolen by the hypervisor (steal) and the
share busy. Steal and the load at the end are what mark a noisy machine: a
run whose CPUs were taken away part of the time measures the neighbours too.
Everything unreadable (another OS, no cpufreq) is left out, never guessed.
"""

from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

__all__ = [
    "CpuTimes",
    "Machine",
    "MachineRun",
    "cpu_share",
    "parse_cpu_times",
    "parse_cpuinfo",
    "parse_throttled_s",
    "read_cpu_times",
    "read_machine",
]

_CPUFREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq")


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate `cpu` line of /proc/stat, in clock ticks."""

    busy: int
    idle: int
    steal: int

    @property
    def total(self) -> int:
        return self.busy + self.idle + self.steal


def parse_cpu_times(stat: str) -> CpuTimes | None:
    """The first line of /proc/stat ("cpu user nice system idle iowait irq softirq steal ...")."""
    for line in stat.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            ticks = [int(part) for part in parts[1:9]] + [0] * (8 - len(parts[1:9]))
            user, nice, system, idle, iowait, irq, softirq, steal = ticks
            return CpuTimes(user + nice + system + irq + softirq, idle + iowait, steal)
    return None


def read_cpu_times() -> CpuTimes | None:
    """This machine's CPU times now; None where /proc/stat is not there."""
    try:
        return parse_cpu_times(Path("/proc/stat").read_text())
    except OSError:
        return None


def cpu_share(start: CpuTimes | None, end: CpuTimes | None) -> tuple[float, float] | None:
    """(steal %, busy %) of all CPU time between two samples; None without both."""
    if start is None or end is None or end.total <= start.total:
        return None
    span = end.total - start.total
    return 100 * (end.steal - start.steal) / span, 100 * (end.busy - start.busy) / span


def parse_cpuinfo(text: str) -> tuple[str, float | None]:
    """The CPU model name and the mean "cpu MHz" of /proc/cpuinfo ("" and None if absent)."""
    model, mhz = "", []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model", "Processor") and not model:
            model = value
        elif key == "cpu MHz":
            with contextlib.suppress(ValueError):
                mhz.append(float(value))
    return model, (sum(mhz) / len(mhz) if mhz else None)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _probe() -> tuple[float, float]:
    from benchmarks.cpu_probe import probe_us_per_record  # fastavro: only when probing

    probe = probe_us_per_record()
    return probe.wall_us, probe.cpu_us


def _memory_gib() -> float | None:
    for line in _read(Path("/proc/meminfo")).splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 2**20
    return None


def _versions() -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        import fastavro
        from fastavro import read

        # The pure-Python fallback decodes several times slower than the compiled core.
        compiled = read.reader.__module__ == "fastavro._read"
        out["fastavro"] = fastavro.__version__ + ("" if compiled else " (pure Python)")
    except ImportError:
        pass
    try:
        import confluent_kafka

        client = confluent_kafka.version()  # a (text, number) pair in older releases
        out["confluent_kafka"] = client if isinstance(client, str) else client[0]
        out["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return out


@dataclass(frozen=True)
class Machine:
    """What a run ran on (fixed for the run)."""

    cpu_model: str
    cores: int
    cpu_mhz: float | None
    governor: str
    memory_gib: float | None
    python: str
    fastavro: str
    confluent_kafka: str
    librdkafka: str
    broker: str

    def describe(self) -> str:
        mhz = "" if self.cpu_mhz is None else f" at {self.cpu_mhz:,.0f} MHz"
        governor = f" ({self.governor})" if self.governor else ""
        memory = "" if self.memory_gib is None else f", {self.memory_gib:.1f} GiB"
        broker = f", broker {self.broker}" if self.broker else ""
        return (
            f"{self.cpu_model or 'unknown CPU'}, {self.cores} cores{mhz}{governor}{memory};"
            f" {self.python}; fastavro {self.fastavro or '-'},"
            f" confluent-kafka {self.confluent_kafka or '-'},"
            f" librdkafka {self.librdkafka or '-'}{broker}"
        )


def read_machine(broker: str = "") -> Machine:
    """This machine; `broker` is the Kafka broker's version where the caller knows it."""
    model, mhz = parse_cpuinfo(_read(Path("/proc/cpuinfo")))
    versions = _versions()
    return Machine(
        cpu_model=model or platform.processor() or platform.machine(),
        cores=os.cpu_count() or 0,
        cpu_mhz=mhz,
        governor=_read(_CPUFREQ / "scaling_governor"),
        memory_gib=_memory_gib(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        fastavro=versions.get("fastavro", ""),
        confluent_kafka=versions.get("confluent_kafka", ""),
        librdkafka=versions.get("librdkafka", ""),
        broker=broker,
    )


def parse_throttled_s(cpu_stat: str) -> float | None:
    """Seconds a cgroup's CPU quota held it back: `throttled_usec` (cgroup v2) or
    `throttled_time` (v1, ns) of its cpu.stat; None when neither is there."""
    for line in cpu_stat.splitlines():
        key, _, value = line.partition(" ")
        if key == "throttled_usec":
            return int(value) / 1e6
        if key == "throttled_time":
            return int(value) / 1e9
    return None


def read_throttled_s() -> float | None:
    """This process's cgroup's throttled seconds so far (v2, else v1); None if unreadable."""
    for path in (Path("/sys/fs/cgroup/cpu.stat"), Path("/sys/fs/cgroup/cpu/cpu.stat")):
        found = parse_throttled_s(_read(path))
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class MachineRun:
    """The machine and how busy it was over one run: load at both ends, steal and busy %,
    cgroup throttling, and the CPU probe (`benchmarks.cpu_probe`) at both ends."""

    machine: Machine
    load_start: float
    load_end: float | None = None
    steal_pct: float | None = None
    busy_pct: float | None = None
    throttled_s: float | None = None
    probe_start_us: float | None = None
    probe_end_us: float | None = None
    probe_cpu_start_us: float | None = None
    probe_cpu_end_us: float | None = None

    @classmethod
    def begin(cls, broker: str = "", *, probe: bool = True) -> tuple[MachineRun, CpuTimes | None]:
        """The run's first half and the CPU sample to `end` it with."""
        wall, cpu = _probe() if probe else (None, None)
        started = cls(
            read_machine(broker),
            os.getloadavg()[0],
            throttled_s=read_throttled_s(),
            probe_start_us=wall,
            probe_cpu_start_us=cpu,
        )
        return started, read_cpu_times()

    def end(self, started: CpuTimes | None) -> MachineRun:
        share = cpu_share(started, read_cpu_times())
        steal, busy = (None, None) if share is None else share
        before, after = self.throttled_s, read_throttled_s()
        wall, cpu = (None, None) if self.probe_start_us is None else _probe()
        return replace(
            self,
            load_end=os.getloadavg()[0],
            steal_pct=steal,
            busy_pct=busy,
            throttled_s=None if before is None or after is None else after - before,
            probe_end_us=wall,
            probe_cpu_end_us=cpu,
        )

    def line(self) -> str:
        """ "machine: <CPU, versions>; load 0.4 -> 1.2, steal 0.3%, busy 71%, throttled 0.0 s,
        probe 4.30 -> 4.41 µs/record (cpu 4.28 -> 4.31)" (`benchmarks.cpu_probe`)."""

        def pct(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f}%"

        def num(value: float | None, digits: int) -> str:
            return "-" if value is None else f"{value:.{digits}f}"

        return (
            f"machine: {self.machine.describe()}; load {self.load_start:.1f} ->"
            f" {num(self.load_end, 1)}, steal {pct(self.steal_pct)}, busy {pct(self.busy_pct)},"
            f" throttled {num(self.throttled_s, 1)} s, probe {num(self.probe_start_us, 2)} ->"
            f" {num(self.probe_end_us, 2)} µs/record (cpu {num(self.probe_cpu_start_us, 2)}"
            f" -> {num(self.probe_cpu_end_us, 2)})"
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
