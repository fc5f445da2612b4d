"""A task's trace in X-Ray: one segment per hop, sent at the end of the batch (docs/status.md, "Traces").

Lambda starts a trace of its own for each SQS batch, so its segments never make a task one trace.
The sidecar writes its own instead: a segment document per envelope (`asya.hop_trace`), under the
envelope's trace (`asya.tracecontext`: its W3C trace id is an X-Ray id too), whose parent is the hop
that sent it. Segment documents are small JSON, written here rather than through the X-Ray SDK, whose
recorder keeps one segment per thread and would have to be bent to hold ten hops of a batch at once.

`Segments` sends a batch's documents once it ends: on Lambda with active tracing to the X-Ray daemon
Lambda runs (`AWS_XRAY_DAEMON_ADDRESS`: a UDP datagram each, a header line and the document, as the
SDKs send them), elsewhere (the local stack, a Spark job) with `xray:PutTraceSegments`. Best effort:
a trace that loses a segment is no reason to send a task's envelope again.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from typing import Any

import orjson

from asya.clients import LazyClient
from asya.tracecontext import Span, xray_id

LOGGER = logging.getLogger(__name__)
DAEMON_VARIABLE = "AWS_XRAY_DAEMON_ADDRESS"
DAEMON_HEADER = b'{"format": "json", "version": 1}\n'
PUT_SEGMENTS_MAX = 50  # documents per PutTraceSegments call
Annotation = str | int | float | bool


def segment(
    span: Span,
    name: str,
    started: float,
    ended: float,
    annotations: Mapping[str, Annotation | None],
    *,
    error: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One segment document: `span` says where it sits in its trace, `annotations` what X-Ray indexes
    (a None left out), `metadata` anything else worth reading beside it (kept small: a segment is at
    most 64 kB, and every byte of it is the mesh owner's)."""
    document: dict[str, Any] = {
        "name": name,
        "id": span.span_id,
        "trace_id": xray_id(span.trace_id),
        "start_time": started,
        "end_time": max(ended, started),
        "annotations": {key: value for key, value in annotations.items() if value is not None},
    }
    if span.parent is not None:
        document["parent_id"] = span.parent
    if error:
        document["error"] = True
    if span.caller is not None:  # a trace X-Ray refuses, restarted here: its id is kept for a search
        document["annotations"]["caller_trace_id"] = span.caller
    if metadata:
        document["metadata"] = {"asya": dict(metadata)}
    return document


class Segments:
    """A batch's segment documents, sent together by `flush`."""

    client: LazyClient[Any] = LazyClient("xray")  # no boto3 stubs of X-Ray in the project

    def __init__(self, client: Any = None, daemon: str | None = None) -> None:
        self._client = client
        self.daemon = _udp_address(daemon) if daemon else None
        self.pending: list[dict[str, Any]] = []

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Segments:
        return cls(daemon=(os.environ if env is None else env).get(DAEMON_VARIABLE) or None)

    def add(self, document: dict[str, Any]) -> None:
        self.pending.append(document)

    def flush(self) -> None:
        documents, self.pending = self.pending, []
        if not documents:
            return
        try:
            if self.daemon is not None:
                self._to_daemon(documents, self.daemon)
            else:
                self._to_api(documents)
        except Exception as exc:  # noqa: BLE001 - a trace is worth no hop: logged, not raised
            LOGGER.warning("%d trace segment(s) not sent: %s", len(documents), exc)

    @staticmethod
    def _to_daemon(documents: list[dict[str, Any]], address: tuple[str, int]) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            for document in documents:
                udp.sendto(DAEMON_HEADER + orjson.dumps(document), address)

    def _to_api(self, documents: list[dict[str, Any]]) -> None:
        texts = [orjson.dumps(document).decode() for document in documents]
        for start in range(0, len(texts), PUT_SEGMENTS_MAX):
            answer = self.client.put_trace_segments(TraceSegmentDocuments=texts[start : start + PUT_SEGMENTS_MAX])
            unprocessed = answer.get("UnprocessedTraceSegments", [])
            if unprocessed:
                LOGGER.warning("X-Ray refused %d trace segment(s): %s", len(unprocessed), unprocessed[0])


def _udp_address(setting: str) -> tuple[str, int]:
    """The daemon's UDP address from `AWS_XRAY_DAEMON_ADDRESS`: `host:port`, or `tcp:h:p udp:h:p`."""
    parts = setting.split()
    chosen = next((part.removeprefix("udp:") for part in parts if part.startswith("udp:")), parts[0])
    host, _, port = chosen.rpartition(":")
    return host, int(port)
