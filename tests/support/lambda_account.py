"""A Lambda client's answers for an account, as `asya_local.account` asks them: what `asya check
--account` and `asya deploy` are tested against (moto does not model account concurrency)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import NoCredentialsError


class Account:
    """Lambda's answers for an account: its limit and unreserved concurrency, and what the mesh's
    functions hold today (a stack deployed before): reservations, provisioned concurrency on their
    `live` alias, and their package type."""

    class exceptions:  # noqa: N801 - the shape of a boto3 client's `exceptions`
        class ResourceNotFoundException(Exception):  # noqa: N818 - boto3's name
            pass

        class ProvisionedConcurrencyConfigNotFoundException(Exception):  # noqa: N818 - boto3's name
            pass

    def __init__(
        self,
        limit: int,
        unreserved: int,
        reserved: dict[str, int] | None = None,
        provisioned: dict[str, int] | None = None,
        package_types: dict[str, str] | None = None,
    ) -> None:
        self.limit, self.unreserved, self.reserved = limit, unreserved, reserved or {}
        self.provisioned, self.package_types = provisioned or {}, package_types or {}

    def get_account_settings(self) -> dict[str, Any]:
        return {"AccountLimit": {"ConcurrentExecutions": self.limit, "UnreservedConcurrentExecutions": self.unreserved}}

    def get_function_concurrency(self, FunctionName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        if FunctionName in self.reserved:
            return {"ReservedConcurrentExecutions": self.reserved[FunctionName]}
        if FunctionName in self.provisioned or FunctionName in self.package_types:
            return {}  # deployed, without a reservation
        raise self.exceptions.ResourceNotFoundException(FunctionName)

    def get_provisioned_concurrency_config(self, FunctionName: str, Qualifier: str) -> dict[str, Any]:  # noqa: N803
        assert Qualifier == "live"
        if FunctionName not in self.provisioned:
            raise self.exceptions.ProvisionedConcurrencyConfigNotFoundException(FunctionName)
        return {"RequestedProvisionedConcurrentExecutions": self.provisioned[FunctionName]}

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        if FunctionName not in self.package_types:
            raise self.exceptions.ResourceNotFoundException(FunctionName)
        return {"FunctionName": FunctionName, "PackageType": self.package_types[FunctionName]}


class NoCredentials(Account):
    def get_account_settings(self) -> dict[str, Any]:
        raise NoCredentialsError

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        raise NoCredentialsError
