"""Login pools in the stack (under Pulumi mocks, preview=False): a group at the pool's count on
the head's image with the login role's user data, the pool's host key secret, the security
groups' rules for people and Slurm's clients, the optional Network Load Balancer, the login
role's IAM policy asked concrete questions, and the outputs `slurmstack ssh-config` reads."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from slurmstack.contract import CLUSTER_TAG, LOGIN_POOL_TAG, POOL_TAG
from slurmstack.offline import OfflineRun
from slurmstack.offline.standins import ACCOUNT_ID
from slurmstack.ssh_config import ssh_config
from stack.iam_eval import decide
from support.stack import (
    T_ASG,
    T_INGRESS,
    T_INSTANCE,
    T_LT,
    T_ROLE_POLICY,
    T_SECRET,
    T_SG,
    run_ok,
    small_cluster,
    user_data_texts,
)

pytestmark = pytest.mark.stack

T_LB = "aws:lb/loadBalancer:LoadBalancer"
T_TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"
T_LISTENER = "aws:lb/listener:Listener"
OFFICE = "203.0.113.0/24"


def team(**login: Any) -> dict[str, Any]:
    """small_cluster with two people and one login pool (overridden by keyword arguments)."""
    definition = small_cluster()
    definition["groups"] = [{"name": "research", "gid": 3000}]
    definition["users"] = [
        {"name": "alice", "uid": 2001, "group": "research", "admin": True},
        {"name": "bob", "uid": 2002, "group": "research"},
    ]
    definition["login_pools"] = [
        {"name": "login", "instance_type": "m7i.2xlarge", "count": 2, **login}
    ]
    return definition


def ingress(result: OfflineRun) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in result.of_type(T_INGRESS)}


def group_ids(result: OfflineRun) -> dict[str, str]:
    """Security group id -> the group's logical name without the cluster's prefix."""
    return {str(g.id): g.name.removeprefix("tiny-") for g in result.of_type(T_SG)}


def test_a_login_pool_is_a_group_at_its_count_on_the_heads_image() -> None:
    result = run_ok(team())
    template = result.one(T_LT, "tiny-login-login").inputs
    head = result.one(T_INSTANCE, "tiny-head").inputs
    assert template["imageId"] == head["ami"]
    assert template["instanceType"] == "m7i.2xlarge"
    # The same IMDS rules as every node: tokens only, one hop (no container reaches it).
    assert template["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    (root,) = template["blockDeviceMappings"]
    assert root["ebs"]["encrypted"] == "true" and root["ebs"]["deleteOnTermination"] == "true"
    group = result.one(T_ASG, "tiny-login-login").inputs
    assert group["minSize"] == group["maxSize"] == group["desiredCapacity"] == 2
    assert group["launchTemplate"]["id"] == str(result.one(T_LT, "tiny-login-login").id)
    # Rolled with new images like the workers; a dead node is replaced by the group.
    assert group["instanceRefresh"]["strategy"] == "Rolling"
    tags = {t["key"]: t["value"] for t in group["tags"] if t["propagateAtLaunch"]}
    assert tags[CLUSTER_TAG] == "tiny" and tags[LOGIN_POOL_TAG] == "login"
    assert POOL_TAG not in tags  # not a Slurm node: the controller's repair leaves it alone
    # Its user data boots a login node: the IMDS firewall first, the shared file systems, the
    # people, then sackd and sshd; slurmd stays off.
    text = user_data_texts(result)["tiny-login-login"]
    assert "SLURMSTACK_ROLE=login/login" in text
    steps = [line.strip() for line in text.split("\nruncmd:", 1)[1].splitlines()]
    order = [
        "- [slurmstack-bootstrap, run, systemctl, enable, --now, slurmstack-imds-firewall.service]",
        "- [slurmstack-bootstrap, run, systemctl, disable, --now, slurmd.service]",
        "- [slurmstack-bootstrap, run, slurmstack-node, mounts]",
        "- [slurmstack-bootstrap, run, slurmstack-node, identities]",
        "- [slurmstack-bootstrap, run, systemctl, enable, --now, slurmstack-sackd.service]",
        "- [slurmstack-bootstrap, run, systemctl, restart, ssh.service]",
    ]
    assert [steps.index(step) for step in order] == sorted(steps.index(step) for step in order)
    assert not [s for s in steps if "slurmd.service" in s and "disable" not in s]
    # The host key's secret: empty (the pool's first node fills it), one per pool.
    secret = result.one(T_SECRET, "tiny-login-login").inputs
    assert secret["name"] == "slurmstack/tiny/login/login/ssh-host-key"
    assert "secretString" not in secret


def test_people_reach_login_nodes_only_from_their_cidrs_and_slurm_from_the_cluster() -> None:
    closed = run_ok(team())
    rules = ingress(closed)
    ids = group_ids(closed)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for inputs in rules.values():
        by_group.setdefault(ids[inputs["securityGroupId"]], []).append(inputs)
    # Without ssh_cidrs nothing reaches port 22 of a login node: Session Manager needs no port.
    assert [r for r in by_group["login"] if r.get("fromPort") == 22] == []
    assert {ids.get(r.get("referencedSecurityGroupId", ""), "") for r in by_group["login"]} == {
        "head",
        "workers",
    }
    # Slurm's clients on a login node reach slurmctld and slurmdbd (sacct, sshare, sreport),
    # and srun reaches the workers' slurmd and steps.
    login_id = next(i for i, name in ids.items() if name == "login")
    from_login = {
        (ids[r["securityGroupId"]], r["fromPort"], r["toPort"])
        for r in rules.values()
        if r.get("referencedSecurityGroupId") == login_id
    }
    assert {("head", 6817, 6817), ("head", 6819, 6819), ("workers", 0, 65535)} <= from_login
    assert ("storage", 2049, 2049) in from_login  # EFS: the shared /home
    # With ssh_cidrs: port 22 from exactly those.
    direct = ingress(run_ok(team(ssh_cidrs=[OFFICE])))
    ssh = [r for r in direct.values() if r.get("fromPort") == 22]
    assert [(r.get("cidrIpv4"), ids[r["securityGroupId"]]) for r in ssh] == [(OFFICE, "login")]


def test_a_load_balancer_forwards_ssh_and_its_health_checks_get_in() -> None:
    result = run_ok(team(ssh_cidrs=[OFFICE], load_balancer=True))
    balancer = result.one(T_LB, "tiny-login-login")
    assert balancer.inputs["loadBalancerType"] == "network"
    assert balancer.inputs["internal"] is False
    target = result.one(T_TARGET_GROUP, "tiny-login-login")
    assert (target.inputs["port"], target.inputs["protocol"]) == (22, "TCP")
    listener = result.one(T_LISTENER, "tiny-login-login").inputs
    assert listener["port"] == 22
    assert listener["defaultActions"] == [{"type": "forward", "targetGroupArn": target.id}]
    # The group registers its instances with the target group.
    group = result.one(T_ASG, "tiny-login-login").inputs
    assert group["targetGroupArns"] == [target.id]
    # A node whose sshd stops answering the balancer's checks is replaced by the group.
    assert group["healthCheckType"] == "ELB"
    # The balancer carries the login group: the login group lets it in on 22 (health checks
    # included), else every target is unhealthy (ELB's documented target group rules).
    ids = group_ids(result)
    login_id = next(i for i, name in ids.items() if name == "login")
    assert balancer.inputs["securityGroups"] == [login_id]
    self_ssh = [
        r
        for r in ingress(result).values()
        if r["securityGroupId"] == login_id
        and r.get("referencedSecurityGroupId") == login_id
        and r.get("fromPort") == 22
    ]
    assert len(self_ssh) == 1
    # No balancer, no such rule.
    plain = run_ok(team(ssh_cidrs=[OFFICE]))
    assert not plain.of_type(T_LB)
    assert plain.one(T_ASG, "tiny-login-login").inputs["healthCheckType"] == "EC2"
    assert "tiny-login-ssh-from-load-balancer" not in ingress(plain)
    # ssh-config's direct entry names the balancer's DNS name from the stack's outputs.
    outputs = json.loads(json.dumps(result.outputs, default=str))
    dns = outputs["login_pools"]["login"]["load_balancer_dns"]
    assert dns == balancer.outputs["dnsName"] and dns.endswith(".elb.us-east-1.amazonaws.com")
    block = ssh_config(outputs, "alice", "~/.ssh/id_ed25519")
    assert f"HostName {dns}" in block and "Host tiny-login-direct" in block


def test_a_login_node_reads_what_clients_need_and_nothing_of_the_head() -> None:
    result = run_ok(team())
    policies = {
        p.inputs["name"]: json.loads(p.inputs["policy"]) for p in result.of_type(T_ROLE_POLICY)
    }
    login = policies["tiny-login-login"]
    secret = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:slurmstack/tiny"
    get, put = "secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"
    munge = str(result.one(T_SECRET, "tiny-munge-key").id)
    assert decide([login], get, munge) == "allow"  # Slurm's clients authenticate with munge
    host_key = f"{secret}/login/login/ssh-host-key-AbCdEf"
    assert decide([login], get, host_key) == decide([login], put, host_key) == "allow"
    # Another pool's host key, the database password: not a login node's.
    assert decide([login], get, f"{secret}/login/other/ssh-host-key-AbCdEf") == "implicit-deny"
    assert decide([login], get, f"{secret}/accounting-db-password-AbCdEf") == "implicit-deny"
    # It launches nothing and marks only its own group's instances.
    assert decide([login], "ec2:RunInstances", "*") == "implicit-deny"
    health = "autoscaling:SetInstanceHealth"
    for group in result.of_type(T_ASG):
        context = {f"aws:ResourceTag/{t['key']}": t["value"] for t in group.inputs["tags"]}
        expected = "allow" if group.name == "tiny-login-login" else "implicit-deny"
        assert decide([login], health, group.outputs["arn"], context) == expected, group.name


def test_user_data_of_a_login_pool_is_gzip_and_within_ec2s_limit() -> None:
    result = run_ok(team())
    raw = gzip.compress(user_data_texts(result)["tiny-login-login"].encode())
    assert len(raw) < 16 * 1024  # EC2's user data limit (16 KB before base64)
