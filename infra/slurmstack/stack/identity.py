"""Instance roles and profiles: one for the head node, one per pool and one per login pool (a
node can mark only its own pool's instances Unhealthy, and IAM can only say that with a role
per pool). Each role has
one inline policy from slurmstack.stack.policies and nothing attached: the SSM agent's
permissions are part of that policy rather than AWS's managed one, which also lets a node read
every SSM parameter in the account."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws.iam as iam
from pulumi_aws import get_caller_identity_output

from slurmstack.contract import LOGIN_POOL_TAG, LOGIN_ROLE, POOL_TAG, resource_name
from slurmstack.plan import ClusterPlan, LoginPoolPlan, PoolPlan
from slurmstack.stack import policies
from slurmstack.stack.common import Role, tags

EC2_TRUST_POLICY = json.dumps(policies.EC2_TRUST_POLICY)


def _policy_json(
    plan: ClusterPlan, pool: PoolPlan | LoginPoolPlan | None
) -> Callable[[list[Any]], str]:
    def render(args: list[Any]) -> str:
        account, bucket_arn, secret_arn = (str(a) for a in args[:3])
        created = None if args[3] is None else str(args[3])
        scope = {"account": account, "bucket_arn": bucket_arn, "secret_arn": secret_arn}
        if pool is None:
            accounting = policies.accounting_secret_arn(plan, account, created)
            policy = policies.head_policy(plan, **scope, accounting_secret=accounting)
        elif isinstance(pool, LoginPoolPlan):
            policy = policies.login_policy(plan, pool, **scope)
        else:
            policy = policies.pool_policy(plan, pool, **scope)
        return json.dumps(policy, sort_keys=True)

    return render


class Identity(pulumi.ComponentResource):
    """The head node's role and one per pool, each with its inline policy and profile."""

    head_profile: iam.InstanceProfile
    head_role: iam.Role
    pool_profiles: dict[str, iam.InstanceProfile]
    pool_roles: dict[str, iam.Role]
    login_profiles: dict[str, iam.InstanceProfile]
    login_roles: dict[str, iam.Role]

    def __init__(
        self,
        plan: ClusterPlan,
        *,
        bucket_arn: pulumi.Input[str],
        secret_arn: pulumi.Input[str],
        accounting_secret_arn: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``accounting_secret_arn``: the accounting database password's secret when the stack
        creates it (an external database's is named by the definition)."""
        super().__init__(
            "slurmstack:stack:Identity", resource_name(plan.name, Role.IDENTITY), None, opts
        )
        self._child = pulumi.ResourceOptions(parent=self)
        self._plan = plan
        account = get_caller_identity_output(
            opts=pulumi.InvokeOutputOptions(parent=self)
        ).account_id
        self._scope = pulumi.Output.all(account, bucket_arn, secret_arn, accounting_secret_arn)
        self.head_role, self.head_profile = self._role(None)
        self.pool_roles, self.pool_profiles = {}, {}
        for pool in plan.pools:
            self.pool_roles[pool.name], self.pool_profiles[pool.name] = self._role(pool)
        self.login_roles, self.login_profiles = {}, {}
        for login in plan.login_pools:
            self.login_roles[login.name], self.login_profiles[login.name] = self._role(login)
        self.register_outputs(
            {
                "head_profile": self.head_profile.arn,
                "pool_profiles": {name: p.arn for name, p in self.pool_profiles.items()},
            }
        )

    def _role(self, pool: PoolPlan | LoginPoolPlan | None) -> tuple[iam.Role, iam.InstanceProfile]:
        plan = self._plan
        login = isinstance(pool, LoginPoolPlan)
        if pool is None:
            name = resource_name(plan.name, Role.HEAD)
        else:
            name = resource_name(plan.name, LOGIN_ROLE if login else Role.POOL, pool.name)
        # The tags say whose role this is; the bucket policy names the cluster's node roles
        # by them (aws:PrincipalTag), so it does not change when a pool is added.
        role_tags = tags(plan, Role.IDENTITY, name)
        if pool is not None:
            role_tags[LOGIN_POOL_TAG if login else POOL_TAG] = pool.name
        kind = "head node" if pool is None else f"{'login ' if login else ''}pool {pool.name} node"
        role = iam.Role(
            name,
            name=name,
            assume_role_policy=EC2_TRUST_POLICY,
            description=f"slurmstack {plan.name}: {kind} instance role",
            tags=role_tags,
            opts=self._child,
        )
        iam.RolePolicy(
            name,
            name=name,
            role=role.id,
            policy=self._scope.apply(_policy_json(plan, pool)),
            opts=self._child,
        )
        profile = iam.InstanceProfile(
            name, name=name, role=role.name, tags=role_tags, opts=self._child
        )
        return role, profile
