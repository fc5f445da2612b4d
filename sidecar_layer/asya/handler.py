"""Loading the user's handler from `ASYA_HANDLER` and running it in any of its styles (docs/actors.md).

Styles are told apart by what a call returns, not by inspecting the function: a plain value, a
coroutine, a generator or an async generator. That keeps `functools.partial`, decorated functions and
callable objects working without special cases. All styles go through one driver loop.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import inspect
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from asya.abi import AbiError, EnvelopeState, Frame, as_verb, deep_copy, frame_from_envelope
from asya.variables import HANDLER

HandlerMode = Literal["payload", "envelope"]
NOT_LOADED = "cannot load its handler"  # "<actor> cannot load its handler: <problem>", said and raised alike
PROBLEM_FIELD = "handler_problem"  # the field of the start's record that says why (`asya_local.load_failures`)
Handler = Callable[[Any], Any]


class HandlerConfigError(Exception):
    """`ASYA_HANDLER` does not name a usable callable: found when the sidecar is built (an actor's
    function: at its execution environment's start, `load_or_defer`). `problem` is what is wrong, without the
    variable: `asya check` names the actor's `handler` field instead (`asya_local.handler_imports`)."""

    def __init__(self, problem: str, spec: str) -> None:
        super().__init__(f"{problem} ({HANDLER.name}={spec!r})")
        self.problem = problem


class HandlerImportError(HandlerConfigError, ImportError):
    """The handler's module, or something it imports, cannot be imported: an ImportError, as what it
    wraps is, so that a resiliency rule for ImportError matches it."""


class HandlerModuleError(HandlerConfigError):
    """The handler's module raised something other than an ImportError while it was imported: its own
    code failed (it may read a secret or file that only its deployed environment has)."""


def load_handler(spec: str, *, create: bool = True) -> Handler:
    """Resolve `module.function` or `module.Class.method` (the class is instantiated once, no arguments).
    `create=False` looks the method up on the class without creating it: what `asya check` resolves,
    so that a class whose `__init__` loads a model is named, not run (`asya_local.handler_imports`)."""
    parts = spec.split(".") if isinstance(spec, str) else []
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        raise HandlerConfigError("must be 'module.function' or 'module.Class.method'", str(spec))
    module, attributes = _import_longest_prefix(parts, spec)
    target: Any = module
    dotted, owner = module.__name__, f"module {module.__name__!r}"  # `owner`: the target, as a message names it
    for name in attributes:
        if inspect.isclass(target) and create:
            target = _instantiate(target, owner, spec)
        try:
            found = getattr(target, name)
        except AttributeError:
            raise HandlerConfigError(f"{owner} has no attribute {name!r}{_did_you_mean(target, name)}", spec) from None
        target, dotted = found, f"{dotted}.{name}"
        owner = f"{'class' if inspect.isclass(found) else 'object'} {dotted!r}"
    if inspect.isclass(target) or not callable(target):
        raise HandlerConfigError(f"names {type(target).__name__}, not a function or method", spec)
    return target  # type: ignore[no-any-return]


def load_or_defer(spec: str, actor: str, on_failure: Callable[[HandlerConfigError], None]) -> Handler:
    """The handler; or, when it cannot be loaded (`on_failure` is told why, at the start), one that
    loads it at each call and, while that fails, raises the load error naming the actor: each envelope
    then fails as under a handler that raises (resiliency, x-sink, its task failed with the error), so
    a mistyped handler ends its tasks with the reason at once instead of failing the environment's
    init, which would leave them pending until SQS redrove them to x-sump (docs/actors.md, "A handler
    that cannot be loaded"). A load that succeeds later (a class whose `__init__` met a passing
    failure) is kept."""
    try:
        return load_handler(spec)
    except HandlerConfigError as exc:
        on_failure(exc)
    loaded: list[Handler] = []

    def deferred(argument: Any) -> Any:
        if not loaded:
            try:
                loaded.append(load_handler(spec))
            except HandlerConfigError as exc:
                raise type(exc)(f"{actor} {NOT_LOADED}: {exc.problem}", spec) from exc.__cause__
        return loaded[0](argument)

    return deferred


def _did_you_mean(target: Any, name: str) -> str:
    """` (did you mean 'split'?)` when `target` has a public name close to the mistyped one."""
    close = difflib.get_close_matches(name, [known for known in dir(target) if not known.startswith("_")], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _import_longest_prefix(parts: list[str], spec: str) -> tuple[Any, list[str]]:
    """Import the longest importable module prefix; a module that fails inside is reported as such."""
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            return importlib.import_module(module_name), parts[split:]
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if module_name != missing and not module_name.startswith(missing + "."):
                raise HandlerImportError(f"importing {module_name!r} failed: {exc}", spec) from exc
        except ImportError as exc:
            raise HandlerImportError(f"importing {module_name!r} failed: {exc}", spec) from exc
        except Exception as exc:
            raise HandlerModuleError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}", spec) from exc
    raise HandlerImportError(f"no module named {parts[0]!r}", spec)


def _instantiate(cls: type, owner: str, spec: str) -> Any:
    try:
        return cls()
    except Exception as exc:
        raise HandlerConfigError(
            f"{owner} could not be created with no arguments: {type(exc).__name__}: {exc}", spec
        ) from exc


@dataclass(slots=True)
class HandlerOutput:
    """What one handler call produced. `frames == []` means "nothing more to do" (returned `None`)."""

    frames: list[Frame]


class _EventLoops(threading.local):
    """One event loop per thread, reused across messages: creating one per call costs more than a hop."""

    loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        if self.loop is None or self.loop.is_closed():
            self.loop = asyncio.new_event_loop()
        return self.loop


_loops = _EventLoops()
# what a call of a handler in a style other than a plain function returns
_STYLED = (types.CoroutineType, types.GeneratorType, types.AsyncGeneratorType)


def discard_event_loop() -> None:
    """After a timeout the loop may still hold the abandoned handler's tasks: cancel them, start afresh."""
    loop, _loops.loop = _loops.loop, None
    if loop is not None and not loop.is_running():
        for task in asyncio.all_tasks(loop):
            task.cancel()


def invoke(handler: Handler, state: EnvelopeState, mode: HandlerMode) -> HandlerOutput:
    """Call the handler on the payload (or envelope) and collect its frames; exceptions propagate."""
    argument = state.payload if mode == "payload" else deep_copy(state.as_dict())
    result = handler(argument)
    if isinstance(result, _STYLED):  # one check on every hop; a plain value, the usual, is none of them
        if inspect.iscoroutine(result):
            result = _loops.get().run_until_complete(result)
        if inspect.isgenerator(result) or inspect.isasyncgen(result):
            return HandlerOutput(_drive(result, state, mode))
    if result is None:
        return HandlerOutput([])
    return HandlerOutput([_to_frame(state, result, mode)])


def _to_frame(state: EnvelopeState, value: Any, mode: HandlerMode) -> Frame:
    return state.capture(value) if mode == "payload" else frame_from_envelope(state, value)


def _drive(generator: Any, state: EnvelopeState, mode: HandlerMode) -> list[Frame]:
    """Run a (sync or async) generator to the end, answering verbs and collecting yielded outputs."""
    step = _AsyncStepper(generator) if inspect.isasyncgen(generator) else generator
    frames: list[Frame] = []
    reply: Any = None
    error: AbiError | None = None
    while True:
        try:
            item = step.throw(error) if error is not None else step.send(reply)
        except StopIteration:
            return frames
        reply, error = None, None
        verb = as_verb(item)
        if verb is None:
            frames.append(_to_frame(state, item, mode))
            continue
        try:
            reply = state.apply(verb)
        except AbiError as exc:
            error = exc


class _AsyncStepper:
    """Steps an async generator from sync code with the thread's loop, one `yield` at a time."""

    def __init__(self, generator: Any) -> None:
        self._generator = generator
        self._loop = _loops.get()

    def send(self, value: Any) -> Any:
        return self._step(self._generator.asend(value))

    def throw(self, error: BaseException) -> Any:
        return self._step(self._generator.athrow(error))

    def _step(self, awaitable: Any) -> Any:
        try:
            return self._loop.run_until_complete(awaitable)
        except StopAsyncIteration:
            raise StopIteration from None
