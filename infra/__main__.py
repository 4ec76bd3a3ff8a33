"""Pulumi entry point: read the definition from stack config, validate, plan, build.

`pulumi preview` / `pulumi up` run this file; `slurmstack plan` runs the same file under the
offline engine. Everything it creates comes from ``SlurmCluster``; an invalid definition
stops the program before any resource is registered, with every problem as `path: message`.
"""

import pulumi

from slurmstack.findings import Level
from slurmstack.plan import build_plan
from slurmstack.stack import SlurmCluster, export_outputs
from slurmstack.stack.preflight import preflight
from slurmstack.validate import validate_object

CONFIG_NAMESPACE, CONFIG_KEY = "slurmstack", "cluster"


def main() -> None:
    definition = pulumi.Config(CONFIG_NAMESPACE).require_object(CONFIG_KEY)
    result = validate_object(definition, source=f"{CONFIG_NAMESPACE}:{CONFIG_KEY}")
    for finding in result.findings:
        if finding.level is Level.WARNING:
            pulumi.log.warn(finding.line())
    if not result.ok or result.spec is None:
        lines = [f.line() for f in result.findings if f.level is Level.ERROR]
        raise pulumi.RunError(
            f"{CONFIG_NAMESPACE}:{CONFIG_KEY} is not a valid cluster definition:\n"
            + "\n".join(lines)
        )
    plan = build_plan(result.spec)
    problems = preflight(plan, pulumi.Config("aws").get("region"))
    if problems:
        raise pulumi.RunError("\n".join(problems))
    export_outputs(SlurmCluster(plan))


main()
