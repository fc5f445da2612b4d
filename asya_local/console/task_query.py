"""The console's task list as its URL says it: the filters (status, flow, actor reached, started since
and until) and the page (the gateway's cursor), all in the query string, so that a link to a list, or a
reload, shows the same list. The same query, without its cursor, drives the list's live updates.

`since` and `until` are as a person types them (`asya_local.moments`): how long ago (`1h`), an RFC
3339 time, or a date and time without a zone, read in the browser's zone (`tz`, an IANA name the
page's script puts in the form) or, without one, in the console's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from asya_local.gateway_client import GatewayClient, GatewayError
from asya_local.moments import moment

ALL = "all"
STATUSES = ("running", "pending", "paused", "succeeded", "failed", "canceled")
PAGE = 50  # tasks per page unless the URL says otherwise (`limit`, 1 to MOST)
MOST = 100
TIMES = {"since": "Started after", "until": "Started before"}  # each time field and its label


@dataclass(frozen=True, slots=True)
class TaskQuery:
    """One list of tasks: what it keeps, and which page of it. Empty text is "any"."""

    status: str = ALL
    flow: str = ""
    actor: str = ""
    since: str = ""
    until: str = ""
    tz: str = ""
    cursor: str = ""
    limit: int = PAGE

    @classmethod
    def of(cls, args: Mapping[str, str]) -> TaskQuery:
        """The query a URL's arguments ask for; a status or limit it cannot be is left at its default."""
        text = {name: str(args.get(name, "")).strip() for name in ("flow", "actor", "since", "until", "tz", "cursor")}
        status = args.get("status", ALL)
        limit = str(args.get("limit", ""))
        size = int(limit) if page_size_problem(args) is None and limit else PAGE
        return cls(status=status if status in (ALL, *STATUSES) else ALL, limit=size, **text)

    @property
    def first_page(self) -> bool:
        return not self.cursor

    def args(self, **changes: Any) -> dict[str, str]:
        """The URL's arguments for this query (with `changes`), those at their default left out."""
        changed = replace(self, **changes)
        default = TaskQuery()
        return {
            item.name: str(getattr(changed, item.name))
            for item in fields(self)
            if getattr(changed, item.name) != getattr(default, item.name)
        }

    def gateway_filters(self, now: dt.datetime | None = None) -> dict[str, Any]:
        """What `GatewayClient.task_page` is asked for. A time that cannot be read is a `ValueError`
        naming its field, as the form labels it."""
        times = {name: utc_time(label, getattr(self, name), self.tz, now) for name, label in TIMES.items()}
        return {
            "status": self.status,
            "flow": self.flow or None,
            "actor": self.actor or None,
            "cursor": self.cursor or None,
            "limit": self.limit,
            **times,
        }

    def describe(self) -> str:
        """The list in words, for its caption: `Failed tasks of triage that reached score, newest first`."""
        words = ["Tasks" if self.status == ALL else f"{self.status.capitalize()} tasks"]
        words += [f"of {self.flow}"] if self.flow else []
        words += [f"that reached {self.actor}"] if self.actor else []
        words += [f"started after {self.since}"] if self.since else []
        words += [f"started before {self.until}"] if self.until else []
        return " ".join(words) + ", newest first"


def page_size_problem(args: Mapping[str, str]) -> str | None:
    """Why the URL's page size (`limit`) is not one the list shows, or None. Refused, as a time not read
    is, rather than quietly changed: a list of 50 under a link that asked for 500 would not say what it
    left out."""
    limit = str(args.get("limit", "")).strip()
    if not limit or (limit.isdigit() and 1 <= int(limit) <= MOST):
        return None
    return f"Page size: {limit!r} is not a number of tasks from 1 to {MOST} (leave it out for {PAGE})"


def task_list(
    gateway: GatewayClient, query: TaskQuery, args: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], str | None]:
    """The page of tasks the query asks for, and None; or no tasks and why: a page size or time not read
    (in `args`, the URL's), or what the gateway refused in the URL (a cursor from a link it no longer
    takes, say)."""
    refused = page_size_problem(args or {})
    if refused is not None:
        return {"tasks": [], "next_cursor": None}, refused
    try:
        return gateway.task_page(**query.gateway_filters()), None
    except ValueError as exc:
        return {"tasks": [], "next_cursor": None}, str(exc)
    except GatewayError as exc:
        if exc.status != 400:
            raise
        return {"tasks": [], "next_cursor": None}, f"The gateway refused this list: {exc}"


def utc_time(label: str, given: str, tz: str, now: dt.datetime | None = None) -> str | None:
    """A time field of a console form as the gateway takes it (RFC 3339, UTC), None when empty: how long
    ago, an RFC 3339 time, or a date and time in the browser's zone `tz` (`asya_local.moments`), the
    forms the CLI takes too. One that cannot be read is a `ValueError` naming the field by `label`."""
    try:
        return moment(given, now, _zone(tz)) if given else None
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None


def _zone(name: str) -> dt.tzinfo | None:
    """The browser's zone, by its IANA name; None (the console's own) for none or one not known."""
    try:
        return ZoneInfo(name) if name else None
    except (ZoneInfoNotFoundError, ValueError):
        return None
