"""docs/testing.md shows an actor author how to test: its Python examples run here as they are
written, so the page cannot drift from what works."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def page_tests() -> list[tuple[str, Callable[[], Any]]]:
    """Every `test_*` function the page's Python blocks define, each block run in a namespace of its own."""
    found = []
    for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S):
        namespace: dict[str, Any] = {"__name__": "docs_testing"}
        exec(compile(block, str(PAGE), "exec"), namespace)  # the project's own page, run as written
        found += [(name, value) for name, value in namespace.items() if name.startswith("test_")]
    return found


def test_the_page_shows_a_test_at_every_step_it_runs_here() -> None:
    assert len(page_tests()) == 3


@pytest.mark.parametrize(("name", "test"), page_tests(), ids=[name for name, _ in page_tests()])
def test_an_example_of_the_page_passes(name: str, test: Callable[[], Any]) -> None:
    test()
