"""What waits for what: resources AWS checks against their security group's rules are created
only after those rules (ingress and egress), and the head node after the routes of the subnet
it sits in. Read from the dependencies the offline engine recorded."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.offline import OfflineRun
from slurmstack.plan import ClusterPlan
from support.stack import (
    EXAMPLE_IDS,
    T_ASG,
    T_EGRESS,
    T_INGRESS,
    T_INSTANCE,
    T_LUSTRE,
    T_MOUNT_TARGET,
    T_SG,
    example,
    plan_of,
    run_ok,
)

pytestmark = pytest.mark.stack

Example = tuple[dict[str, Any], ClusterPlan, OfflineRun]


def rules_of(result: OfflineRun, group: str) -> dict[str, set[str]]:
    """URNs of the ingress and egress rules of the security group named ``group``."""
    group_id = result.one(T_SG, group).id
    out: dict[str, set[str]] = {}
    for kind in (T_INGRESS, T_EGRESS):
        out[kind] = {r.urn for r in result.of_type(kind) if r.inputs["securityGroupId"] == group_id}
    return out


def waits_for(result: OfflineRun, urn: str) -> set[str]:
    return set(result.by_urn(urn).options.depends_on)


def test_each_resource_waits_for_the_rules_of_its_group(example_run: Example) -> None:
    _, plan, result = example_run
    expected = [(r.urn, f"{plan.name}-head") for r in result.of_type(T_INSTANCE)]
    expected += [(r.urn, f"{plan.name}-workers") for r in result.of_type(T_ASG)]
    if plan.lustre is not None or plan.spec.storage.home is not None:
        storage = f"{plan.name}-storage"
        expected += [(r.urn, storage) for r in result.of_type(T_LUSTRE)]
        expected += [(r.urn, storage) for r in result.of_type(T_MOUNT_TARGET)]
    assert len(expected) >= 1 + len(plan.pools)
    for urn, group in expected:
        rules = rules_of(result, group)
        assert rules[T_INGRESS] and rules[T_EGRESS], group
        missing = (rules[T_INGRESS] | rules[T_EGRESS]) - waits_for(result, urn)
        assert not missing, f"{result.by_urn(urn).name} does not wait for {sorted(missing)}"


LUSTRE_EXAMPLES = [stem for stem in EXAMPLE_IDS if example(stem).get("storage", {}).get("lustre")]


@pytest.mark.parametrize("stem", LUSTRE_EXAMPLES)
def test_lustre_waits_for_port_988_and_the_efa_rules_fsx_checks(stem: str) -> None:
    """FSx checks, when it creates the file system, that the group lets LNet (988) in from
    itself and, when EFA-enabled, all traffic in and out within the group; it fails with
    InvalidNetworkSettings if they are late."""
    definition = example(stem)
    plan, result = plan_of(definition), run_ok(definition)
    assert plan.lustre is not None
    fs = result.one(T_LUSTRE)
    storage_id = result.one(T_SG, f"{plan.name}-storage").id
    waited = [result.by_urn(u) for u in fs.options.depends_on]
    lnet_from_self = [
        r
        for r in waited
        if r.type == T_INGRESS
        and r.inputs.get("fromPort") == 988
        and r.inputs.get("referencedSecurityGroupId") == storage_id
    ]
    assert lnet_from_self, "the file system does not wait for LNet from its own group"
    if plan.lustre.efa:
        within = {
            r.type
            for r in waited
            if r.inputs.get("ipProtocol") == "-1"
            and r.inputs.get("referencedSecurityGroupId") == storage_id
        }
        assert within == {T_INGRESS, T_EGRESS}


def test_an_example_exercises_efa_enabled_lustre() -> None:
    assert any(plan_of(example(stem)).lustre.efa for stem in LUSTRE_EXAMPLES)  # type: ignore[union-attr]
