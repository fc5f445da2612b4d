"""boto3 clients made on first use: importing boto3 and building a client costs cold-start time that
a function which never reaches a service should not pay. Tests and tools pass a client of their own."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

ClientT = TypeVar("ClientT")


STANDARD_RETRIES = {"mode": "standard", "max_attempts": 5}


class LazyClient(Generic[ClientT]):
    """A class attribute `client = LazyClient("sqs")` reads the instance's `_client`, which its
    `__init__` sets (None: make one on first use, with boto3's standard retry mode, or with `config`:
    botocore `Config` settings of its own)."""

    def __init__(self, service: str, **config: Any) -> None:
        self.service = service
        self.slot = "_client"
        self.config = {"retries": STANDARD_RETRIES, **config}

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
            import boto3
            from botocore.config import Config

            client = boto3.client(self.service, config=Config(**self.config))  # type: ignore[call-overload]
            setattr(instance, self.slot, client)
        return client  # type: ignore[no-any-return]
