"""What the last `pulumi up` deployed, and the change preflight that reads it. Every `pulumi
up` runs the program once offline first (slurmstack.program.offline_self_run: the offline
engine, in a thread of its own with a separate Pulumi runtime) to learn every resource it is
about to register with its inputs; compares that with the record the last successful `pulumi
up` left in the cluster's bucket (``RECORD_KEY``, found through the bucket's SSM parameter);
and refuses, before registering anything, what slurmstack.change.guard refuses. The record
is then written again, after every other resource of the cluster (it depends on them all),
so it only ever describes a deployment that went through.

Under the offline engine (`slurmstack plan`, the tests) stack config ``slurmstack:offline``
is true: no AWS call is made and the record holds a placeholder. A first deployment (no
record yet) has nothing to compare with.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi
import pulumi_aws.s3 as s3

from slurmstack.change.effects import Context
from slurmstack.change.guard import Refresh, refresh_problems, storage_problems
from slurmstack.change.plan import change_plan
from slurmstack.change.snapshot import Snapshot, from_document, from_run
from slurmstack.contract import DeployParameter, resource_name
from slurmstack.plan import ClusterPlan
from slurmstack.stack.common import Role, tags

RECORD_KEY = "slurmstack/deployed/resources.json.gz"
OFFLINE_KEY = "offline"  # stack config slurmstack:offline, set by the offline engine
OFFLINE_RECORD = "written by `pulumi up` only"


class Observer(Protocol):
    """What the preflight reads from AWS."""

    def deployed(self, plan: ClusterPlan) -> Snapshot | None: ...

    def refreshes(self, groups: list[str]) -> dict[str, Refresh]: ...


@dataclass
class AwsObserver:
    """The last record from the cluster's bucket, and each group's latest instance refresh."""

    region: str

    def _client(self, service: str) -> Any:
        import boto3

        make: Any = boto3.client
        return make(service, region_name=self.region)

    def deployed(self, plan: ClusterPlan) -> Snapshot | None:
        ssm, s3_client = self._client("ssm"), self._client("s3")
        try:
            found = ssm.get_parameter(Name=plan.parameter(DeployParameter.BUCKET))
            bucket = found["Parameter"]["Value"]
            body = s3_client.get_object(Bucket=bucket, Key=RECORD_KEY)["Body"].read()
        except (ssm.exceptions.ParameterNotFound, s3_client.exceptions.NoSuchKey):
            return None  # a first deployment, or one made before records were kept
        return from_document(json.loads(gzip.decompress(body)))

    def refreshes(self, groups: list[str]) -> dict[str, Refresh]:
        autoscaling = self._client("autoscaling")
        out = {}
        for group in groups:
            found = autoscaling.describe_instance_refreshes(
                AutoScalingGroupName=group, MaxRecords=1
            )["InstanceRefreshes"]
            if found:
                latest = found[0]
                out[group] = Refresh(
                    group=group,
                    status=str(latest["Status"]),
                    percentage_complete=latest.get("PercentageComplete"),
                    instances_to_update=latest.get("InstancesToUpdate"),
                    start_time=str(latest["StartTime"]) if "StartTime" in latest else None,
                )
        return out


def record_document(run: Any, cluster: str) -> dict[str, Any]:
    from slurmstack.report.plan_report import resources_section

    return {"cluster": cluster, "resources": resources_section(run)}


def change_preflight(
    run: Any, plan: ClusterPlan, observer: Observer, accepted: set[str]
) -> tuple[dict[str, Any], list[str]]:
    """(the record this deployment will leave, the problems that stop it), from the offline
    run of this very program and definition (``run``, an OfflineRun)."""
    document = record_document(run, plan.name)
    old = observer.deployed(plan)
    if old is None:
        return document, []
    context = Context(scale_in_wait_minutes=plan.spec.health.scale_in_wait_minutes)
    changes = change_plan(
        old, from_run(run, plan.name), against="the last deployment", context=context
    )
    problems = storage_problems(changes, accepted)
    from slurmstack.change.guard import rolled_groups

    rolled = rolled_groups(changes)
    if rolled:
        problems += refresh_problems(changes, observer.refreshes(rolled))
    return document, problems


def register_record(
    plan: ClusterPlan, bucket: s3.Bucket, document: dict[str, Any] | None, after: pulumi.Resource
) -> s3.BucketObjectv2:
    """The record, written once everything else of the cluster is (depends_on ``after``)."""
    name = resource_name(plan.name, "deployed")
    if document is None:
        content = base64.b64encode(OFFLINE_RECORD.encode()).decode()
    else:
        content = base64.b64encode(gzip.compress(json.dumps(document).encode(), mtime=0)).decode()
    return s3.BucketObjectv2(
        name,
        bucket=bucket.id,
        key=RECORD_KEY,
        content_base64=content,
        content_type="application/gzip",
        tags=tags(plan, Role.CONFIG, name),
        # At the stack's top level: depending on the cluster component waits for every
        # resource under it, which a child of it could not do.
        opts=pulumi.ResourceOptions(depends_on=[after]),
    )
