"""`/actors/<name>`: one actor's work over the last hour or day, charted (throughput, p50/p95
duration, errors, queue age), beside its figures now. The window is the `span` query parameter
(`hour`, the default, or `day`), so a reload or a shared link keeps it. The history comes from the
console's `HistorySource`: counted from the worker log locally, CloudWatch's on AWS.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from flask import Blueprint, current_app, render_template, request

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
        now=console.actor_stats().get(name),
    )
