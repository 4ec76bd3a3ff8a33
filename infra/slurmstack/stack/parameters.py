"""Deploy-time values published as SSM parameters under the cluster's prefix.

Nodes read them at boot (waiting until they exist), so no instance waits on a slow
resource only to learn its address, and user data carries only stable identifiers.
"""

from __future__ import annotations

import pulumi
import pulumi_aws.ssm as ssm

from slurmstack.contract import DeployParameter, resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, tags


def publish(
    plan: ClusterPlan,
    key: DeployParameter | str,
    value: pulumi.Input[str],
    *,
    role: Role,
    parent: pulumi.Resource,
    tier: str = "Standard",
    depends_on: list[pulumi.Resource] | None = None,
) -> ssm.Parameter:
    name = plan.parameter(key)
    text = key.value if isinstance(key, DeployParameter) else key
    logical = resource_name(plan.name, "param-" + text.replace("/", "-"))
    return ssm.Parameter(
        logical,
        name=name,
        type="String",
        tier=tier,
        value=value,
        description=f"slurmstack {plan.name}: {text} (read by nodes at boot)",
        tags=tags(plan, role, name),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on or []),
    )
