"""The accounting database's password, generated at deploy time and kept in Secrets Manager
(like the munge key): the head node reads it through its role and writes it into slurmdbd.conf
itself, so it is in no user data, stack output, config store object or resource input but the
secret version's (which Pulumi keeps encrypted). An external database brings its own secret
(slurm.accounting.database.password_secret): nothing is created for it here.
"""

from __future__ import annotations

import pulumi
import pulumi_aws.secretsmanager as secretsmanager
import pulumi_random as random_

from slurmstack.accounting import AccountingPlan
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, resource_name, tags

# 32 letters and digits (about 190 bits): nothing slurmdbd.conf's parser or SQL would need to
# escape, and within what RDS takes for a master password.
PASSWORD_LENGTH = 32


class AccountingPassword(pulumi.ComponentResource):
    """RandomPassword -> Secret + SecretVersion (SecretString), for the local and rds databases."""

    secret: secretsmanager.Secret
    password: random_.RandomPassword

    def __init__(
        self,
        plan: ClusterPlan,
        accounting: AccountingPlan,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = resource_name(plan.name, "accounting-db-password")
        super().__init__("slurmstack:stack:AccountingPassword", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.password = random_.RandomPassword(
            name, length=PASSWORD_LENGTH, special=False, opts=child
        )
        self.secret = secretsmanager.Secret(
            name,
            name=accounting.database.password_secret,
            description=(
                f"slurmstack {plan.name}: password of the accounting database user "
                f"{accounting.database.user} ({accounting.database.type.value} database)"
            ),
            # The database keeps its records whatever happens to this secret, so no recovery
            # window: a secret pending deletion would block re-creating a cluster of the same
            # name for up to 30 days.
            recovery_window_in_days=0,
            tags=tags(plan, Role.SECRETS, name),
            opts=child,
        )
        secretsmanager.SecretVersion(
            name,
            secret_id=self.secret.id,
            secret_string=self.password.result,
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["secret_string"]),
        )
        self.register_outputs({"secret_arn": self.secret.arn})
