"""`python -m bench.container_actor`, briefly: the consumer on a local endpoint scores the inference
example's reviews as the model does, says which device it used and how fast, and runs a hop longer
than its queue's visibility timeout once."""

from __future__ import annotations

import argparse

import pytest

from bench.container_actor import run, show

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_the_bench_reports_the_device_the_rate_and_one_run_of_the_long_hop(capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(hops=5, reviews=4, batch=1, concurrency=1, long=3.0, visibility=1)

    report = run(args)
    show(report)

    assert (report.device, report.hops, report.agreeing, report.long_runs) == ("cpu", 5, 5, 1)
    printed = capsys.readouterr().out
    assert "score    device: cpu" in printed
    assert f"5 hops at {report.hops_per_second:.1f} hops/s" in printed
    assert "a 3 s hop on a queue with a 1 s visibility timeout started 1 time(s)" in printed
