"""Amazon Managed Service for Prometheus and Amazon Managed Grafana (observability.
managed_prometheus, managed_grafana), and login nodes' monitoring permissions, run through the
program under Pulumi mocks (preview=False): the workspaces, the remote-write parameter, the
head role's right to write to that workspace only, Grafana's role that may only query it, and
nothing of either when they are off."""

from __future__ import annotations

import json
from typing import Any

import pytest

from slurmstack.offline.standins import ACCOUNT_ID
from stack.iam_eval import decide
from support.stack import T_PARAM, T_ROLE_POLICY, run_ok, small_cluster, with_changes

pytestmark = pytest.mark.stack

T_AMP = "aws:amp/workspace:Workspace"
T_AMG = "aws:grafana/workspace:Workspace"
T_ROLE = "aws:iam/role:Role"


def managed(**observability: Any) -> dict[str, Any]:
    return with_changes(small_cluster(), observability=observability)


def policies(result: Any) -> dict[str, dict[str, Any]]:
    return {p.inputs["name"]: json.loads(p.inputs["policy"]) for p in result.of_type(T_ROLE_POLICY)}


def test_no_workspace_and_no_remote_write_right_by_default() -> None:
    result = run_ok(small_cluster())
    assert result.of_type(T_AMP) == [] and result.of_type(T_AMG) == []
    assert not [p for p in result.of_type(T_PARAM) if "remote-write" in p.inputs["name"]]
    head = policies(result)["tiny-head"]
    assert decide([head], "aps:RemoteWrite", "*") == "implicit-deny"
    assert "prometheus_workspace_id" not in result.outputs


def test_the_stack_prints_the_port_forward_that_reaches_the_heads_grafana() -> None:
    result = run_ok(small_cluster())
    head = result.one("aws:ec2/instance:Instance")
    assert result.outputs["grafana_port_forward_command"] == (
        f"aws ssm start-session --region us-east-1 --target {head.id} --document-name "
        "AWS-StartPortForwardingSession --parameters portNumber=3000,localPortNumber=3000"
    )


def test_the_head_remote_writes_to_its_workspace_only() -> None:
    result = run_ok(managed(managed_prometheus=True))
    workspace = result.one(T_AMP)
    assert workspace.inputs["alias"] == "slurmstack-tiny"
    assert workspace.inputs["tags"]["slurmstack:cluster"] == "tiny"
    arn = workspace.outputs["arn"]
    assert arn.startswith(f"arn:aws:aps:us-east-1:{ACCOUNT_ID}:workspace/ws-")
    (parameter,) = [
        p
        for p in result.of_type(T_PARAM)
        if p.inputs["name"].endswith("/monitoring/remote-write-url")
    ]
    assert parameter.inputs["value"] == (
        workspace.outputs["prometheusEndpoint"].rstrip("/") + "/api/v1/remote_write"
    )
    assert parameter.inputs["name"] == "/slurmstack/tiny/monitoring/remote-write-url"
    roles = policies(result)
    write = roles["tiny-monitoring-prometheus-remote-write"]
    # Attached to the head's role, and the head's own policy grants no aps at all.
    (attached,) = [
        p
        for p in result.of_type(T_ROLE_POLICY)
        if p.name == "tiny-monitoring-prometheus-remote-write"
    ]
    (head_role,) = [r for r in result.of_type(T_ROLE) if r.name == "tiny-head"]
    assert attached.inputs["role"] == head_role.id
    head = [roles["tiny-head"], write]
    other = arn.rsplit("/", 1)[0] + "/ws-00000000-0000-0000-0000-000000000000"
    assert decide(head, "aps:RemoteWrite", arn) == "allow"
    assert decide(head, "aps:RemoteWrite", other) == "implicit-deny"
    assert decide(head, "aps:QueryMetrics", arn) == "implicit-deny"
    assert decide(head, "aps:DeleteWorkspace", arn) == "implicit-deny"
    assert decide([roles["tiny-pool-gpu"]], "aps:RemoteWrite", arn) == "implicit-deny"
    assert result.outputs["prometheus_workspace_id"] == workspace.id
    assert result.of_type(T_AMG) == []


def test_managed_grafana_reads_that_workspace_through_a_role_of_its_own() -> None:
    result = run_ok(managed(managed_prometheus=True, managed_grafana=True))
    grafana = result.one(T_AMG)
    prometheus_arn = result.one(T_AMP).outputs["arn"]
    assert grafana.inputs["authenticationProviders"] == ["AWS_SSO"]
    assert grafana.inputs["accountAccessType"] == "CURRENT_ACCOUNT"
    assert grafana.inputs["permissionType"] == "CUSTOMER_MANAGED"
    assert grafana.inputs["dataSources"] == ["PROMETHEUS"]
    (role,) = [r for r in result.of_type(T_ROLE) if r.name == "tiny-monitoring-grafana"]
    assert grafana.inputs["roleArn"] == role.outputs["arn"]
    trust = json.loads(role.inputs["assumeRolePolicy"])
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "grafana.amazonaws.com"}
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT_ID}}
    query = policies(result)["tiny-monitoring-grafana"]
    assert decide([query], "aps:QueryMetrics", prometheus_arn) == "allow"
    assert decide([query], "aps:GetSeries", prometheus_arn) == "allow"
    assert decide([query], "aps:RemoteWrite", prometheus_arn) == "implicit-deny"
    other = prometheus_arn.rsplit("/", 1)[0] + "/ws-00000000-0000-0000-0000-000000000000"
    assert decide([query], "aps:QueryMetrics", other) == "implicit-deny"
    assert result.outputs["grafana_endpoint"] == grafana.outputs["endpoint"]


def test_a_login_node_ships_its_own_logs_only() -> None:
    definition = small_cluster()
    definition["login_pools"] = [{"name": "login", "instance_type": "m7i.2xlarge", "count": 1}]
    result = run_ok(definition)
    login, pool = policies(result)["tiny-login-login"], policies(result)["tiny-pool-gpu"]

    def stream(source: str) -> str:
        return (
            f"arn:aws:logs:us-east-1:{ACCOUNT_ID}:log-group:/slurmstack/tiny/{source}"
            ":log-stream:i-0aaaaaaaaaaaaaaaa"
        )

    for source in ("agent", "login"):
        assert decide([login], "logs:PutLogEvents", stream(source)) == "allow", source
    for source in ("slurmctld", "slurmd", "health-check", "slurmdbd"):
        assert decide([login], "logs:PutLogEvents", stream(source)) == "implicit-deny", source
    assert decide([pool], "logs:PutLogEvents", stream("login")) == "implicit-deny"
    assert decide([login], "sns:Publish", "*") == "implicit-deny"
    groups = {g.inputs["name"] for g in result.of_type("aws:cloudwatch/logGroup:LogGroup")}
    assert "/slurmstack/tiny/login" in groups
    # The head's Prometheus reaches node_exporter on the login nodes, nothing else new.
    rules = {
        r.name: r.inputs
        for r in result.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    }
    exporter = rules["tiny-login-node-exporter-from-head"]
    assert (exporter["fromPort"], exporter["toPort"]) == (9100, 9100)
    without = {g.inputs["name"] for g in run_ok(small_cluster()).of_type(
        "aws:cloudwatch/logGroup:LogGroup")}  # fmt: skip
    assert "/slurmstack/tiny/login" not in without
