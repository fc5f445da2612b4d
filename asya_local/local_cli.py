"""`asya up`, `asya demo` and `asya console`: the mesh on this machine, as a person watches it.

`asya up` starts the local stack (`asya_local.stack`) and writes `.asya/local.json` so the other
commands find it; while the mesh runs, `asya up` and `asya demo` show it as a live view
(`asya_local.live_view`), the workers' lines go to the worker log (`asya_local.worklog`) and only
errors to the screen. `asya up` also serves the console (`asya_local.console`), which `asya console`
serves alone, for the local stack or a deployed mesh.
"""

from __future__ import annotations

import argparse
import signal
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from rich.live import Live
from rich.text import Text

from asya.task_record import TaskStatus
from asya_cdk.loading import load_mesh
from asya_local import admin_key, demo_report, stack_option, worklog
from asya_local.arguments import each_input, json_file
from asya_local.console.activity import ActivityCounter
from asya_local.console.app import Console as MeshConsole
from asya_local.console.deployed import deployed_console
from asya_local.console.local import LocalMesh, follow_log, local_console
from asya_local.console.server import origin, serve
from asya_local.demo_person import DemoPerson, person_answer
from asya_local.dropped import FRESH, count_in_time, stopping_line
from asya_local.endpoint.process import free_port, port_taken
from asya_local.functions.lambda_shapes import REGION
from asya_local.live_view import NOT_LOADED_HINT, LiveView
from asya_local.load_failures import LoadFailures
from asya_local.local_state import (
    LocalStateError,
    read_state,
    refuse_second_stack,
    running_state,
    worker_log_folder,
    write_state,
)
from asya_local.mesh_parsers import INPUTS_FILE
from asya_local.screen import console
from asya_local.stack import LocalStack
from asya_local.stand_ins import stand_in_lines
from asya_local.worklog import WorkerLog

INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C: `asya up` before it was up, `asya demo`


def _print_error(source: str, line: str) -> None:
    """A worker's error line, on screen (above the live view while one is shown)."""
    console.print(Text.assemble((f"{source:>10}", "red"), " │ ", worklog.shown(line)), highlight=False)


@dataclass
class Started:
    """A local stack as `asya up` and `asya demo` run it: its worker log and what the log's metric
    lines count."""

    stack: LocalStack
    log: WorkerLog
    activity: ActivityCounter
    failures: LoadFailures
    console_port: int | None = None  # where `asya up` serves the console (`asya demo` serves none)

    @cached_property
    def console(self) -> MeshConsole:
        """One for the web console and the live view, which then share each read of the figures; its
        pages follow tasks from the gateway, which allows the console's origin (`LocalStack.browser_origins`)."""
        where = LocalMesh.of_stack(self.stack, self.log.path)
        return local_console(where, self.activity, self.failures, gateway_origins=self.stack.browser_origins)

    def live_view(self, header: list[str]) -> LiveView:
        dynamodb = self.stack.client("dynamodb")
        return LiveView(self.console, dynamodb, self.stack.outputs.get("TasksTable"), header, self.failures)

    def stop(self) -> None:
        self.stack.stop()
        self.log.close()


def _start(args: argparse.Namespace) -> Started:
    mesh = load_mesh(args.config)
    # `asya up`'s console, chosen before the stack starts: the local gateway allows its origin
    given = getattr(args, "console_port", None)
    ports = (("--port", args.port), ("--gateway-port", args.gateway_port), ("--console-port", given))
    for option, port in ports:
        if port and port_taken(port):
            raise LocalStateError(
                f"port {port} is taken (another asya up, or another local AWS endpoint?): "
                f"{option} 0 takes any free port"
            )
    console_port = (given or free_port()) if hasattr(args, "console_port") else None
    activity = ActivityCounter(mesh.config.namespace)
    failures = LoadFailures()
    taps: list[worklog.Tap] = [activity.take, failures.take]
    log = WorkerLog(worker_log_folder() / f"{mesh.config.namespace}.log", _print_error, taps=taps)
    stack = LocalStack(
        mesh,
        port=args.port or free_port(),
        workers_per_function=args.workers,
        on_line=log,
        gateway_port=args.gateway_port or free_port(),
        faults=args.faults,
        browser_origins=(origin(console_port),) if console_port is not None else (),
    )
    console.print(FRESH, highlight=False)
    kept = f" (the previous run's: {log.previous})" if log.previous is not None else ""
    console.print(f"worker log: {log.path}{kept}", highlight=False)
    with console.status("starting") as status:
        try:
            stack.start(progress=status.update)
        except BaseException:
            log.close()
            raise
    return Started(stack, log, activity, failures, console_port)


def _start_unless_interrupted(args: argparse.Namespace) -> Started | None:
    """The stack started, or None, said on one line, when Ctrl-C came while it started
    (`LocalStack.start` stopped what had started)."""
    try:
        return _start(args)
    except KeyboardInterrupt:
        console.print("stopped before the stack was up", highlight=False)
        return None


def up(args: argparse.Namespace) -> int:
    refuse_second_stack()
    started = _start_unless_interrupted(args)
    if started is None:
        return INTERRUPTED
    stopped = threading.Event()

    def stop(_signal: int, _frame: object) -> None:
        """From here Ctrl-C is taken as SIGTERM is: a KeyboardInterrupt raised in the live view's first
        drawing, which `with Live` does before its block, would leave the view drawing through the stop."""
        started.log.hush()
        stopped.set()

    for ends in (signal.SIGTERM, signal.SIGINT):
        signal.signal(ends, stop)
    stack = started.stack
    served = serve(started.console, started.console_port or 0) if stack.gateway_url is not None else None
    state_file = write_state(
        stack, args.config, log=str(started.log.path), **({"console_url": served.opening_url} if served else {})
    )
    key = " ".join(f"{name}={value}" for name, value in admin_key.credentials(stack.endpoint).items())
    header = [
        f"mesh '{stack.namespace}' is up at {stack.endpoint} (region {REGION}); Ctrl-C stops it",
        f"its clients sign with: {key}",
    ]
    if stack.gateway_url is not None and served is not None:
        header += [
            f"console: {served.opening_url}",
            f"gateway: {stack.gateway_url}/api/v1   " + _credential(stack),
            "send work: asya send '{...}' --flow <flow>    then: asya watch <id>",
        ]
    try:
        if console.is_terminal:
            view = started.live_view([*header, f"worker log: {started.log.path} (errors are shown here too)"])
            with Live(view, console=console, refresh_per_second=1):
                stopped.wait()
        else:  # a log, not a screen: the header once, errors as they come
            for line in header[:1] + [f"{line}: {NOT_LOADED_HINT}" for line in started.failures.lines()] + header[1:]:
                console.print(line, highlight=False)
            stopped.wait()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C would cut the stop short
        dropped = count_in_time(stack.client("dynamodb"), stack.outputs.get("TasksTable"), stack.sump_table)
        console.print(stopping_line(dropped), highlight=False)
        if served is not None:
            served.stop()
        started.stop()
        state_file.unlink(missing_ok=True)
        console.print("stopped")
    return 0


def _credential(stack: LocalStack) -> str:
    """How a client of the local gateway proves itself: the API key, or a token (`asya token`)."""
    if stack.issuer is None:
        return f"API key: {stack.api_key}"
    return f"sign-in: Authorization: Bearer $(asya token)   (issuer {stack.issuer.issuer})"


def serve_console(args: argparse.Namespace) -> int:
    """Serve the console of the local stack, or of a deployed one, until Ctrl-C."""
    state = read_state()
    stop = threading.Event()
    if args.stack is None or (state is not None and state.get("stack") == args.stack):
        where = LocalMesh.of_state(state if state is not None else running_state())
        activity, failures = ActivityCounter(where.mesh.config.namespace), LoadFailures()
        if where.log is not None:
            follow_log(where.log, lambda line: [take(line) for take in (activity.take, failures.take)], stop)
        mesh_console = local_console(where, activity, failures)
    else:
        mesh_console = deployed_console(stack_option.deployed(args))
    served = serve(mesh_console, args.port)
    console.print(f"console of {mesh_console.where}: {served.opening_url}   (Ctrl-C stops it)", highlight=False)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        served.stop()
    return 0


def _say(line: str) -> None:
    console.print(line, highlight=False, markup=False, soft_wrap=True)


def demo(args: argparse.Namespace) -> int:
    inputs = str(args.inputs or args.config.parent / INPUTS_FILE)
    payloads = each_input(json_file(inputs), inputs)
    answer = person_answer(args.config)
    started = _start_unless_interrupted(args)
    if started is None:
        return INTERRUPTED
    stack = started.stack
    try:
        flow_name = next(iter(stack.mesh.config.flows))
        route = stack.mesh.flow_route(flow_name)  # a program flow's: the shortest way through it
        if stack.gateway_url is None:
            raise LocalStateError("this mesh deploys no gateway to send tasks through")
        gateway = stack.gateway_client()
        ids = [gateway.create_task({"flow": flow_name, "payload": payload})["id"] for payload in payloads]
        shown = demo_report.flow_words(stack.mesh, flow_name)
        console.print(f"created {len(ids)} tasks of flow [bold]{flow_name}[/bold]: {shown}", highlight=False)
        view = started.live_view([f"demo of mesh '{stack.namespace}': flow {flow_name}"])
        person = None if answer is None else DemoPerson(gateway, set(ids), answer, _say)
        with Live(view, console=console, refresh_per_second=1):  # redrawn once a second, by Live's thread
            drained = stack.wait_until_idle(args.timeout, on_tick=person)
        console.print()
        kept = stack.kept_results().all()
        tasks = [gateway.task(task_id) or {"id": task_id, "status": "unknown"} for task_id in ids]
        console.print(demo_report.results_table(kept))
        console.print(demo_report.tasks_table(tasks))
        if flow_name in stack.mesh.programs:
            console.print(demo_report.paths_table(tasks, kept))
        ok = drained and all(task.get("status") == TaskStatus.SUCCEEDED for task in tasks)
        for line in demo_report.summary(tasks, kept, route):
            console.print(line, style="green" if ok else "red", highlight=False)
        if not drained:
            console.print("[red]the mesh did not drain within --timeout[/red]")
        for line in stand_in_lines(stack.mesh, Path.cwd()) + demo_report.next_step(str(args.config), inputs, flow_name):
            _say(line)
        return 0 if ok else 1
    except KeyboardInterrupt:  # Ctrl-C: the stack stops as `asya up`'s does, the workers' last lines to the log
        started.log.hush()
        console.print("stopped before the demo ended", highlight=False)
        return INTERRUPTED
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C would cut the stop short
        started.stop()
