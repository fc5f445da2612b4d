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

import compileall
import contextlib
import sys
from collections.abc import Iterable
from pathlib import Path

MARK = f".compiled-{sys.implementation.cache_tag}"  # this interpreter's; another one compiles again


def compiled(folders: Iterable[Path]) -> None:
    """Compile each folder's modules for this interpreter, unless an earlier start has."""
    for folder in dict.fromkeys(folders):
        mark = folder / MARK
        if mark.exists():
            continue
        # quiet=2: a module that does not compile (a library's Python 2 example) is the import's to report,
        # if anything imports it; it is not tried again at every start
        compileall.compile_dir(folder, quiet=2, workers=1)
        with contextlib.suppress(OSError):
            mark.touch()
