"""The moments a person gives to narrow a listing by time (`asya tasks --since`, `asya sump list
--since`, the console's time range): how long ago (`30m`, `2h`, `1d`), an RFC 3339 time with its zone,
or a date and time without one, read in the person's own zone (as a browser's datetime input gives it).
Each becomes the RFC 3339 UTC time the gateway takes, or a `ValueError` that says what to give; a range
whose end comes before its start is refused here too, naming both as given, not as the gateway's UTC."""

from __future__ import annotations

import datetime as dt
import re

AGO = re.compile(r"^(\d+)([smhd])$")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
PRESETS = ("15m", "1h", "6h", "24h", "7d")  # what the console offers to pick
SHAPES = "30m, 2h, 1d, an RFC 3339 time (2026-11-26T10:00:00Z) or a local date and time (2026-11-26 10:00)"


def moment(text: str, now: dt.datetime | None = None, zone: dt.tzinfo | None = None) -> str:
    """`text` as an RFC 3339 UTC time; a time without a zone is in `zone` (default: this machine's)."""
    given = text.strip()
    now = now or dt.datetime.now(dt.UTC)
    ago = AGO.match(given)
    if ago is not None:
        amount, unit = ago.groups()
        return _utc(now - dt.timedelta(**{UNITS[unit]: int(amount)}))
    try:
        found = dt.datetime.fromisoformat(given.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a time: give {SHAPES}") from None
    try:
        if found.tzinfo is None:
            found = found.replace(tzinfo=zone) if zone is not None else found.astimezone()
        return _utc(found)
    except OverflowError:  # a first or last day of the calendar, moved to UTC, falls off it
        raise ValueError(f"{text!r} is out of the calendar's range") from None


class Moment(str):
    """A time the CLI was given, as the RFC 3339 UTC time the gateway takes, that remembers how the
    person gave it (`2h`): a mistake about it names it so, not by the UTC time they never typed."""

    given: str

    def __new__(cls, utc: str, given: str) -> Moment:
        made = super().__new__(cls, utc)
        made.given = given
        return made


def in_order(since: Moment | None, until: Moment | None) -> None:
    """A range from `since` to `until` (`asya tasks`), or a `ValueError` when it ends before it starts
    (`--since 1h --until 2h` reads as "from an hour ago to two hours ago"), before any gateway is asked."""
    if since is None or until is None or _when(until) >= _when(since):
        return
    raise ValueError(
        f"--until {until.given} ({local_time(until)}) is before --since {since.given} ({local_time(since)}): "
        "--since is the earlier end of the range"
    )


def _when(utc: str) -> dt.datetime:
    """An RFC 3339 UTC time as a moment: as text, `10:00:00Z` would sort after `10:00:00.500Z`."""
    return dt.datetime.fromisoformat(utc.replace("Z", "+00:00"))


def _utc(when: dt.datetime) -> str:
    """In UTC, to the millisecond when it has a fraction of a second (task records are stamped so)."""
    spec = "milliseconds" if when.microsecond else "seconds"
    return when.astimezone(dt.UTC).isoformat(timespec=spec).replace("+00:00", "Z")


def recorded(text: object) -> dt.datetime | None:
    """A task record's moment (RFC 3339, `Z` for UTC) as a time, or None when it holds none."""
    try:
        return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def local_time(text: str) -> str:
    """A recorded moment (RFC 3339, as the gateway stamps it) as a table shows it: in this machine's
    zone, to the second (`2026-11-26 11:03:07`); anything that is no such moment, as it is."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S") if when.tzinfo else text
