"""What every module of the definition's models shares: the base model and the named string
types more than one of them uses (slurmstack.spec, slurmstack.spec_people)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, WithJsonSchema

# User names are Linux login names (useradd's default pattern): accounts name them, nodes
# create them.
USER_NAME_PATTERN = r"^[a-z_][a-z0-9_.-]{0,30}[$]?$"
# A Secrets Manager secret by name or ARN (names: letters, digits and /_+=.@-, up to 512).
SECRET_ID_PATTERN = (
    r"^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:)?[A-Za-z0-9/_+=.@-]{1,512}$"
)


class Model(BaseModel):
    """Base for every definition model: immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


def matching(pattern: str, what: str) -> AfterValidator:
    """A pattern check whose message says what was expected (the schema keeps the pattern)."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.match(value):
            raise ValueError(f"expected {what} (got {value!r})")
        return value

    return AfterValidator(check)


UserName = Annotated[
    str,
    matching(USER_NAME_PATTERN, "a Linux login name: lowercase, such as alice or j.doe"),
    WithJsonSchema({"type": "string", "pattern": USER_NAME_PATTERN}),
]
