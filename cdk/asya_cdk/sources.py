"""The code and the pins a mesh ships, found where this installation keeps them.

The same packages are laid out twice: in a checkout of the project each lives in the folder of the
artifact it ships as (`sidecar_layer/asya`, `lambdas/asya_crew`, ...), and in an installed wheel they
are all side by side in `site-packages`, next to every other library of the user's environment. So
nothing here assumes a layout: a package is found where Python imports it from, and the pins come
from the installed distribution's metadata, which `pip install` and `pip install -e` both write.

Functions and import paths must hold only what they ship, never a whole `site-packages`: `shipped`
makes a folder of just the named packages, copied once per content into the cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from asya.names import DISTRIBUTION
from asya_cdk.libraries import BYTECODE, cache_root, cached_folder

SOURCE_IGNORED = BYTECODE


class SourcesError(RuntimeError):
    """The installation lacks a package or its metadata: the message says what to reinstall."""


def package_folder(package: str) -> Path:
    """The folder Python imports `package` from."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SourcesError(f"package {package} is not installed: reinstall {DISTRIBUTION}")
    return Path(next(iter(spec.submodule_search_locations)))


def shipped(*packages: str) -> Path:
    """A folder holding exactly `packages` (no caches), made once per their content: the code of a
    function, an entry of a local function's import path, a bundle's source."""
    folders = {package: package_folder(package) for package in packages}
    digest = hashlib.sha256()
    for package, folder in sorted(folders.items()):
        for file in _files(folder):
            digest.update(f"{package}/{file.relative_to(folder)}\0".encode())
            digest.update(file.read_bytes())

    def make(staging: Path) -> None:
        for package, folder in folders.items():
            shutil.copytree(folder, staging / package, ignore=shutil.ignore_patterns(*SOURCE_IGNORED))

    return cached_folder(cache_root() / "sources" / digest.hexdigest()[:32], make)


def _files(folder: Path) -> Iterable[Path]:
    return sorted(
        path
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


@cache
def _declared() -> tuple[Requirement, ...]:
    try:
        lines = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        raise SourcesError(f"{DISTRIBUTION} is not installed (pip install '{DISTRIBUTION}[local]')") from None
    return tuple(Requirement(line) for line in lines)


def requirements(extra: str | None = None) -> list[str]:
    """The installed distribution's pins: its own dependencies (no `extra`), or an extra's alone, as
    requirement lines without markers."""
    chosen = [requirement for requirement in _declared() if _wanted(requirement, extra)]
    if extra is not None and not chosen:
        raise SourcesError(f"{DISTRIBUTION} has no extra {extra!r}")
    return [_line(requirement) for requirement in chosen]


def _wanted(requirement: Requirement, extra: str | None) -> bool:
    if requirement.marker is None:
        return extra is None
    return extra is not None and requirement.marker.evaluate({"extra": extra})


def _line(requirement: Requirement) -> str:
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return f"{requirement.name}{extras}{requirement.specifier}"
