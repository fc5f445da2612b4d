"""Reading an actor's secrets from Secrets Manager and SSM Parameter Store, with what each service's
quotas ask of a mesh that scales out.

Parameter Store answers 40 transactions a second per account and region by default, shared by
`GetParameter`, `GetParameters` and every other workload of the account; an SQS event source starts
many execution environments a minute, and each reads its parameters at its start. So an actor's
parameters are read ten a call (`GetParameters`' most), and a throttled call is tried again, after a
random wait, for a few seconds before the start fails. Secrets Manager's `GetSecretValue` is read one
secret a call (its quota is far higher). Values are kept `max_age` seconds, so `asya.secret()` sees a
rotated secret within that time without a read per call.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from asya.clients import connect_failures, init_client, unreachable

SSM_NAMES_PER_CALL = 10  # GetParameters' most
THROTTLE_SECONDS = 4.0  # how long a throttled read is tried again, well within Lambda's 10 s init
THROTTLE_FIRST_WAIT = 0.1
THROTTLED = ("ThrottlingException", "TooManyUpdates")

Where = tuple[str, str]  # (service: "secretsmanager" or "ssm", the secret's or parameter's name)


class SecretError(RuntimeError):
    """A secret could not be read; the message names the variable and the secret, never a value."""


class SecretReader:
    """The raw values of an actor's secrets, read as few calls as each service allows and kept for
    `max_age` seconds. `clients` (by service) and `sleep` are for tests; clients are made on first use."""

    def __init__(
        self,
        max_age: float,
        clients: Mapping[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_age = max_age
        self.clients = dict(clients or {})
        self.sleep = sleep
        self.kept: dict[Where, tuple[str, float]] = {}

    def forget(self) -> None:
        """Every kept value dropped: the next read asks the service (a new execution environment)."""
        self.kept.clear()

    def read(self, wanted: Mapping[str, Where]) -> dict[str, str]:
        """`{variable: raw value}` for `{variable: (service, name)}`: kept values younger than
        `max_age`, the rest read now (parameters ten a call)."""
        now = time.monotonic()
        stale = {variable: where for variable, where in wanted.items() if not self._fresh(where, now)}
        parameters = {where[1]: variable for variable, where in stale.items() if where[0] == "ssm"}
        names = sorted(parameters)
        for start in range(0, len(names), SSM_NAMES_PER_CALL):
            for name, value in self._parameters(names[start : start + SSM_NAMES_PER_CALL], parameters).items():
                self.kept[("ssm", name)] = (value, now)
        for variable, (service, name) in stale.items():
            if service == "secretsmanager" and not self._fresh((service, name), now):
                self.kept[(service, name)] = (self._secret(variable, name), now)
        return {variable: self.kept[where][0] for variable, where in wanted.items()}

    def _fresh(self, where: Where, now: float) -> bool:
        return where in self.kept and now - self.kept[where][1] < self.max_age

    def _client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = init_client(service)
        return self.clients[service]

    def _parameters(self, names: list[str], variables: Mapping[str, str]) -> dict[str, str]:
        """One `GetParameters` (decrypted) of at most ten names; a name it does not know is an error
        naming its variable and the parameter."""
        answer = self._call("ssm", variables[names[0]], names[0], Names=names, WithDecryption=True)
        if answer.get("InvalidParameters"):
            missing = answer["InvalidParameters"][0]
            raise SecretError(
                f"{variables[missing]}: cannot read ssm {missing!r}: no such parameter, or not one this role may read"
            )
        return {parameter["Name"]: parameter["Value"] for parameter in answer["Parameters"]}

    def _secret(self, variable: str, name: str) -> str:
        answer = self._call("secretsmanager", variable, name, SecretId=name)
        if "SecretString" in answer:
            return str(answer["SecretString"])
        return bytes(answer["SecretBinary"]).decode()

    def _call(self, service: str, variable: str, name: str, **request: Any) -> Any:
        """The service's answer; a throttled call tried again after a random wait (growing, at most
        `THROTTLE_SECONDS` in all), any other failure a `SecretError` naming the variable and secret."""
        from botocore.exceptions import ClientError

        client = self._client(service)
        operation = client.get_parameters if service == "ssm" else client.get_secret_value
        deadline = time.monotonic() + THROTTLE_SECONDS
        wait = THROTTLE_FIRST_WAIT
        while True:
            try:
                return operation(**request)
            except ClientError as exc:
                error = exc.response.get("Error", {})
                code = error.get("Code", "")
                if code in THROTTLED and time.monotonic() + wait < deadline:
                    self.sleep(random.uniform(wait / 2, wait))
                    wait *= 2
                    continue
                raise SecretError(
                    f"{variable}: cannot read {service} {name!r}: {code}: {error.get('Message')}"
                ) from None
            except connect_failures() as exc:
                raise SecretError(f"{variable}: {unreachable(service, exc)}") from None
