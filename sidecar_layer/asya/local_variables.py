"""The `ASYA_*` variables the local stack's own processes read (`asya up`, the `asya` commands, the
tests), never a deployed function: the local table of `docs/configuration.md`. `asya.variables` gathers
them with every other component's."""

from __future__ import annotations

from typing import Any

from asya.env_variable import Component, Variable, flag, number, text_or_none

_LOCAL = (Component.LOCAL,)

LOCAL_IAM = Variable(
    "ASYA_LOCAL_IAM",
    _LOCAL,
    "`off` stops the local endpoint enforcing the functions' IAM policies (debugging only)",
    True,
    flag,
    "`on`",
)

LOCAL_SPEED_PATCHES = Variable(
    "ASYA_LOCAL_SPEED_PATCHES",
    _LOCAL,
    "`off` starts the local endpoint with moto's fidelity patches alone (`make conformance`: judging a new moto)",
    True,
    flag,
    "`on`",
)

LOCAL_BACKSTOP_SECONDS = Variable(
    "ASYA_LOCAL_BACKSTOP_SECONDS",
    _LOCAL,
    "how often the local stack runs scheduled functions (the gateway's backstop; every minute on AWS)",
    2.0,
    number(0.1),
    "`2`",
)

LOCAL_CONTAINER_COOLDOWN = Variable(
    "ASYA_LOCAL_CONTAINER_COOLDOWN_SECONDS",
    _LOCAL,
    "how long a container actor's queue has nothing visible or in flight before the local stack stops its "
    "consumers (on AWS, its `container.scale_in_cooldown`)",
    60.0,
    number(0.0),
    "`60`",
)

LOCAL_STATE = Variable(
    "ASYA_LOCAL_STATE",
    _LOCAL,
    "the state file of the local stack that `asya up` writes and every other command reads (where the "
    "stack runs, its gateway and API key)",
    None,
    text_or_none,
    "the nearest `.asya/local.json`, from the current folder up",
)

TOKEN = Variable(
    "ASYA_TOKEN",
    _LOCAL,
    "a bearer token the `asya` commands send a deployed mesh's gateway (`Authorization: Bearer`), for "
    "`gateway.auth: jwt`; `--token` takes its place",
    None,
    text_or_none,
    "none",
)

CACHE = Variable(
    "ASYA_CACHE",
    _LOCAL,
    "where installed libraries are kept, one folder per distinct set (the layer's, each actor's, for each "
    "platform), by `cdk synth`, `asya check` and `asya up`",
    None,
    text_or_none,
    "`$XDG_CACHE_HOME/asya-aws` or `~/.cache/asya-aws`",
)

VARIABLES: tuple[Variable[Any], ...] = (
    LOCAL_IAM,
    LOCAL_SPEED_PATCHES,
    LOCAL_BACKSTOP_SECONDS,
    LOCAL_CONTAINER_COOLDOWN,
    LOCAL_STATE,
    TOKEN,
    CACHE,
)
