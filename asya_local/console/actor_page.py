"""`/actors/<name>`: one actor's work over the last hour or day, charted (throughput, p50/p95
duration, errors, queue age), beside its figures now. The window is the `span` query parameter
(`hour`, the default, or `day`), so a reload or a shared link keeps it. The history comes from the
console's `HistorySource`: counted from the worker log locally, CloudWatch's on AWS.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from flask import Blueprint, current_app, render_template, request, url_for

from asya_local.console.charts import charts
from asya_local.console.history import HOUR, WINDOWS
from asya_local.console.not_found import unknown_actor

actor_pages = Blueprint("actors", __name__)


@actor_pages.get("/actors/<name>")
def actor(name: str) -> str | tuple[str, int]:
    console: Any = current_app.config["CONSOLE"]  # asya_local.console.app.Console (which imports this module)
    node = console.topology.node(name)
    if node is None:
        return unknown_actor(name, console.topology.actors)
    window = WINDOWS.get(request.args.get("span", ""), HOUR)
    history, problem = None, None
    try:
        history = console.history.history(name, window) if console.history is not None else None
    except (BotoCoreError, ClientError) as exc:  # the figures now may still be there: the page stays
        problem = f"CloudWatch did not answer ({exc}); cloudwatch:GetMetricData is needed for the charts."
    return render_template(
        "actor.html",
        node=node,
        window=window,
        windows=WINDOWS.values(),
        history=history,
        problem=problem,
        charts=charts(history) if history is not None else [],
        failed_links=failed_links(name),
        now=console.actor_stats().get(name),
    )


def failed_links(name: str) -> list[tuple[str, str]]:
    """Where the failures its "failed" chart counts can be read, one click from the chart: its failed
    tasks (the task list of failed tasks that reached it: an actor a task failed at is reached) and
    what x-sump kept from it (x-sump's entries name the actor an envelope failed at)."""
    return [
        ("its failed tasks", url_for("console.tasks", status="failed", actor=name)),
        ("what x-sump kept from it", url_for("console.sump", actor=name)),
    ]
