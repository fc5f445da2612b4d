"""A flow of the mesh file (`flows.<name>`): what a user starts, a fixed route or a compiled program."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from asya.resiliency import Seconds
from asya_cdk.actor_config import NAME, StrictModel


class FlowConfig(StrictModel):
    """What a user starts, and what the gateway and MCP expose as a tool: a fixed `route`, or a
    `program`, a Python function of the mesh's code over the payload (`module.function`, from the mesh
    file's folder) compiled ahead of time into decisions the sidecars take (docs/flows.md)."""

    route: list[Annotated[str, Field(pattern=NAME)]] = Field(default_factory=list)
    program: str | None = Field(default=None, pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
    description: str = ""
    timeout: Seconds | None = Field(default=None, gt=0)
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})

    @model_validator(mode="after")
    def _route_or_program(self) -> FlowConfig:
        if bool(self.route) == bool(self.program):
            raise ValueError("give a flow either a route (a list of actors) or a program (module.function)")
        return self

    @field_validator("input_schema")
    @classmethod
    def _schema_compiles_and_examples_match(cls, schema: dict[str, Any]) -> dict[str, Any]:
        """The gateway compiles the schema at its first request and `asya smoke` sends the schema's
        `examples`: a schema it cannot compile, or an example it would refuse, is a mistake in the file."""
        import fastjsonschema

        try:
            validate = fastjsonschema.compile(schema)
        except fastjsonschema.JsonSchemaDefinitionException as exc:
            raise ValueError(f"not a valid JSON Schema: {exc}") from None
        examples = schema.get("examples", [])
        if not isinstance(examples, list):
            raise ValueError("examples: a list of example payloads (JSON Schema's `examples` keyword)")
        for index, example in enumerate(examples):
            try:
                validate(example)
            except fastjsonschema.JsonSchemaValueException as exc:
                raise ValueError(f"examples[{index}] does not match the schema: {exc.message}") from None
        return schema
