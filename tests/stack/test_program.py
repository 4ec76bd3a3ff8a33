"""The entry point (infra/__main__.py): stack config in, a clean error out for a bad
definition, the project files Pulumi reads."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
import yaml

from slurmstack.offline import run_program
from support.stack import (
    REPO,
    T_EGRESS,
    T_ENI,
    T_INGRESS,
    T_INSTANCE,
    T_OBJECT,
    T_PARAM,
    T_SG,
    example,
    run,
    run_ok,
    small_cluster,
)

pytestmark = pytest.mark.stack

SCHEMA = REPO.parent / "shared" / "schemas" / "pulumi-project.schema.json"


def test_invalid_definition_is_a_clean_error_and_creates_nothing() -> None:
    definition = small_cluster(count=-1, instance_type="p5.48xlarge")
    definition["head_node"]["instance_typo"] = "m7i.xlarge"
    result = run(definition)
    assert result.error is not None
    assert type(result.error).__name__ == "RunError"
    lines = result.error_lines()
    assert lines[0] == "slurmstack:cluster is not a valid cluster definition:"
    assert any(line.startswith("pools[0].count: ") for line in lines)
    assert any(line.startswith("head_node.instance_typo: unknown key") for line in lines)
    assert "Traceback" not in str(result.error)
    assert result.resources == [] and result.new_resource_calls == 0


def test_catalog_findings_stop_the_program_too() -> None:
    result = run(small_cluster(instance_type="p9.96xlarge"))
    assert result.error is not None and result.resources == []
    assert any(line.startswith("pools[0].instance_type:") for line in result.error_lines())


def test_missing_config_is_an_error() -> None:
    result = run_program({"aws:region": "us-east-1"})
    assert result.error is not None and result.resources == []
    assert "slurmstack:cluster" in str(result.error)


def test_region_must_match_the_provider_region() -> None:
    config = {"slurmstack:cluster": json.dumps(small_cluster()), "aws:region": "eu-west-1"}
    result = run_program(config)
    assert result.error is not None and result.resources == []
    assert str(result.error).startswith("region: 'us-east-1' differs from the stack's aws:region")


def test_warnings_are_logged_not_fatal() -> None:
    result = run_ok(example("p5-training"))
    warnings = [message for severity, message in result.logs if severity == "warning"]
    assert warnings and all(": warning: " in w for w in warnings)


def test_existing_vpc_creates_no_network() -> None:
    definition = small_cluster()
    definition["network"] = {
        "vpc_id": "vpc-0123456789abcdef0",
        "compute_subnet_id": "subnet-0123456789abcdef0",
        "compute_subnet_cidr": "10.9.0.0/16",
    }
    result = run_ok(definition)
    types = set(result.count_by_type())
    assert not {t for t in types if t.split("/")[0] == "aws:ec2" and "vpc" in t.lower()}
    assert not any(
        t in types
        for t in (
            "aws:ec2/subnet:Subnet",
            "aws:ec2/natGateway:NatGateway",
            "aws:ec2/routeTable:RouteTable",
            "aws:ec2/internetGateway:InternetGateway",
        )
    )
    for group in result.of_type(T_SG):
        assert group.inputs["vpcId"] == "vpc-0123456789abcdef0"
    assert result.one(T_ENI).inputs["subnetId"] == "subnet-0123456789abcdef0"
    # Nothing of the network to wait for: only the head group's own rules.
    head = result.one(T_INSTANCE)
    rules = {r.urn for r in result.of_type(T_INGRESS) + result.of_type(T_EGRESS)}
    assert head.options.depends_on and set(head.options.depends_on) <= rules


def test_ssh_puts_the_head_node_in_the_public_subnet_behind_its_internet_route() -> None:
    definition = small_cluster()
    definition["network"] = {"ssh_cidrs": ["198.51.100.0/24"]}
    result = run_ok(definition)
    public = result.one("aws:ec2/subnet:Subnet", "tiny-public")
    interface = result.one(T_ENI)
    assert interface.inputs["subnetId"] == public.id
    eip = result.one("aws:ec2/eip:Eip", "tiny-head-public")
    assert eip.inputs["networkInterface"] == interface.id
    assert result.outputs["head_public_ip"] == eip.outputs["publicIp"]
    # The head waits for the public subnet's way out (the internet gateway route and the
    # subnet's route table association), not for the compute subnet's NAT route.
    head = result.one(T_INSTANCE)
    route = result.one("aws:ec2/route:Route", "tiny-public-default")
    association = result.one("aws:ec2/routeTableAssociation:RouteTableAssociation", "tiny-public")
    assert route.inputs["gatewayId"] == result.one("aws:ec2/internetGateway:InternetGateway").id
    waits = set(head.options.depends_on)
    assert {route.urn, association.urn} <= waits
    assert result.one("aws:ec2/route:Route", "tiny-compute-default").urn not in waits
    assert {route.urn, association.urn} <= set(eip.options.depends_on)
    # Without ssh_cidrs the head is private and waits for the compute subnet's routes.
    private = run_ok(small_cluster())
    waits = set(private.one(T_INSTANCE).options.depends_on)
    assert private.one("aws:ec2/route:Route", "tiny-compute-default").urn in waits
    assert private.one("aws:ec2/route:Route", "tiny-public-default").urn not in waits
    assert not private.of_type("aws:ec2/eip:Eip")[1:]  # the NAT's only
    assert "head_public_ip" not in private.outputs


def test_head_node_boots_the_baked_image_and_ignores_a_new_one() -> None:
    result = run_ok(small_cluster())
    head = result.one(T_INSTANCE)
    (image,) = [i for i in result.of_type("aws:imagebuilder/image:Image") if "cpu" in i.name]
    assert head.inputs["ami"] == image.outputs["outputResources"][0]["amis"][0]["image"]
    assert head.options.ignore_changes == ("ami", "userDataBase64")
    # Nothing is looked up: the parent is resolved by Image Builder when it builds.
    assert not [args for token, args in result.invokes if token.endswith("getParameter")]
    pinned = small_cluster()
    pinned["head_node"]["ami"] = "ami-0fedcba9876543210"
    head = run_ok(pinned).one(T_INSTANCE)
    assert head.inputs["ami"] == "ami-0fedcba9876543210"
    assert head.options.ignore_changes == ("ami", "userDataBase64")


def test_pulumi_yaml_matches_pulumis_project_schema() -> None:
    if not SCHEMA.is_file():
        # The schema is the team's shared copy beside the checkout (CI lays it there); a
        # clone elsewhere skips, while CI=true treats its absence as a failure.
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but Pulumi's project schema is missing at {SCHEMA} (../shared)")
        pytest.skip(f"Pulumi's project schema is not beside this checkout ({SCHEMA})")
    schema = json.loads(SCHEMA.read_text())
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    jsonschema.validate(project, schema)
    assert project["name"] == "slurmstack" and project["runtime"]["name"] == "python"


def test_pulumi_runs_the_program_in_the_uv_environment() -> None:
    """`pulumi preview`/`up` use the environment `uv sync` builds from uv.lock: toolchain uv
    and the .venv beside uv.lock (Pulumi's Python runtime options)."""
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    options = project["runtime"]["options"]
    assert options == {"toolchain": "uv", "virtualenv": ".venv"}
    assert (REPO / "uv.lock").is_file() and (REPO / "pyproject.toml").is_file()
    assert (REPO / project["main"] / "__main__.py").is_file()


def test_dev_stack_holds_the_p5_example() -> None:
    stack = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())
    config = stack["config"]
    assert config["slurmstack:cluster"] == example("p5-training")
    assert config["aws:region"] == config["slurmstack:cluster"]["region"]
    result = run_program(config)
    assert result.error is None
    assert result.outputs["pools"]["train"]["count"] == 16


def test_sixty_four_pools_fit_the_config_store() -> None:
    """The manifest grows with pools (about 750 bytes each); its parameter holds only the key
    of the manifest object, so the definition's 64-pool maximum deploys."""
    definition = small_cluster()
    definition["pools"] = [
        {"name": f"p{i}", "instance_type": "p5.48xlarge", "count": 1} for i in range(64)
    ]
    result = run(definition)
    assert result.error is None, result.error
    (param,) = [
        r for r in result.of_type(T_PARAM) if r.inputs["name"] == "/slurmstack/tiny/config/manifest"
    ]
    key = param.inputs["value"]
    assert key.startswith("config/") and len(key) == len("config/") + 64
    manifest = next(r for r in result.of_type(T_OBJECT) if r.inputs["key"] == key)
    assert len(json.loads(manifest.inputs["content"])["files"]) == 65  # head + 64 pools
    assert len(manifest.inputs["content"]) > 8192
    # One bundle per role plus the agent's, and the manifest: the store grows with pools only.
    store_objects = [r for r in result.of_type(T_OBJECT) if r.inputs["key"].startswith("config/")]
    assert len(store_objects) == 65 + 1 + 1


def test_the_project_entry_runs_the_packaged_program() -> None:
    """infra/__main__.py (what `pulumi` runs) is a thin entry: run as Pulumi runs it, it
    registers exactly what the packaged program (what `slurmstack plan` runs) registers."""
    from slurmstack.loader import STACK_CONFIG_KEY
    from slurmstack.offline import config_for

    entry = (REPO / "infra" / "__main__.py").read_text()
    assert "from slurmstack.program import main" in entry and entry.count("\n") < 10
    config = config_for(small_cluster())
    assert STACK_CONFIG_KEY in config
    packaged = run_program(config)
    project = run_program(config, program=REPO / "infra")
    assert packaged.error is None and project.error is None
    assert [r.to_dict() for r in project.resources] == [r.to_dict() for r in packaged.resources]
    assert project.outputs == packaged.outputs
