"""ECS task scale-in protection while a task holds work (docs/containers.md, "Scale-in protection").

When its backlog drops, a service's desired count drops and ECS stops whichever task placement
picks, often one in the middle of a long hop: that hop is released at the stop timeout, runs again
from its start, and each release costs one of the queue's receives, so a long hop cut short often
enough ends in x-sump. A task protected through the ECS agent (`PUT $ECS_AGENT_URI/task-protection/
v1/state`) is not stopped by a scale-in or a deployment until its protection is cleared or lapses.

One protection state per task, however many consumer processes it runs: each process marks its
slot in `busy` (an array shared with the task's main process, `asya.consumer.__main__`) as holding
when a receive brings messages, and as idle from a moment (`LINGER_SECONDS`) after it settled them;
a thread of the main process follows the slots: protected while any is busy, cleared once none is.
Under a steady stream the next receive comes within that moment, so it costs one call when work
starts and one when the queue runs dry, plus a renewal each `ceil(limit / 60)` minutes of unbroken
work. Each call's expiry is the batch's time limit rounded up to minutes, and a margin, so a task
whose main process can no longer clear it stays protected no longer than that.

Only an actor whose batch may outlast the SIGTERM drain protects its tasks (`outlasts_drain`): a
batch the drain finishes loses nothing to a scale-in, and a protected task also holds up a
deployment, which waits for it to go idle. An actor of long hops under unbroken load therefore holds
a deployment until its tasks run out of work (docs/containers.md, "Scale-in protection"). A failed call (the agent down,
throttled, the task role without the grant) is logged and tried again after a growing pause; it never
touches a hop. Without `ECS_AGENT_URI` (not on ECS) nothing is called.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, MutableSequence, Sequence
from typing import Any

LOG = logging.getLogger("asya.consumer")
AGENT_URI = "ECS_AGENT_URI"  # set by ECS in every container of a task (agent 1.65.0 and later, Fargate 1.4.0)
STATE_PATH = "/task-protection/v1/state"
MAX_MINUTES = 2880  # the longest protection ECS grants (48 hours)
MARGIN_MINUTES = 5  # beyond the batch's limit; also how long before it lapses a busy task's protection is renewed
WATCH_SECONDS = 0.5  # how often the main process reads its consumers' slots
LINGER_SECONDS = 1.0  # a settled batch keeps its process busy this long: the next receive of a stream comes sooner
HOLDING = math.inf  # a slot's value while its process holds messages; else until when it counts as busy
CALL_SECONDS = 10.0  # the agent forwards each call to ECS's UpdateTaskProtection: allow for that round trip
RETRY_SECONDS, MAX_RETRY_SECONDS = 5.0, 300.0  # after a failed call, doubling: AWS asks for backoff on throttling


class AgentError(Exception):
    """The agent answered, but not with the task's protection (a failure or an error body)."""


def outlasts_drain(limit_seconds: float, drain_seconds: float) -> bool:
    """Whether a batch of `limit_seconds` may still run when the SIGTERM drain (`drain_seconds`) ends,
    and so be released and started over: only then is a task worth protecting."""
    return limit_seconds > drain_seconds


def expiry_minutes(limit_seconds: float) -> int:
    """Minutes of protection one call asks for: the batch's time limit, rounded up, and a margin."""
    return min(MAX_MINUTES, math.ceil(limit_seconds / 60) + MARGIN_MINUTES)


def put_protection(agent_uri: str, enabled: bool, minutes: int | None = None) -> dict[str, Any]:
    """One `PUT` to the agent; returns the task's protection as it answers it (`TaskArn`,
    `ProtectionEnabled`, `ExpirationDate`). The agent answers 200 with `failure` when ECS refused the
    task, and an error status with `error` (`Code`, `Message`) for a bad request or an ECS error."""
    body: dict[str, Any] = {"ProtectionEnabled": enabled}
    if minutes is not None:
        body["ExpiresInMinutes"] = minutes
    request = urllib.request.Request(
        agent_uri.rstrip("/") + STATE_PATH,
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=CALL_SECONDS) as response:
            answer = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        answer = _json(exc.read())
        error = answer.get("error") or {}
        raise AgentError(f"HTTP {exc.code} {error.get('Code', '')}: {error.get('Message', exc.reason)}") from exc
    if answer.get("failure"):
        failure = answer["failure"]
        raise AgentError(f"{failure.get('Reason')}: {failure.get('Detail') or ''}")
    if not isinstance(answer.get("protection"), dict):
        raise AgentError(f"unexpected answer {answer!r}")
    return dict(answer["protection"])


def _json(raw: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


class TaskProtection:
    """The task's protection as the main process last set it; `update(busy)` brings it in line."""

    def __init__(
        self,
        agent_uri: str,
        minutes: int,
        clock: Callable[[], float] = time.monotonic,
        put: Callable[[str, bool, int | None], dict[str, Any]] = put_protection,
    ) -> None:
        self._agent_uri = agent_uri
        self.minutes = minutes
        self._clock = clock
        self._put = put
        self.until: float | None = None  # when the protection set lapses (monotonic); None: not protected
        self._retry_at = 0.0
        self._failures = 0

    def update(self, busy: bool) -> None:
        now = self._clock()
        if self.until is not None and now >= self.until:
            self.until = None  # lapsed by itself, as ECS clears it
        if now < self._retry_at:
            return
        if busy and (self.until is None or self.until - now < MARGIN_MINUTES * 60):
            self._call(True, now)
        elif not busy and self.until is not None:
            self._call(False, now)

    def _call(self, enabled: bool, now: float) -> None:
        try:
            self._put(self._agent_uri, enabled, self.minutes if enabled else None)
        except Exception as exc:  # noqa: BLE001 - protection is a saving, never a reason to fail a hop
            self._failures += 1
            pause = min(MAX_RETRY_SECONDS, RETRY_SECONDS * 2 ** (self._failures - 1))
            self._retry_at = now + pause
            action = "protect the task from scale-in" if enabled else "clear the task's scale-in protection"
            LOG.warning("could not %s (trying again in %.0f s): %s", action, pause, exc)
            return
        self._failures, self._retry_at = 0, 0.0
        self.until = now + self.minutes * 60 if enabled else None
        LOG.info("task %s", f"protected from scale-in for {self.minutes} min" if enabled else "unprotected")


def flag(busy: MutableSequence[float], index: int) -> Callable[[bool], None]:
    """What consumer process `index` calls when a receive brought messages (True) and once it
    settled them (False). The clock is the system's monotonic one, the same in every process."""

    def mark(holding: bool) -> None:
        busy[index] = HOLDING if holding else time.monotonic() + LINGER_SECONDS

    return mark


def protect_while_busy(
    busy: Sequence[float], limit_seconds: float, env: Mapping[str, str], stopped: threading.Event | None = None
) -> TaskProtection | None:
    """Start the main process's thread that keeps the task protected while any slot of `busy` is
    (`flag`), for the process's life or until `stopped`; None (and no thread) when the task has no
    agent to ask."""
    agent_uri = env.get(AGENT_URI, "")
    if not agent_uri:
        return None
    protection = TaskProtection(agent_uri, expiry_minutes(limit_seconds))
    ended = stopped or threading.Event()

    def follow() -> None:
        while not ended.wait(WATCH_SECONDS):
            now = time.monotonic()
            protection.update(any(until > now for until in busy))

    threading.Thread(target=follow, name="asya-protection", daemon=True).start()
    return protection
