"""The deadline backstop's sweep of the task table (`asya_gateway.backstop`): every open task whose
deadline passed ends `failed` with `Timeout`, paused ones excepted (their clock stops)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from asya.envelope import rfc3339
from asya.names import BY_DEADLINE
from asya.reasons import Reason
from asya.task_record import OPEN, Rank, TaskStatus
from asya.task_table import TaskTable


class DeadlineExpiry(TaskTable):
    def expire(self, now: dt.datetime, limit: int = 500) -> list[str]:
        """The deadline backstop: fail every open task whose deadline passed. Driven by the table (a
        sparse index of open tasks by deadline), not by timers, so it survives any restart."""
        expired: list[str] = []
        paginator = self.client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.table,
            IndexName=BY_DEADLINE,
            KeyConditionExpression="open_shard = :open AND deadline_at < :now",
            ExpressionAttributeValues={":open": {"S": OPEN}, ":now": {"S": rfc3339(now)}},
        )
        for page in pages:
            for key in page.get("Items", []):
                task_id = key["id"]["S"]
                message = "the task's deadline passed before it finished (gateway backstop)"
                if self._update(task_id, *self._expire_update(now, message)):
                    expired.append(task_id)
                if len(expired) >= limit:
                    return expired
        return expired

    def _expire_update(self, now: dt.datetime, message: str) -> tuple[str, str, dict[str, Any], dict[str, str]]:
        sets, values, names = self._terminal_sets(
            TaskStatus.FAILED, {"reason": Reason.TIMEOUT.value, "error": {"message": message}}
        )
        values[":deadline_now"] = rfc3339(now)
        values[":paused_rank"] = int(Rank.PAUSED)
        return (
            f"SET {', '.join(sets)} REMOVE open_shard",
            "#r < :paused_rank AND deadline_at < :deadline_now",
            values,
            names,
        )
