"""The munge key: generated at deploy time, kept in Secrets Manager, read by nodes through
their instance role. It never appears in user data, stack outputs or the config store."""

from __future__ import annotations

import pulumi
import pulumi_aws.secretsmanager as secretsmanager
import pulumi_random as random_

from slurmstack.contract import resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, tags

# munge reads a key of at least 32 bytes; 1024 is what `mungekey` generates by default.
MUNGE_KEY_BYTES = 1024


class MungeKey(pulumi.ComponentResource):
    """RandomBytes -> Secret + SecretVersion (binary). Pulumi keeps the bytes encrypted in
    its state (RandomBytes marks them secret; the version marks its input secret too)."""

    secret: secretsmanager.Secret

    def __init__(self, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        name = resource_name(plan.name, Role.SECRETS)
        super().__init__("slurmstack:stack:MungeKey", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        key_name = resource_name(plan.name, "munge-key")
        key = random_.RandomBytes(key_name, length=MUNGE_KEY_BYTES, opts=child)
        self.secret = secretsmanager.Secret(
            key_name,
            name=plan.munge_secret_name,
            description=f"slurmstack {plan.name}: munge key (binary, {MUNGE_KEY_BYTES} bytes)",
            # Deleted at once on destroy: nothing is encrypted at rest with a munge key (it only
            # authenticates live messages), and a secret pending deletion would block
            # re-creating a cluster of the same name for up to 30 days.
            recovery_window_in_days=0,
            tags=tags(plan, Role.SECRETS, key_name),
            opts=child,
        )
        secretsmanager.SecretVersion(
            key_name,
            secret_id=self.secret.id,
            # Secret all the way: RandomBytes marks base64 secret, and so does this version.
            secret_binary=key.base64,
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["secret_binary"]),
        )
        self.register_outputs({"secret_arn": self.secret.arn})
