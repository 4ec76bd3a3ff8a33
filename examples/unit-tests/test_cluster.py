"""Unit tests of a cluster with Pulumi's mocks, as Pulumi's unit-testing guide writes them:
mocks set, stack config set, the program run, assertions in ``@pulumi.runtime.test``.

Copy this file into your project's tests and run ``pytest`` there. It reads the stack file
the cluster is deployed from (``STACK_FILE``, by default Pulumi.dev.yaml in the directory
pytest runs in), so the tests check the definition you deploy. Nothing talks to AWS.
"""

import json
import os
from pathlib import Path

import pulumi
import pulumi_aws
import yaml

from slurmstack.offline.mocks import StandInMocks

STACK_FILE = Path(os.environ.get("STACK_FILE", "Pulumi.dev.yaml"))
CONFIG = yaml.safe_load(STACK_FILE.read_text())["config"]
DEFINITION = CONFIG["slurmstack:cluster"]


# AWS-shaped outputs (ids, ARNs, addresses, Image Builder's AMIs) from slurmstack's stand-ins:
# mocks that only echo inputs back leave outputs the program reads empty.
pulumi.runtime.set_mocks(StandInMocks(CONFIG["aws:region"]), preview=False)
# Stack config as `pulumi` passes it: objects as JSON text.
pulumi.runtime.set_all_config(
    {key: value if isinstance(value, str) else json.dumps(value) for key, value in CONFIG.items()}
)

# Only now the program (what infra/__main__.py runs): it reads the config set above and
# registers every resource with the mocks.
from slurmstack import program  # noqa: E402

cluster = program.main()


@pulumi.runtime.test
def test_the_head_node_requires_imdsv2():
    def check(options):
        assert options["http_tokens"] == "required"

    return cluster.head.instance.metadata_options.apply(check)


@pulumi.runtime.test
def test_the_head_node_carries_our_tags():
    def check(tags):
        for key, value in DEFINITION.get("tags", {}).items():
            assert tags.get(key) == value, (key, tags)

    return cluster.head.instance.tags.apply(check)


@pulumi.runtime.test
def test_every_pool_launches_from_an_encrypted_root_volume():
    def check(mappings_per_pool):
        for mappings in mappings_per_pool:
            assert mappings and all(m["ebs"]["encrypted"] == "true" for m in mappings)

    templates = [pool.launch_template for pool in cluster.pools.values()]
    return pulumi.Output.all(*[t.block_device_mappings for t in templates]).apply(check)


@pulumi.runtime.test
def test_each_pool_keeps_its_always_on_nodes_in_one_auto_scaling_group():
    def check(sizes):
        assert sizes == [[p.get("count", 1)] * 3 for p in DEFINITION["pools"]]

    groups = [cluster.pools[p["name"]].group for p in DEFINITION["pools"]]
    sizes = [pulumi.Output.all(g.min_size, g.desired_capacity, g.max_size) for g in groups]
    return pulumi.Output.all(*sizes).apply(check)


@pulumi.runtime.test
def test_nothing_is_open_to_the_internet_unless_the_definition_asks():
    def check(cidrs):
        asked = set(DEFINITION["network"].get("ssh_cidrs", []))
        assert {c for c in cidrs if c is not None} <= asked

    ingress = [
        rule.cidr_ipv4
        for rule in cluster.security.rules_of("head", "workers", "storage")
        if isinstance(rule, pulumi_aws.vpc.SecurityGroupIngressRule)
    ]
    return pulumi.Output.all(*ingress).apply(check)
