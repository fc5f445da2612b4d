"""One `ASYA_*` variable: its type, the parsers that turn its text into a value, and the error a bad one raises.

Every component's catalogue of variables (`asya.actor_variables`, `asya.crew_variables`, ...) declares
its variables with these, so a function with a bad environment fails the same way whichever reads it:
a `ConfigError` that names the variable to fix. Kept apart from the catalogues so that each of those
holds only what one component reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from asya.names import ACTOR_NAME

T = TypeVar("T")
PREFIX = "ASYA_"  # a mesh file's `environment` may not set a variable with it


class ConfigError(ValueError):
    """A configuration variable is missing or wrong; the message names the variable."""


class Component(StrEnum):
    """Who reads a variable: the tables of `docs/configuration.md`."""

    ACTOR = "actor"  # every actor's function (the sidecar), a Spark actor's dispatcher and collector included
    SPARK = "spark"  # a Spark actor's dispatcher and collector
    CONTAINER = "container"  # a container actor's consumer loop (`python -m asya.consumer`)
    CREW = "crew"  # x-sink, x-sump, x-pause, x-resume
    GATEWAY = "gateway"  # the gateway's API, stream and backstop functions
    LOCAL = "local"  # the local stack's own processes (`asya up`, the tests), never a deployed function


@dataclass(frozen=True)
class Variable(Generic[T]):
    """One variable: `read(env)` gives its typed value, the default when it is unset or empty."""

    name: str
    components: tuple[Component, ...]
    meaning: str
    default: T
    parse: Callable[[str, str], T]  # (name, raw text) -> value, or ConfigError naming the variable
    shown_default: str = ""  # the default as docs/configuration.md shows it

    def read(self, env: Mapping[str, str]) -> T:
        raw = env.get(self.name, "").strip()
        return self.parse(self.name, raw) if raw else self.default

    def require(self, env: Mapping[str, str]) -> T:
        """The value, which must be set."""
        if not env.get(self.name, "").strip():
            raise ConfigError(f"{self.name} is required")
        return self.read(env)

    @property
    def default_text(self) -> str:
        return self.shown_default or ("none" if self.default is None else f"`{self.default}`")


def require_all(env: Mapping[str, str], by: str, *needed: Variable[Any]) -> None:
    """Every variable in `needed` is set, or one `ConfigError` naming all that are not."""
    missing = [variable.name for variable in needed if not env.get(variable.name, "").strip()]
    if missing:
        raise ConfigError(f"{', '.join(missing)} required by {by}")


def text(_name: str, raw: str) -> str:
    return raw


def text_or_none(_name: str, raw: str) -> str | None:
    return raw


_NAME = re.compile(ACTOR_NAME)


def listed(raw: str) -> frozenset[str]:
    """The names of a comma-separated variable (`ASYA_JOINED_BY`, `ASYA_FLOW_VERSIONS`)."""
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def mesh_name(name: str, raw: str) -> str:
    if not _NAME.match(raw):
        raise ConfigError(
            f"{name}={raw!r} may only contain lower-case letters, digits and '-', starting with a letter or a "
            "digit, as the mesh file's names (it becomes a queue name)"
        )
    return raw


def number(minimum: float, maximum: float | None = None) -> Callable[[str, str], float]:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a number") from None
        if value < minimum:
            raise ConfigError(f"{name}={raw!r} must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{name}={raw!r} must be at most {maximum}")
        return value

    return parse


def integer(minimum: int) -> Callable[[str, str], int]:
    as_number = number(minimum)
    return lambda name, raw: int(as_number(name, raw))


def flag(name: str, raw: str) -> bool:
    value = raw.lower()
    if value not in ("0", "1", "true", "false", "on", "off", "yes", "no"):
        raise ConfigError(f"{name}={raw!r} must be true or false")
    return value in ("1", "true", "on", "yes")


def choice(*choices: str) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        if raw not in choices:
            raise ConfigError(f"{name} must be {' or '.join(repr(option) for option in choices)}, got {raw!r}")
        return raw

    return parse
