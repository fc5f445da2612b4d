"""What `asya up` and `asya demo` show while the mesh runs: one live view, redrawn every second, instead
of the workers' per-batch lines (those go to the worker log, `asya_local.worklog`).

- an actor whose handler cannot be loaded, in red under the "is up" line (`asya_local.load_failures`);
- the actors: messages waiting, in flight and delayed in each queue, how long the oldest has waited,
  envelopes processed per minute and failed over the last five minutes, a Spark actor's open jobs
  (the same figures as the console's, `asya_local.console.stats`);
- the tasks: how many there are of each status, the running ones with their progress;
- the results as they land: the tasks that ended last, with their output.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from asya.root_result import no_single_result
from asya.task_record import TaskStatus
from asya_local.console.app import Console as MeshConsole
from asya_local.gateway_client import GatewayError, GatewayUnreachableError
from asya_local.load_failures import LoadFailures
from asya_local.screen import status_text

RUNNING_SHOWN = 6
BAR_WIDTH = 20
OUTPUT_WIDTH = 80
ENDED_SHOWN = 5
NOT_LOADED_HINT = "each envelope it gets fails with this error (fix it, then restart; `asya check` finds it first)"


class LiveView:
    """A rich renderable of the mesh as it runs; `tasks_table`: the tasks table, counted by status."""

    def __init__(
        self,
        mesh: MeshConsole,
        dynamodb: Any,
        tasks_table: str | None,
        header: list[str],
        failures: LoadFailures | None = None,
    ) -> None:
        self.mesh = mesh
        self.dynamodb = dynamodb
        self.tasks_table = tasks_table
        self.header = header
        self.failures = failures or LoadFailures()

    def __rich__(self) -> RenderableType:
        """The header's first line ("mesh … is up"), then any actor that cannot load its handler, in
        red, so the mesh is never said to be up without it; then the rest."""
        parts: list[RenderableType] = [Text(line, style="dim") for line in self.header[:1]]
        parts += [Text(f"{line}: {NOT_LOADED_HINT}", style="bold red") for line in self.failures.lines()]
        parts += [Text(line, style="dim") for line in self.header[1:]]
        parts.append(self._actors())
        try:
            parts += [self._counts(), self._running(), self._ended()]
        except (GatewayError, GatewayUnreachableError) as exc:  # a gateway restarting: say so, go on
            parts.append(Text(f"tasks: the gateway did not answer ({exc})", style="yellow"))
        return Group(*parts)

    def _actors(self) -> Table:
        table = Table(title="actors", title_justify="left", expand=False)
        for column in ("actor", "kind", "waiting", "in flight", "delayed", "oldest", "per min", "failed", "jobs"):
            table.add_column(column, justify="left" if column in ("actor", "kind") else "right")
        stats = self.mesh.actor_stats()
        for node in self.mesh.topology.nodes:
            s = stats.get(node.name)
            if s is None:
                continue
            kind = "Spark" if node.kind == "spark" else "crew" if node.kind == "crew" else "λ"
            broken = node.name in self.failures.found()
            style = "red" if s.failed or broken else "bold" if s.visible or s.in_flight else ""
            table.add_row(
                Text(node.name, style=style),
                kind + (" join" if node.join else "") + (" (handler not loaded)" if broken else ""),
                str(s.visible),
                str(s.in_flight),
                str(s.delayed),
                f"{s.age_seconds:.0f} s",
                f"{s.per_minute:.1f}",
                Text(str(s.failed), style="red" if s.failed else ""),
                str(s.open_batches) if node.kind == "spark" else "",
            )
        return table

    def _counts(self) -> Text:
        """Task records by status (roots and branches alike): one count query per status on the tasks table."""
        if not self.tasks_table:
            return Text()
        parts = [Text("tasks and their branches  ")]
        for status in TaskStatus:
            answer = self.dynamodb.query(
                TableName=self.tasks_table,
                IndexName="by-status",
                KeyConditionExpression="#s = :status",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":status": {"S": status.value}},
                Select="COUNT",
            )
            count = int(answer.get("Count", 0))
            if count:
                parts.append(status_text(status.value, f"{status.value} {count}  "))
        return Text.assemble(*parts)

    def _running(self) -> Table:
        table = Table(title="running and paused tasks", title_justify="left", show_edge=False)
        for column in ("task", "flow", "at", "progress"):
            table.add_column(column)
        for status in (TaskStatus.RUNNING, TaskStatus.PAUSED):
            for task in self.mesh.gateway.tasks(status=status.value, limit=RUNNING_SHOWN):
                progress = float(task.get("progress") or 0)
                done = round(progress / 100 * BAR_WIDTH)
                bar = Text.assemble(("━" * done, "cyan"), ("━" * (BAR_WIDTH - done), "grey30"), f" {progress:.0f} %")
                at = str(task.get("actor") or "")
                where = status_text(status.value, "waiting for a person") if status is TaskStatus.PAUSED else at
                table.add_row(task["id"][:8], str(task.get("flow") or ""), where, bar)
        return table

    def _ended(self) -> Table:
        table = Table(title="results as they land", title_justify="left", show_edge=False)
        for column in ("task", "flow", "status"):
            table.add_column(column, no_wrap=True)
        table.add_column("output", overflow="ellipsis", no_wrap=True, max_width=OUTPUT_WIDTH)
        ended = [
            task
            for status in ("succeeded", "failed", "canceled")
            for task in self.mesh.gateway.tasks(status=status, limit=ENDED_SHOWN)
        ]
        ended.sort(key=lambda task: str(task.get("updated_at", "")), reverse=True)
        for task in ended[:ENDED_SHOWN]:
            status = str(task.get("status"))
            shown = (
                task.get("output")
                if "output" in task
                else task.get("result") or (task.get("error") or {}).get("message") or no_single_result(task)
            )
            table.add_row(
                task["id"][:8],
                str(task.get("flow") or ""),
                status_text(status),
                shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False),
            )
        return table
