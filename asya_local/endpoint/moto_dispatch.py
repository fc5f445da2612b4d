"""Find each request's moto backend once per host: `apply_dispatch_cache()` patches moto 5.2.5 in place.

moto's server picks the backend of every request by host name: it lists moto's package directory
(one `isdir` per service, about 150) and then tries each service's URL patterns in turn, under one
lock, on every request. That was a tenth of the local endpoint's time in `bench/local_mesh`. The
answer depends only on the host name and moto's own (fixed) tables, so it is remembered per host.
"""

from __future__ import annotations

import functools
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication

_ORIGINAL = DomainDispatcherApplication.get_backend_for_host


@functools.lru_cache(maxsize=1024)
def _backend_for_host(application: DomainDispatcherApplication, host: str | None) -> Any:
    return _ORIGINAL(application, host)


def apply_dispatch_cache() -> None:
    DomainDispatcherApplication.get_backend_for_host = _backend_for_host  # type: ignore[method-assign]
