"""asya: the core of the actor mesh on AWS, shipped as the sidecar Lambda layer.

The names a handler imports are here, at the top of the package (docs/public-api.md lists them and
what the rest of `asya` is): `asya.secret`, `asya.metrics`, `asya.state` (the actor's durable keys),
`asya.AbiError`, `asya.SecretError`, `asya.lambda_handler` (the sidecar, for tests and for functions
built by hand) and `asya.__version__`.
They load on first use (PEP 562), so `import asya` stays cheap: the sidecar imports `asya.*` modules on
every cold start, and Powertools, pydantic and boto3 load only when something asks for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_lambda_powertools import Metrics

    from asya import state
    from asya.abi import AbiError
    from asya.secret_reads import SecretError
    from asya.sidecar import lambda_handler
    from asya.startup import secret

    metrics: Metrics
    __version__: str

__all__ = ["AbiError", "SecretError", "lambda_handler", "metrics", "secret", "state"]

# Each public name and the module it lives in: imported the first time it is asked for, then kept.
_HOMES = {
    "AbiError": "asya.abi",
    "SecretError": "asya.secret_reads",
    "lambda_handler": "asya.sidecar",
    "secret": "asya.startup",
}
# What `__version__` says where no distribution is installed (a Lambda layer holds the packages, not
# their metadata): a valid PEP 440 version that sorts below every release and says it is unknown.
UNKNOWN_VERSION = "0+unknown"


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # the next look-up finds it without coming back here
        return value
    if name == "metrics":  # a new `Metrics` on each use, as Powertools' own are: they share one set
        from asya.telemetry import handler_metrics

        return handler_metrics()
    if name == "state":  # a module of its own (`from asya import state` imports it without coming here)
        return importlib.import_module("asya.state")
    if name == "__version__":
        globals()[name] = _installed_version()
        return globals()[name]
    raise AttributeError(f"module 'asya' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})


def _installed_version() -> str:
    """The installed asya-aws distribution's version: the one `asya --version` prints and every
    deployed stack records (its `asya:version` tag and `AsyaVersion` output)."""
    from importlib.metadata import PackageNotFoundError, version

    from asya.names import DISTRIBUTION

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN_VERSION
