"""A process tree's CPU over a span: children reaped within it count, the span is
read off the samples by interpolation."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks.tree_cpu import cpu_in_span, sample_tree_cpu


def test_the_span_is_read_off_the_samples_between_them() -> None:
    samples = [(10.0, 0), (11.0, 100), (12.0, 100), (13.0, 300)]
    ticks = os.sysconf("SC_CLK_TCK")
    assert cpu_in_span(samples, 10.5, 12.5) == pytest.approx(150 / ticks)
    assert cpu_in_span(samples, 11.0, 12.0) == 0
    assert cpu_in_span(samples, 9.0, 12.0) is None  # before the first sample
    assert cpu_in_span(samples, 11.0, 14.0) is None  # after the last
    assert cpu_in_span([], 1.0, 2.0) is None


def test_a_child_that_burned_cpu_and_was_reaped_counts_for_the_tree() -> None:
    burn = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    with sample_tree_cpu(os.getpid()) as tree:
        while not tree.samples:  # the sampler's samples give no notification
            time.sleep(0.01)
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", burn], check=True)  # reaped on return
        reaped = time.monotonic()
        while tree.samples[-1][0] < reaped:
            time.sleep(0.05)
    # Up to the first sample after the reap: the child's CPU is added whole at its reap,
    # and a span ending between two samples would count only part of that step.
    spent = cpu_in_span(tree.samples, start, tree.samples[-1][0])
    assert spent is not None and spent >= 0.45
