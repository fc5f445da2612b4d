"""docs/testing.md shows an actor author how to test: its Python examples run here as they are
written, so the page cannot drift from what works. A test that takes `asya_mesh` gets the review
example's mesh in one process, as the fixture would give it; the one that takes `asya_stack` is the
scaffold's own, run from an installed wheel (tests/integration/test_installed_package.py)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from asya_local.testing import MeshHarness

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
REVIEWS = ROOT / "examples" / "reviews" / "mesh.yaml"


def page_tests() -> list[tuple[str, Callable[..., Any]]]:
    """Every `test_*` function the page's Python blocks define, each block run in a namespace of its own."""
    found = []
    for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S):
        namespace: dict[str, Any] = {"__name__": "docs_testing"}
        exec(compile(block, str(PAGE), "exec"), namespace)  # the project's own page, run as written
        found += [(name, value) for name, value in namespace.items() if name.startswith("test_")]
    return found


def test_the_page_shows_a_test_at_every_step() -> None:
    asked = [tuple(inspect.signature(test).parameters) for _, test in page_tests()]
    assert asked == [(), (), ("asya_mesh",), ("asya_mesh",), ("asya_stack",)]


@pytest.mark.parametrize(("name", "test"), page_tests(), ids=[name for name, _ in page_tests()])
def test_an_example_of_the_page_passes(name: str, test: Callable[..., Any]) -> None:
    if "asya_stack" in inspect.signature(test).parameters:
        pytest.skip("the local stack's example is the scaffold's test, run from an installed wheel")
    if "asya_mesh" in inspect.signature(test).parameters:
        with MeshHarness(REVIEWS) as mesh:
            test(mesh)
    else:
        test()
