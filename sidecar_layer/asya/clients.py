"""boto3 clients made on first use: importing boto3 and building a client costs cold-start time that
a function which never reaches a service should not pay. Tests and tools pass a client of their own."""

from __future__ import annotations

import threading
from typing import Any, Generic, TypeVar, overload

ClientT = TypeVar("ClientT")
# boto3's default session is not safe to make clients from in two threads at once (`asya.together`)
_MAKING = threading.Lock()


STANDARD_RETRIES = {"mode": "standard", "max_attempts": 5}
# A function in a VPC reaches a service only through a VPC endpoint or a NAT route; without one a
# connection never opens, and botocore's default (60 s a connect, 5 attempts) spends minutes learning
# that. Reads keep botocore's 60 s: a large object may be slow to arrive, never slow to connect.
CONNECT_SECONDS = 3
# The execution environment's start (its secrets and files) must finish within Lambda's 10 s init:
# 2 s a connect and 3 attempts say "no route" in about 7 s, with time left to name the service.
INIT_CONNECT_SECONDS = 2
INIT_RETRIES = {"mode": "standard", "total_max_attempts": 3}


def init_client(service: str) -> Any:
    """A client for the execution environment's start (`asya.startup`): short connects, few attempts."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=INIT_CONNECT_SECONDS, retries=INIT_RETRIES)  # type: ignore[arg-type]
    return boto3.client(service, config=config)  # type: ignore[call-overload]


class LazyClient(Generic[ClientT]):
    """A class attribute `client = LazyClient("sqs")` reads the instance's `_client`, which its
    `__init__` sets (None: make one on first use, with boto3's standard retry mode and a
    `CONNECT_SECONDS` connect, or with `config`: botocore `Config` settings of its own)."""

    def __init__(self, service: str, **config: Any) -> None:
        self.service = service
        self.slot = "_client"
        self.config = {"retries": STANDARD_RETRIES, "connect_timeout": CONNECT_SECONDS, **config}

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    @overload
    def __get__(self, instance: None, owner: type) -> LazyClient[ClientT]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> ClientT: ...

    def __get__(self, instance: object | None, owner: type) -> LazyClient[ClientT] | ClientT:
        if instance is None:
            return self
        client: Any = getattr(instance, self.slot, None)
        if client is None:
            with _MAKING:
                client = getattr(instance, self.slot, None)  # another thread may have made it meanwhile
                if client is None:
                    client = self._make()
                    setattr(instance, self.slot, client)
        return client  # type: ignore[no-any-return]

    def _make(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(self.service, config=Config(**self.config))  # type: ignore[call-overload]


class UnreachableError(RuntimeError):
    """A service that never answered a connect: in a VPC, no endpoint for it and no NAT route."""


def connect_failures() -> tuple[type[Exception], ...]:
    """botocore's errors for a connection that never opened (imported late: see the module's note)."""
    from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

    return (ConnectTimeoutError, EndpointConnectionError)


def unreachable(service: str, exc: BaseException) -> str:
    """Why a service could not be reached, and what a VPC function needs for it."""
    return (
        f"cannot reach {service} ({type(exc).__name__}): a function in a VPC reaches AWS services only "
        f"through a VPC endpoint for {service} or a NAT gateway route, and its security group must allow "
        "outbound HTTPS (docs/actors.md, 'In a VPC')"
    )
