"""Events posted by actors outside the mesh (`POST /mesh/{id}/events`): a status the task's record
takes if it moves the task forward, or a fly event published on the task's channel (FLY's fast lane,
`asya.fly_channel`), or appended to its live log when the mesh logs FLY events."""

from __future__ import annotations

from typing import Any

from asya.fly_channel import ChannelPublisher, EventTooLargeError, channel_of
from asya.live import FLY, EventLog, EventsNotAppendedError
from asya.task_record import TERMINAL, Report, progress_of
from asya.task_store import TaskStore
from asya_gateway.bodies import as_json
from asya_gateway.task_error import TaskError

# A FLY event is one item of the events table (at most 400 KB, with its keys); the watcher gets it whole.
MAX_FLY_BYTES = 256 * 1024


def apply_event(
    tasks: TaskStore, events: EventLog, item: dict[str, Any], event: dict[str, Any], fly: ChannelPublisher | None
) -> bool:
    """A status or fly event from an actor outside the mesh, for the task `item` (its record, which the
    caller may see). Returns whether it changed anything: a stale status (behind what the task already
    shows) is ignored, as docs/status.md requires."""
    task_id = item["id"]
    if event["type"] == FLY:
        as_json(event["data"], MAX_FLY_BYTES, "the fly event's data")
        data = {"id": task_id, "actor": event.get("actor"), "data": event["data"]}
        if fly is not None:
            _published(fly, task_id, data)
            return True
        try:
            events.append([(task_id, FLY, data)])
        except EventsNotAppendedError as exc:  # the poster hears it, and may send the event again
            raise TaskError(503, f"the event was not logged: {exc}") from exc
        return True
    status = event["status"]
    if status in TERMINAL:
        if item.get("status") in TERMINAL:
            return False
        details = {"reason": event.get("reason"), "error": event.get("error"), "result": event.get("result")}
        details["actor"] = event.get("actor")
        root_id, parent_id = item.get("root_id") or task_id, item.get("parent_id")
        tasks.finish(task_id, root_id, status, details, parent_id=parent_id, bucket=item.get("fan_bucket"))
        return True
    route = item.get("route") or {"prev": [], "curr": event.get("actor") or "", "next": []}
    progress = event.get("progress")
    report = Report(
        task_id=task_id,
        actor=event.get("actor") or item.get("actor") or "",
        route=route,
        phase=event.get("phase") or "processing",
        progress=float(progress) if progress is not None else progress_of(route),
        attempt=int(item.get("attempt", 1)),
    )
    return tasks.report(report)


def _published(fly: ChannelPublisher, task_id: str, data: dict[str, Any]) -> None:
    """On the task's channel, now: a 413 over AppSync's size, a 503 if the API did not take it (the
    poster may send it again)."""
    try:
        fly.send(channel_of(task_id), data)
    except EventTooLargeError as exc:
        raise TaskError(413, f"the fly event: {exc}") from exc
    except Exception as exc:  # whatever kept it from the channel: the poster hears it
        raise TaskError(503, f"the event was not published: {exc}") from exc
