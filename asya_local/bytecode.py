"""The folders the local workers import from, compiled once, before the first worker starts.

Every local execution environment is a new interpreter (`python -S`, `asya_local.runtime`) importing
boto3, pydantic, Powertools and the sidecar from the folders kept in the cache. Python keeps what it
compiles on import only where it may write bytecode: where `PYTHONDONTWRITEBYTECODE` is set (CI
machines often set it), every worker compiled every one of those modules from source again, about half
of its start, twenty times over for a stack of twenty functions. On Lambda the runtime's own SDK is
compiled, and the function's code compiles in its init; locally all of it is compiled ahead, since what
a worker's start costs here is the developer's wait, not a model of Lambda's cold start
(`bench/cold_start.py` measures that).

What is compiled stays out of what is deployed: every asset excludes `__pycache__` and `*.pyc`.
Compiling is best effort: a folder that cannot be written (a read-only cache) is imported as before.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

MARK = f".compiled-{sys.implementation.cache_tag}"  # this interpreter's; another one compiles again


def compiled(folders: Iterable[Path]) -> None:
    """Compile the folders' modules for this interpreter, on every core, unless an earlier start has.
    `compileall` runs in a process of its own: its workers are forked, and this one runs threads. A
    module that does not compile (a library's Python 2 example) is the import's to report, if anything
    imports it; it is not tried again at every start."""
    todo = [folder for folder in dict.fromkeys(folders) if not (folder / MARK).exists()]
    if not todo:
        return
    command = [sys.executable, "-m", "compileall", "-qq", "-j", "0", *map(str, todo)]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    for folder in todo:
        with contextlib.suppress(OSError):
            (folder / MARK).touch()
