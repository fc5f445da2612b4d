"""Checks that look inside moto where one of the local endpoint's patches is applied, which no request
over HTTP can see (a race held open by a slowed read, what a kept parse decides), run in a child Python
that applies the patch: the tests' own process never runs patched moto (tests/conftest.py checks).

A check is a function of a test module, run with no argument; what it returns (JSON) comes back to
the test, which asserts on it.

    python -m tests.support.patched_moto <function applying a patch>... -- <module:check>...
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from asya_local.endpoint.patches import PATCHES

ROOT = Path(__file__).resolve().parents[2]
CHILD_SECONDS = 120


def run_patched(patches: Iterable[str], *checks: Callable[[], Any]) -> dict[Callable[[], Any], Any]:
    """What each check returned, run in order in one child Python with moto patched by `patches` (the
    functions of `asya_local.endpoint.patches.PATCHES` that apply them). A check that raises fails the
    caller with the child's traceback."""
    names = [f"{check.__module__}:{check.__qualname__}" for check in checks]
    command = [sys.executable, "-m", __name__, *patches, "--", *names]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=CHILD_SECONDS, check=False)
    if done.returncode != 0:
        raise AssertionError(f"the checks failed in the patched child:\n{done.stderr[-4000:]}")
    return dict(zip(checks, json.loads(done.stdout.splitlines()[-1]), strict=True))


def _check(name: str) -> Callable[[], Any]:
    module, _, function = name.partition(":")
    found: Callable[[], Any] = getattr(importlib.import_module(module), function)
    return found


def main(arguments: list[str]) -> None:
    wanted, names = set(arguments[: arguments.index("--")]), arguments[arguments.index("--") + 1 :]
    chosen = [patch for patch in PATCHES if patch.function in wanted]
    assert {patch.function for patch in chosen} == wanted, f"no such patch: {wanted}"
    for patch in chosen:
        patch.apply()
    print(json.dumps([_check(name)() for name in names]))


if __name__ == "__main__":
    main(sys.argv[1:])
