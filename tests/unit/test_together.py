"""`asya.together`: independent calls made at once, their results in order, an error raised only once
every call has finished (none left running behind the hop)."""

from __future__ import annotations

import functools
import threading
import time

import pytest

from asya.together import together


def test_results_come_back_in_order_and_the_calls_overlap() -> None:
    meeting = threading.Barrier(4, timeout=10)  # broken unless all four calls are under way at once

    def call(value: int) -> int:
        meeting.wait()
        return value

    assert together([functools.partial(call, value) for value in range(4)]) == [0, 1, 2, 3]


def test_one_call_runs_in_the_callers_thread() -> None:
    assert together([threading.get_ident]) == [threading.get_ident()]
    assert together([]) == []


def test_an_error_is_raised_after_every_call_finished() -> None:
    finished: list[str] = []

    def fails() -> None:
        raise RuntimeError("throttled")

    def slow() -> None:
        time.sleep(0.05)
        finished.append("slow")

    with pytest.raises(RuntimeError, match="throttled"):
        together([fails, slow])
    assert finished == ["slow"]
