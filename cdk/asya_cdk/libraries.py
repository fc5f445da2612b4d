"""Python libraries installed for where code will import them, once per distinct set, kept in a cache.

Everything the mesh ships besides its own source is installed here: the sidecar layer's
dependencies, the gateway's, a Spark job's archive, and each actor's declared libraries, for the
function's Lambda platform at synth (`cdk synth`, `asya check`) and for this machine when the local
stack runs the same functions (`asya_local.runtime`). One installer does it all: `uv pip install
--target`, binary wheels only (nothing is compiled on this machine, and a package without a wheel for
the target fails here, not on AWS), for the target's platform and Python.

A build is identified by what decides its content: the requirement lines and the text of every
requirements file they name, the target, what is removed after the install, and the installer's
version. Its folder is `<cache>/libraries/<key>/`, written under a lock into a temporary folder and
renamed into place, so a half-written build is never used and two processes never build one key twice.
The cache is `$ASYA_CACHE`, else `$XDG_CACHE_HOME/asya-aws`, else `~/.cache/asya-aws`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from asya.variables import CACHE

# What changes the layout of a build; bumping it leaves every older build unused.
BUILD_FORMAT = 1
# uv names platforms by glibc: Lambda's Python 3.12+ runtimes and EMR Serverless 7 run on Amazon Linux
# 2023 (glibc 2.34), so any wheel built for glibc 2.34 or older runs there.
LINUX_PLATFORMS = {"arm64": "aarch64-manylinux_2_34", "x86_64": "x86_64-manylinux_2_34"}
_INCLUDES = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s+|=)(\S+)")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class LibrariesError(RuntimeError):
    """The installer could not install a set of libraries; the message says which and why."""


def normalized(name: str) -> str:
    """A distribution's name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def cache_root() -> Path:
    explicit = CACHE.read(os.environ)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "asya-aws"


@dataclass(frozen=True)
class Target:
    """Where the libraries will be imported: a Linux platform and Python (`platform`, uv's name for it),
    or this machine's own interpreter (`platform` None)."""

    python: str
    platform: str | None = None

    @staticmethod
    def linux(architecture: str, python: str) -> Target:
        return Target(python, LINUX_PLATFORMS[architecture])

    @staticmethod
    def this_machine() -> Target:
        return Target(f"{sys.version_info.major}.{sys.version_info.minor}")

    def describe(self) -> str:
        return f"Python {self.python} on {self.platform or 'this machine'}"


@dataclass(frozen=True)
class Requirements:
    """What to install: requirement lines (pip's syntax) and requirements files, and where they were
    declared (`source`, a field or a file, for messages)."""

    lines: tuple[str, ...] = ()
    files: tuple[Path, ...] = ()
    source: str = ""

    def __bool__(self) -> bool:
        return bool(self.lines or self.files)

    def __add__(self, other: Requirements) -> Requirements:
        return Requirements(self.lines + other.lines, self.files + other.files, self.source or other.source)

    def named(self) -> frozenset[str]:
        """The distributions these name directly (normalized), from the lines and the files' own lines."""
        texts = [
            *self.lines,
            *(line for file in self.files for _, text in _file_texts(file) for line in text.splitlines()),
        ]
        found = (_NAME.match(line.split("#", 1)[0]) for line in texts if not line.lstrip().startswith("-"))
        return frozenset(normalized(match.group(1)) for match in found if match)

    def fingerprint(self) -> list[str]:
        """The lines, and the name and text of every file (and every file those include), in order."""
        return [*self.lines, *(f"{name}\n{text}" for file in self.files for name, text in _file_texts(file))]


def _file_texts(file: Path, seen: frozenset[Path] = frozenset()) -> Iterator[tuple[str, str]]:
    """A requirements file's name and text, then those of the files its `-r`/`-c` lines name (relative
    to it)."""
    resolved = file.resolve()
    if resolved in seen:
        return
    try:
        text = resolved.read_text()
    except OSError as exc:
        raise LibrariesError(f"{file}: cannot read: {exc.strerror}") from None
    yield resolved.name, text
    for line in text.splitlines():
        included = _INCLUDES.match(line)
        if included:
            yield from _file_texts(resolved.parent / included.group(1), seen | {resolved})


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    size: int  # bytes of its files inside the build


@dataclass(frozen=True)
class Build:
    """One set of libraries to install. After the install, distributions named in `without` are removed
    (their own files only), and so are those in `without_versions` at exactly that version (the same
    build as one already beside it). `no_deps`: only what the requirements name, not their dependencies."""

    requirements: Requirements
    target: Target
    without: frozenset[str] = frozenset()
    without_versions: frozenset[tuple[str, str]] = frozenset()
    no_deps: bool = False

    def key(self) -> str:
        described = {
            "format": BUILD_FORMAT,
            "installer": installer_version(),
            "requirements": self.requirements.fingerprint(),
            "target": [self.target.python, self.target.platform],
            "without": sorted(self.without),
            "without_versions": sorted(self.without_versions),
            "no_deps": self.no_deps,
        }
        return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Installed:
    """A finished build: its folder and the distributions in it (normalized name → `Distribution`)."""

    path: Path
    distributions: dict[str, Distribution] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return folder_size(self.path)

    def versions(self) -> frozenset[tuple[str, str]]:
        return frozenset((name, d.version) for name, d in self.distributions.items())


def installer() -> str:
    from uv import find_uv_bin

    return str(find_uv_bin())


def installer_version() -> str:
    return metadata.version("uv")


def install(build: Build, cache: Path | None = None) -> Installed:
    """The build's folder, installed now unless the cache already holds it."""
    if not build.requirements:
        raise ValueError("nothing to install")
    folder = _folder(build, cache)
    cached_folder(folder, lambda staging: _install_into(build, staging))
    return _installed(folder)


def installed(build: Build, cache: Path | None = None) -> Installed | None:
    """The build's folder if the cache holds it already, None if not: for what may look but not wait
    for an install (`asya check` importing handlers where `asya up` would run them)."""
    folder = _folder(build, cache)
    return _installed(folder) if folder.exists() else None


def _folder(build: Build, cache: Path | None) -> Path:
    return (cache or cache_root()) / "libraries" / build.key()


def _installed(folder: Path) -> Installed:
    manifest = folder.with_name(f"{folder.name}.json")
    if not manifest.exists():  # what is in the folder, measured once
        written = manifest.with_name(f"{manifest.name}.{os.getpid()}")
        written.write_text(json.dumps({name: vars(d) for name, d in _distributions(folder).items()}))
        written.replace(manifest)
    recorded = json.loads(manifest.read_text())
    return Installed(folder, {name: Distribution(**fields) for name, fields in recorded.items()})


def cached_folder(folder: Path, make: Callable[[Path], None]) -> Path:
    """`folder`, made by `make(staging)` unless it is already there. Made under a lock into a staging
    folder renamed into place, so a half-made folder is never used and two processes never make one
    folder twice."""
    if folder.exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _locked(folder.with_name(f"{folder.name}.lock")):
        if not folder.exists():
            staging = folder.with_name(f"{folder.name}.partial")
            shutil.rmtree(staging, ignore_errors=True)
            try:
                make(staging)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            staging.rename(folder)
    return folder


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install_into(build: Build, staging: Path) -> None:
    # no uv configuration file changes a build (its key would not show it); UV_* variables (a private
    # index, say) still apply
    command = [installer(), "pip", "install", "--quiet", "--no-config", "--target", str(staging)]
    command += ["--only-binary", ":all:"]
    command += ["--python", sys.executable, "--python-version", build.target.python]
    if build.target.platform is not None:
        command += ["--python-platform", build.target.platform]
    if build.no_deps:
        command.append("--no-deps")
    for file in build.requirements.files:
        command += ["--requirement", str(file)]
    command += list(build.requirements.lines)
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        said = "\n".join(line for line in result.stderr.strip().splitlines() if line.strip())
        raise LibrariesError(
            f"{build.requirements.source or 'libraries'}: cannot install for {build.target.describe()} "
            f"(binary wheels only):\n{said}"
        )
    removed = {name for name, d in _distributions(staging).items() if (name, d.version) in build.without_versions}
    remove_distributions(staging, build.without | removed)


def _distributions(folder: Path) -> dict[str, Distribution]:
    found = {}
    for distribution in metadata.distributions(path=[str(folder)]):
        name = normalized(distribution.metadata["Name"])
        size = sum(file.stat().st_size for file in _own_files(folder, distribution) if file.is_file())
        found[name] = Distribution(distribution.metadata["Name"], distribution.version, size)
    return dict(sorted(found.items()))


def _own_files(folder: Path, distribution: metadata.Distribution) -> list[Path]:
    """A distribution's files inside `folder` (a script's entry may point outside it)."""
    files = [(folder / str(file)).resolve() for file in distribution.files or []]
    return [file for file in files if folder.resolve() in file.parents]


def remove_distributions(folder: Path, names: Iterable[str]) -> None:
    """Delete what was installed of these distributions (normalized names), and folders left empty."""
    wanted = {normalized(name) for name in names}
    found = [d for d in metadata.distributions(path=[str(folder)]) if normalized(d.metadata["Name"]) in wanted]
    files = [file for distribution in found for file in _own_files(folder, distribution)]
    for file in files:
        file.unlink(missing_ok=True)
    inside = folder.resolve()
    parents = {parent for file in files for parent in file.parents if inside in parent.parents}
    for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()


# What an interpreter compiled in a kept folder (a local stack compiles its workers' folders,
# `asya_local.bytecode`): this machine's, never shipped nor counted in what a function unzips to.
BYTECODE = ("__pycache__", "*.pyc")


def folder_size(folder: Path, ignore: Iterable[str] = ()) -> int:
    """Bytes of every file under `folder` (what it unzips to), leaving out bytecode and the paths
    `ignore` matches."""
    ignored = shutil.ignore_patterns(*BYTECODE, *ignore)
    total = 0
    for directory, subdirectories, files in os.walk(folder):
        skip = ignored(directory, [*subdirectories, *files])
        subdirectories[:] = [name for name in subdirectories if name not in skip]
        total += sum(os.path.getsize(os.path.join(directory, name)) for name in files if name not in skip)
    return total


def copy_into(source: Path, destination: Path, ignore: Iterable[str] = ()) -> None:
    """`source`'s content into `destination` (which may exist), as hard links where the file system
    allows (a cached build is never changed in place, so sharing its files is safe), without bytecode."""
    shutil.copytree(
        source,
        destination,
        ignore=shutil.ignore_patterns(*BYTECODE, *ignore),
        copy_function=_link_or_copy,
        dirs_exist_ok=True,
        symlinks=True,
    )


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)
