"""Make moto's X-Ray refuse the segments X-Ray refuses (`apply_segment_check()`) and find traces by an
annotation (`apply_annotation_filter()`): both patch moto 5.2.5 in place.

X-Ray keeps a segment only under a trace id of its form, `1-<8 hex digits>-<24 hex digits>`, whose first
8 digits are a time of the last 30 days, with a 16-digit segment id (and parent id, if it names one), a
name of up to 200 letters, digits, spaces and `_.:/%&#=+-@` or a backslash, a start time, and an end time or
`in_progress`, in a document of at most 64 kB; anything else comes back in `UnprocessedTraceSegments`.
moto keeps whatever parses as JSON, so a mesh that made trace ids from random W3C ids
(`asya.tracecontext` makes them from the clock), or named a segment for an actor X-Ray refuses, would
see its traces locally and never on AWS. The error codes are the endpoint's own: X-Ray documents none.

`GetTraceSummaries` answers the one filter expression the mesh sends, a trace's annotation
(`annotation.task_id = "<id>"`: `asya trace` finds a task's trace so on AWS, where a day of a busy
mesh's traces would not be listed whole); moto refuses every filter. Any other expression is refused
here by name, so a command that would rely on more of X-Ray's filter language fails locally first.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from moto.core.exceptions import AWSError
from moto.xray.exceptions import BadSegmentException
from moto.xray.models import SegmentCollection, XRayBackend

TRACE_ID = re.compile(r"^1-([0-9a-f]{8})-[0-9a-f]{24}$")
SEGMENT_ID = re.compile(r"^[0-9a-f]{16}$")
NAME = re.compile(r"^[\w\s.:/%&#=+\\@-]{1,200}$")  # X-Ray's segment names: `\w` is Unicode's letters and digits
KEPT_SECONDS = 30 * 86_400  # X-Ray refuses a trace whose id's time is older
MAX_DOCUMENT_BYTES = 64 * 1024
_ORIGINAL_PROCESS = XRayBackend.process_segment
_ORIGINAL_SUMMARY = SegmentCollection.summary
ANNOTATION_FILTER = re.compile(r'^\s*annotation\.(\w+)\s*=\s*"([^"\\]*)"\s*$')


def refusal(document: str, now: float | None = None) -> BadSegmentException | None:
    """Why X-Ray would not keep this segment document, or None if it would."""
    try:
        data = json.loads(document)
    except ValueError:
        return None  # moto's own answer: JSONFormatError
    if not isinstance(data, dict):
        return None
    segment_id = data.get("id")
    if len(document.encode()) > MAX_DOCUMENT_BYTES:
        return BadSegmentException(segment_id, "DocumentTooLarge", f"a segment is at most {MAX_DOCUMENT_BYTES} bytes")
    if not isinstance(segment_id, str) or not SEGMENT_ID.match(segment_id):
        return BadSegmentException(None, "InvalidSegmentId", "a segment id is 16 hexadecimal digits")
    found = TRACE_ID.match(str(data.get("trace_id", "")))
    if found is None:
        return BadSegmentException(segment_id, "InvalidTraceId", "a trace id is 1-<8 hex digits>-<24 hex digits>")
    if int(found.group(1), 16) < (time.time() if now is None else now) - KEPT_SECONDS:
        return BadSegmentException(segment_id, "InvalidTraceId", "the trace id's time is more than 30 days ago")
    return _field_refusal(data, segment_id)


def _field_refusal(data: dict[str, Any], segment_id: str) -> BadSegmentException | None:
    """Why X-Ray would not keep a segment whose ids are right: its required fields."""
    parent = data.get("parent_id")
    if parent is not None and not (isinstance(parent, str) and SEGMENT_ID.match(parent)):
        return BadSegmentException(segment_id, "InvalidParentId", "a parent id is 16 hexadecimal digits")
    if not (isinstance(data.get("name"), str) and NAME.match(data["name"])):
        allowed = "1 to 200 letters, digits, spaces, backslashes and _.:/%&#=+-@"
        return BadSegmentException(segment_id, "InvalidName", f"a name is {allowed}")
    if not _is_time(data.get("start_time")):
        return BadSegmentException(segment_id, "MissingStartTime", "a segment has a start_time (epoch seconds)")
    if not (_is_time(data.get("end_time")) or data.get("in_progress") is True):
        return BadSegmentException(segment_id, "MissingEndTime", "a segment has an end_time, or is in_progress")
    return None


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _process_segment(self: XRayBackend, doc: Any) -> None:
    error = refusal(doc) if isinstance(doc, str) else None
    if error is not None:
        raise error
    _ORIGINAL_PROCESS(self, doc)


def _summary(self: SegmentCollection, start_time: Any, end_time: Any, filter_expression: Any = None) -> dict[str, Any]:
    """moto's summaries, of the traces one of whose segments has the annotation the filter names."""
    if filter_expression is None:
        return _ORIGINAL_SUMMARY(self, start_time, end_time)
    wanted = ANNOTATION_FILTER.match(str(filter_expression))
    if wanted is None:
        raise AWSError(
            'the local endpoint reads only filter expressions of the form annotation.<key> = "<value>"',
            exception_type="InvalidRequestException",
            status=400,
        )
    key, value = wanted.groups()
    found = _ORIGINAL_SUMMARY(self, start_time, end_time)
    kept = [summary for summary in found["TraceSummaries"] if _annotated(self, summary["Id"], key, value)]
    return {**found, "TraceSummaries": kept, "TracesProcessedCount": len(kept)}


def _annotated(collection: SegmentCollection, trace_id: str, key: str, value: str) -> bool:
    segments = collection._traces.get(trace_id, {}).get("segments", [])  # moto keeps a trace's segments only there
    return any(str(json.loads(segment.raw).get("annotations", {}).get(key)) == value for segment in segments)


def apply_segment_check() -> None:
    XRayBackend.process_segment = _process_segment  # type: ignore[method-assign]


def apply_annotation_filter() -> None:
    SegmentCollection.summary = _summary  # type: ignore[method-assign]
