"""The console's web application: server-rendered pages, forms that post back, and Server-Sent Events
that keep them live (a little JavaScript, `static/console.js`, applies them; no build step, nothing
fetched from outside the page's own server).

Everything the browser does goes through this server, which calls the mesh's status gateway with the
credential it holds (the local API key, or the caller's AWS credentials signing each request with
SigV4): the browser never sees a key. Pages:

- `/`: the mesh as a graph (actors, Lambda or Spark, joins, the crew; flows as paths), each actor's
  queue and work live, and a form to start a task of a flow;
- `/tasks`: tasks by status, flow, actor reached and time, page by page, the newest page live (the
  filters and page in the URL: `asya_local.console.task_query`); `/tasks/<id>`: one task, why it
  failed first (`asya_local.console.failure`), its route on the graph (a program flow's task: its
  program's graph, the steps it took marked, `asya_local.console.task_program`) with each hop's
  time, its branches, its FLY events as they come, its input, its result, its log lines; cancel,
  resume, run again;
- `/sump`: what x-sump kept, grouped by reason, error type and actor; `/sump/<id>`: one, with its redrive;
- `/actors/<name>`: an actor's work charted over the last hour or day (`asya_local.console.actor_page`).

Streams (`text/event-stream`): `/events/mesh` (actor stats and the task list, every `refresh`
seconds, as JSON and as HTML fragments rendered here). A task's page follows the task from the
gateway itself, with a follow ticket, and fetches its fragments at each status event
(`/tasks/<id>/live`); where the gateway does not allow the page's origin, `/events/tasks/<id>` relays
the gateway's events (`asya_local.console.task_live`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    jsonify,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)

from asya.live import FLY
from asya.names import SUMP
from asya_local.console import not_found
from asya_local.console.actor_page import actor_pages
from asya_local.console.event_stream import KEEP_ALIVE, event_stream, followed, sse_event
from asya_local.console.failure import Explainer, other_failures, why
from asya_local.console.graph import NODE_HEIGHT, NODE_WIDTH, Layout, layout
from asya_local.console.guard import guard
from asya_local.console.history import HistorySource
from asya_local.console.seen import SeenRoutes
from asya_local.console.stats import ActorStats, StatsSource
from asya_local.console.task_graph import task_graph
from asya_local.console.task_live import END, follow_url, fragments, route_classes, task_branches
from asya_local.console.task_logs import TaskLogs
from asya_local.console.task_program import program_view
from asya_local.console.task_query import STATUSES, TaskQuery, task_list, utc_time
from asya_local.console.topology import Topology
from asya_local.console.wording import ago, how_far, local_stamps, moment, one_line, pretty, rows_for
from asya_local.gateway_client import GatewayClient, GatewayError, GatewayUnreachableError, ShortIdError
from asya_local.results_text import without_folders

HERE = Path(__file__).resolve().parent


@dataclass
class Console:
    """What the pages show and act on: the mesh, its stats and its gateway."""

    topology: Topology
    stats: StatsSource
    gateway: GatewayClient
    where: str  # "the local stack at ...", "account ... in ..."
    refresh: float = 2.0  # seconds between the live stats and task list pushed to each page
    log: str | None = None  # the local stack's worker log
    history: HistorySource | None = None  # each actor's work over the last hour and day
    task_logs: TaskLogs | None = None  # where a task's log lines are found (`asya_local.console.task_logs`)
    examples: dict[str, Any] = field(default_factory=dict)  # each flow's first example input
    gateway_origins: tuple[str, ...] = ()  # page origins the gateway lets follow a task (`task_live`)
    _examples_read: bool = False
    _stats: tuple[float, dict[str, ActorStats]] | None = None  # (when read, what was read)
    _stats_lock: threading.Lock = field(default_factory=threading.Lock)
    _explainer: Explainer = field(init=False)

    def __post_init__(self) -> None:
        self._explainer = Explainer(self.gateway.task)

    def listed(self, page: dict[str, Any]) -> dict[str, Any]:
        """A page of the task list with why each task failed, where its branches say it (`Explainer`)."""
        return {**page, "tasks": self._explainer.explained(page["tasks"])}

    def actor_stats(self) -> dict[str, ActorStats]:
        """The actors' figures, read at most once per half `refresh` whoever asks: every open page's
        stream and the terminal's live view share one read."""
        with self._stats_lock:
            now = time.monotonic()
            if self._stats is None or now - self._stats[0] >= self.refresh / 2:
                self._stats = (now, self.stats.actor_stats())
            return self._stats[1]

    def flow_examples(self) -> dict[str, Any]:
        """Each flow's first example input, from the gateway's flow tools (read once)."""
        if not self._examples_read:
            try:
                for tool in self.gateway.flows():
                    examples = (tool.get("inputSchema") or {}).get("examples") or [{}]
                    self.examples[str(tool["name"])] = examples[0]
            except (GatewayError, GatewayUnreachableError):
                return self.examples
            self._examples_read = True
        return self.examples


pages = Blueprint("console", __name__)


def create_app(console: Console, token: str) -> Flask:
    """The console's application, answering only requests that carry `token` (`asya_local.console.guard`)."""
    app = Flask(__name__, template_folder=str(HERE / "templates"), static_folder=str(HERE / "static"))
    guard(app, token)
    app.config["CONSOLE"] = console
    app.config["SEEN"] = SeenRoutes(console.gateway)
    app.jinja_env.globals.update(
        console=console,
        node_width=NODE_WIDTH,
        node_height=NODE_HEIGHT,
        actor_link=lambda name: url_for("actors.actor", name=name),
        pretty=pretty,
        one_line=one_line,
        how_far=how_far,
        why=why,
        sump=SUMP,
        other_failures=other_failures,
    )
    app.jinja_env.filters["ago"] = ago
    app.jinja_env.filters["moment"] = moment
    app.jinja_env.filters["local_stamps"] = local_stamps
    app.jinja_env.filters["rows_for"] = rows_for
    # a traceback as `asya results` shows it: files named from the project (the folder the console runs in)
    app.jinja_env.filters["without_folders"] = lambda trace: without_folders(str(trace or ""), Path.cwd())
    app.register_blueprint(pages)
    app.register_blueprint(actor_pages)
    not_found.register(app)
    app.register_error_handler(GatewayError, lambda error: (render_template("error.html", message=str(error)), 502))
    app.register_error_handler(
        GatewayUnreachableError, lambda error: (render_template("error.html", message=str(error)), 503)
    )
    return app


def _console() -> Console:
    console: Console = current_app.config["CONSOLE"]
    return console


def _graph() -> Layout:
    """The mesh's graph with the steps recent tasks took that no flow declares (`SeenRoutes`)."""
    seen: SeenRoutes = current_app.config["SEEN"]
    return layout(_console().topology, seen.steps())


@pages.get("/")
def mesh() -> str:
    return _mesh_page(request.args.get("flow", ""))


def _mesh_page(chosen: str, typed: str | None = None, problem: str | None = None) -> str:
    """The mesh page; after a start that was refused, with what was typed and why it was refused."""
    console = _console()
    return render_template(
        "mesh.html",
        graph=_graph(),
        stats=console.actor_stats(),
        examples=console.flow_examples(),
        chosen=chosen,
        typed=typed,
        problem=problem,
    )


@pages.post("/tasks")
def create_task() -> Any:
    """Start a task; a payload that is not JSON, or that the flow's schema refuses, is shown again with
    the reason, as typed, and nothing starts."""
    flow, typed = request.form.get("flow", ""), request.form.get("payload") or "null"
    try:
        payload = json.loads(typed)
    except ValueError as exc:
        return _mesh_page(flow, typed, f"The payload is not JSON: {exc}"), 400
    try:
        created = _console().gateway.create_task({"flow": flow, "payload": payload})
    except GatewayError as exc:
        return _mesh_page(flow, typed, f"The gateway refused it: {exc}"), 400
    return redirect(url_for(".task", task_id=created["id"]), 303)


@pages.get("/tasks")
def tasks() -> Any:
    """The task list its URL asks for (`TaskQuery`). A filter or page size that cannot be read is said
    on the page, with the form and no list: a list beside it would claim a filter it does not apply."""
    query = TaskQuery.of(request.args)
    page, problem = task_list(_console().gateway, query, request.args)
    page = _console().listed(page)
    shown = render_template("tasks.html", page=page, query=query, problem=problem, statuses=STATUSES)
    return (shown, 400) if problem else shown


@pages.get("/tasks/find")
def find_task() -> Any:
    """The search box: a task's whole id, or its first characters in any case (the gateway finds them
    among every task, however old)."""
    given = request.args.get("id", "").strip()
    if not given:
        return redirect(url_for(".tasks"), 303)
    return redirect(url_for(".task", task_id=given), 303)


@pages.get("/tasks/<task_id>")
def task(task_id: str) -> Any:
    """A task's page; a short id, as the tables show it, leads to the one task it names. One that names
    none, or several (linked), is said on a page with the search box, holding what was typed."""
    try:
        whole = _console().gateway.task_id(task_id)
    except ShortIdError as exc:
        return _not_found(task_id, str(exc), exc.candidates)
    return redirect(url_for(".task", task_id=whole), 302) if whole != task_id else _task_page(task_id)


def _not_found(given: str, message: str, candidates: list[str] | None = None) -> Response:
    """The 404 of a task id, whole or short, that names no task, or of a short one that names several
    (`candidates`, linked): why, and the search box holding what was typed, to try again."""
    page = render_template("task_not_found.html", message=message, candidates=candidates or [], typed=given)
    return make_response(page, 404)


def _task_page(task_id: str, typed: dict[str, str] | None = None, problem: str | None = None) -> str:
    """A task's page; after a resume that was refused, with what was typed and why it was refused."""
    console = _console()
    found = console.gateway.task(task_id)
    if found is None:
        abort(_not_found(task_id, f"no task {task_id!r}"))
    branches = task_branches(console, found)
    program = program_view(console.topology, found, branches)
    return render_template(
        "task.html",
        task=found,
        graph=program.graph if program is not None else task_graph(console.topology, found, branches),
        program=program,
        branches=branches,
        task_route=route_classes(found, branches),
        follow_url=None if found.get("terminal") else follow_url(console, task_id),
        typed=typed or {},
        problem=problem,
        logs=console.task_logs.lines(found) if console.task_logs is not None else None,
        rerun_key=str(uuid.uuid4()),  # one new task for this page's "Run again", however often it is sent
    )


@pages.post("/tasks/<task_id>/cancel")
def cancel(task_id: str) -> Any:
    _console().gateway.cancel(task_id)
    return redirect(url_for(".task", task_id=task_id), 303)


@pages.post("/tasks/<task_id>/resume")
def resume(task_id: str) -> Any:
    """Resume a paused task with what the person gave; input that is not what the pause asks for is shown
    again with the reason, as typed, and the task stays paused (a resume cannot be undone)."""
    gateway = _console().gateway
    found = gateway.task(task_id) or abort(404)
    try:
        given = _resume_input((found.get("pause") or {}).get("fields") or {}, request.form)
    except ValueError as exc:
        return _task_page(task_id, dict(request.form), f"Not resumed: {exc}"), 400
    gateway.resume(task_id, given)
    return redirect(url_for(".task", task_id=task_id), 303)


@pages.post("/tasks/<task_id>/rerun")
def rerun(task_id: str) -> Any:
    """Run an ended task again, as a new task, with its input ("same") or the one typed, and show the
    new task; typed input that is not JSON, or that the gateway refuses, is shown again with the reason,
    as typed, and nothing starts."""
    gateway, key = _console().gateway, request.form.get("key") or None
    try:
        if request.form.get("how") == "same":
            started = gateway.rerun(task_id, idempotency_key=key)
        else:
            typed = json.loads(request.form.get("payload", ""))
            started = gateway.rerun(task_id, typed, given=True, idempotency_key=key)
    except ValueError as exc:
        return _task_page(task_id, dict(request.form), f"Not run again: the input is not JSON ({exc})"), 400
    except GatewayError as exc:
        return _task_page(task_id, dict(request.form), f"Not run again: {exc}"), 400
    return redirect(url_for(".task", task_id=started["id"]), 303)


@pages.get("/sump")
def sump() -> Any:
    """What x-sump kept, filtered; "Since" takes what the task list's times and the CLI take (`1h`, an
    RFC 3339 time, a local date and time), and one it cannot read is said, with the form and no list."""
    filters = {name: request.args.get(name, "").strip() for name in ("reason", "type", "actor", "since", "tz")}
    try:
        since = utc_time("Since", filters["since"], filters["tz"]) or ""
    except ValueError as exc:
        return render_template("sump.html", entries=[], groups=[], filters=filters, problem=str(exc)), 400
    listed = _console().gateway.sump(reason=filters["reason"], actor=filters["actor"], since=since)
    entries = [entry for entry in listed if not filters["type"] or entry.get("error_type") == filters["type"]]
    return render_template("sump.html", entries=entries, groups=_groups(entries), filters=filters, problem=None)


@pages.get("/sump/<envelope_id>")
def sump_entry(envelope_id: str) -> str:
    return _sump_page(envelope_id, None)


@pages.post("/sump/<envelope_id>/redrive")
def redrive(envelope_id: str) -> Any:
    body: dict[str, Any] = {}
    if request.form.get("to"):
        body["to"] = request.form["to"]
    if request.form.get("payload", "").strip():
        try:
            body["payload"] = json.loads(request.form["payload"])
        except ValueError as exc:
            return render_template("error.html", message=f"the payload is not JSON: {exc}"), 400
    _, done = _console().gateway.redrive(envelope_id, body)
    return _sump_page(envelope_id, done)


def _sump_page(envelope_id: str, done: dict[str, Any] | None) -> str:
    console = _console()
    shown = console.gateway.sump_entry(envelope_id)
    return render_template(
        "sump_entry.html", entry=shown["entry"], kept=shown["kept"], actors=console.topology.actors, done=done
    )


@pages.get("/events/mesh")
def mesh_events() -> Response:
    """Actor stats (JSON) and, with `tasks=1`, the task list's rows (HTML), every `refresh` seconds."""
    console = _console()
    query = replace(TaskQuery.of(request.args), cursor="")  # live: the list's first page only
    with_tasks = bool(request.args.get("tasks"))

    def frames() -> Iterator[str]:
        while True:
            stats = {actor: s.to_json() for actor, s in console.actor_stats().items()}
            yield sse_event("stats", json.dumps(stats))
            if with_tasks:
                page = console.listed(task_list(console.gateway, query)[0])
                yield sse_event("tasks", render_template("_task_rows.html", tasks=page["tasks"]))
                yield sse_event("pager", render_template("_task_pager.html", page=page, query=query))
            time.sleep(console.refresh)

    return event_stream(frames)


@pages.get("/events/tasks/<task_id>")
def task_events(task_id: str) -> Response:
    """The gateway's events for the task relayed, until it ends: FLY events as they come (JSON), the
    task's fragments at each status event. For a page whose origin the gateway does not allow
    (`asya_local.console.task_live`)."""
    console = _console()

    def frames() -> Iterator[str]:
        for kind, data in followed(console.gateway, task_id):
            if kind == KEEP_ALIVE:
                yield ": keep-alive\n\n"
                continue
            if kind == FLY:
                yield sse_event("fly", json.dumps(data))
                continue
            for event, shown in fragments(console, task_id, data):
                yield sse_event(event, shown)
                if event == END:
                    return

    return event_stream(frames)


@pages.get("/tasks/<task_id>/live")
def task_live(task_id: str) -> Response:
    """The task's fragments as it stands: what a page following it from the gateway fetches at each of
    its status events."""
    return jsonify(fragments(_console(), task_id, {"id": task_id}))


@pages.get("/tasks/<task_id>/ticket")
def task_ticket(task_id: str) -> Response:
    """A new follow ticket for the page, when the one it had has lapsed (a follow past five minutes)."""
    url = follow_url(_console(), task_id)
    return jsonify({"follow_url": url}) if url is not None else make_response(jsonify({"follow_url": None}), 404)


def _resume_input(fields: dict[str, Any], form: Any) -> dict[str, Any]:
    """The human's input from the pause's fields (a checkbox for a boolean, a number, text) and the
    free JSON box, which wins where both give a value; a `ValueError` says what is not right: a
    number field that is no number (an integer one, no whole number), JSON that is not JSON or not an
    object."""
    given: dict[str, Any] = {}
    for name, spec in fields.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        raw = form.get(f"field-{name}")
        if kind == "boolean":
            given[name] = raw == "on"
        elif raw not in (None, ""):
            given[name] = _number(name, raw, whole=kind == "integer") if kind in ("number", "integer") else raw
    extra = form.get("input", "").strip()
    if extra:
        try:
            more = json.loads(extra)
        except ValueError as exc:
            raise ValueError(f'the input is not JSON ({exc}); give an object, e.g. {{"approved": true}}') from None
        if not isinstance(more, dict):
            raise ValueError(f'the input is JSON but not an object ({{"field": value}}): {extra[:60]}')
        given.update(more)
    return given


def _number(name: str, raw: str, *, whole: bool) -> float | int:
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{name}: {raw!r} is not a number") from None
    if whole and not number.is_integer():
        raise ValueError(f"{name}: {raw!r} is not a whole number")
    return int(number) if number.is_integer() else number


def _groups(entries: list[dict[str, Any]]) -> list[tuple[str, str, str, int]]:
    """x-sump's entries counted by (reason, error type, actor), most first: every handler error has the
    reason `HandlerError` (or `PolicyExhausted`), so the exception's type is what tells them apart."""
    counts = Counter((str(e.get("reason", "")), str(e.get("error_type", "")), str(e.get("actor", ""))) for e in entries)
    return [(reason, kind, actor, n) for (reason, kind, actor), n in counts.most_common()]
