"""The `ASYA_*` variables the crew reads first (x-sink, x-sump, x-pause, x-resume; `asya_crew`): the crew's
table of `docs/configuration.md`. `asya.variables` gathers them with every other component's."""

from __future__ import annotations

from typing import Any

from asya.env_variable import Component, Variable, integer, text, text_or_none

_CREW = (Component.CREW,)

SUMP_TABLE = Variable(
    "ASYA_SUMP_TABLE",
    (Component.CREW, Component.GATEWAY),
    "the sump table: one item per message x-sump kept, for listing and redriving (x-sump and the gateway)",
    None,
    text_or_none,
)

RESULTS_BUCKET = Variable(
    "ASYA_RESULTS_BUCKET",
    (Component.CREW, Component.GATEWAY),
    "the bucket of results and x-sump records (required by the crew)",
    None,
    text_or_none,
)

SINK_HOOKS = Variable(
    "ASYA_SINK_HOOKS", _CREW, 'JSON `[{"actor": name, "phases": [...]}]`: the mesh\'s `sink_hooks`', "", text, "`[]`"
)

RESULTS_INLINE_MAX_BYTES = Variable(
    "ASYA_RESULTS_INLINE_MAX_BYTES",
    _CREW,
    "a final payload up to this many bytes of JSON is kept in the task record, not S3 "
    "(`results.inline_max_bytes`); 0: always S3",
    0,
    integer(0),
    "`0` (the mesh sets 4096)",
)

RESULTS_TTL = Variable(
    "ASYA_RESULTS_TTL_SECONDS",
    _CREW,
    "how long results are kept (`results.retention_days`): a task record that holds its result, if longer "
    "than its own TTL, and x-sump's items in the sump table",
    0,
    integer(0),
)

VARIABLES: tuple[Variable[Any], ...] = (
    SUMP_TABLE,
    RESULTS_BUCKET,
    SINK_HOOKS,
    RESULTS_INLINE_MAX_BYTES,
    RESULTS_TTL,
)
