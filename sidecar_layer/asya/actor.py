"""The entry point of an actor's Lambda function, `asya.actor.lambda_handler`: importing this module is
the execution environment's init.

Lambda's runtime imports a function's handler module before its first event (or, with provisioned
concurrency, before any event at all), so everything an actor does once happens here: its secrets and
files are fetched (`asya.startup`), then the sidecar is built, which imports the handler's module and
creates its class. A model loaded in `__init__` is therefore loaded in the init phase, and an
environment kept warm has it ready. A handler that cannot be loaded (a library that is not shipped,
a mistyped name) does not fail the init: it is said at ERROR, and each envelope fails with the error
(`asya.handler.load_or_defer`), so its task ends with the reason instead of waiting in the queue. A
secret or file that cannot be read fails the init, as any exception here does.

`asya.lambda_handler` is the same sidecar built at its first event instead, for tests and for code that
sets the environment after importing it.
"""

from __future__ import annotations

from asya.entry import kept_for_life

with kept_for_life():  # the sidecar's modules are the environment's for life: no collection among them
    from asya.sidecar import lambda_handler
    from asya.startup import prepare

__all__ = ["lambda_handler"]

prepare()
lambda_handler.built  # noqa: B018 - building is the point: the handler is loaded now, in the init phase
