"""The node images under the offline engine: one Image Builder image per kind of node each
example uses, built from the parent's SSM parameter by a valid AWSTOE component whose build
script is templates/image/build.sh itself; the head and every launch template boot the baked
AMI; images do not change when pools do; image.version takes new parents."""

from __future__ import annotations

import base64
import copy
import json
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml

from slurmstack.offline import OfflineRun
from slurmstack.plan import images
from slurmstack.render import image as build
from support.stack import (
    EXAMPLE_IDS,
    REPO,
    T_ASG,
    T_EGRESS,
    T_INGRESS,
    T_INSTANCE,
    T_LT,
    T_OBJECT,
    T_SG,
    example,
    plan_of,
    run_ok,
)

pytestmark = pytest.mark.stack

T_COMPONENT = "aws:imagebuilder/component:Component"
T_RECIPE = "aws:imagebuilder/imageRecipe:ImageRecipe"
T_INFRA = "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration"
T_IMAGE = "aws:imagebuilder/image:Image"
AWSTOE_SCHEMA = REPO / "tests/schemas/awstoe-component.schema.json"


@cache
def awstoe_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(AWSTOE_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def validate_awstoe(document: dict[str, Any]) -> None:
    jsonschema.validate(document, awstoe_schema())
    names = [phase["name"] for phase in document["phases"]]
    assert len(names) == len(set(names)), f"phase names repeat: {names}"
    for phase in document["phases"]:
        steps = [step["name"] for step in phase["steps"]]
        assert len(steps) == len(set(steps)), f"step names repeat in {phase['name']}: {steps}"


def ami(image: Any) -> str:
    return str(image.outputs["outputResources"][0]["amis"][0]["image"])


def objects_by_key(result: OfflineRun) -> dict[str, bytes]:
    out = {}
    for obj in result.of_type(T_OBJECT):
        if "contentBase64" in obj.inputs:
            out[obj.inputs["key"]] = base64.b64decode(obj.inputs["contentBase64"])
    return out


@pytest.mark.parametrize("stem", EXAMPLE_IDS)
def test_an_image_per_kind_of_node_and_every_node_boots_one(stem: str) -> None:
    definition = example(stem)
    plan = plan_of(definition)
    result = run_ok(definition)
    wanted = images.image_plans(plan)
    assert wanted, "every example bakes at least one image"
    built = {i.inputs["tags"]["slurmstack:image"]: i for i in result.of_type(T_IMAGE)}
    assert set(built) == {w.key for w in wanted}
    # Kinds as the catalog says: accelerators decide the parent.
    kinds = {images.kind_of(p.facts) for p in plan.pools} | {images.ImageKind.CPU}
    assert {w.kind for w in wanted} == kinds
    recipes = {r.inputs["name"]: r for r in result.of_type(T_RECIPE)}
    for image in wanted:
        (recipe,) = [
            r for n, r in recipes.items() if n.startswith(f"{plan.name}-image-{image.key}-")
        ]
        assert recipe.inputs["parentImage"] == f"ssm:{image.parent_parameter}"
        assert recipe.inputs["parentImage"].startswith("ssm:/aws/service/")
        assert built[image.key].inputs["imageRecipeArn"] == recipe.outputs["arn"]
        tests = built[image.key].inputs["imageTestsConfiguration"]
        assert tests["imageTestsEnabled"] is True
    # The head and every launch template: the baked AMI, nothing resolved at launch.
    head_image = images.image_of(plan, "head")
    assert head_image is not None
    assert result.one(T_INSTANCE).inputs["ami"] == ami(built[head_image.key])
    for pool in plan.pools:
        lt = result.one(T_LT, f"{plan.name}-pool-{pool.name}").inputs
        image = images.image_of(plan, pool.name)
        assert image is not None
        assert lt["imageId"] == ami(built[image.key])
        assert "resolve:ssm" not in json.dumps(lt)
    for template in result.of_type(T_LT):
        assert not str(template.inputs["imageId"]).startswith("resolve:")


@pytest.mark.parametrize("stem", EXAMPLE_IDS)
def test_components_are_valid_awstoe_and_run_the_build_script_itself(stem: str) -> None:
    definition = example(stem)
    plan = plan_of(definition)
    result = run_ok(definition)
    stored = objects_by_key(result)
    script = (REPO / "templates/image/build.sh").read_bytes()
    bucket = result.one("aws:s3/bucket:Bucket").id
    for component in result.of_type(T_COMPONENT):
        document = yaml.safe_load(component.inputs["data"])
        validate_awstoe(document)
        assert component.inputs["platform"] == "Linux"
        assert document["name"] == component.inputs["name"]
        phases = {p["name"]: p for p in document["phases"]}
        assert set(phases) == {"build", "validate", "test"}
        downloads = {
            item["destination"].rsplit("/", 1)[-1]: item["source"]
            for phase in phases.values()
            for step in phase["steps"]
            if step["action"] == "S3Download"
            for item in step["inputs"]
        }
        assert set(downloads) == {"build.sh", "image.env", build.AGENT_ARCHIVE}
        for source in downloads.values():
            assert source.startswith(f"s3://{bucket}/images/")
            key = source.removeprefix(f"s3://{bucket}/")
            assert key in stored, f"{key} is not uploaded"
        # The same file the rehearsal runs (tests/image), byte for byte.
        assert stored[downloads["build.sh"].removeprefix(f"s3://{bucket}/")] == script
        settings = stored[downloads["image.env"].removeprefix(f"s3://{bucket}/")].decode()
        assert "SLURM_PACKAGE_VERSION='23.11.4-1.2ubuntu5'" in settings
        assert f"PYXIS_SHA256='{images.image_pins()['pyxis']['sha256']}'" in settings
        commands = [
            command
            for phase in phases.values()
            for step in phase["steps"]
            if step["action"] == "ExecuteBash"
            for command in step["inputs"]["commands"]
        ]
        assert sum("build.sh build " in c for c in commands) == 1
        assert sum("build.sh test " in c for c in commands) == 2  # validate and test
    assert len(result.of_type(T_COMPONENT)) == len(images.image_plans(plan))


def test_the_schema_is_not_a_rubber_stamp() -> None:
    good = {
        "schemaVersion": 1.0,
        "phases": [
            {
                "name": "build",
                "steps": [
                    {"name": "Run", "action": "ExecuteBash", "inputs": {"commands": ["true"]}}
                ],
            }
        ],
    }
    validate_awstoe(good)
    for broken in (
        {**good, "schemaVersion": 2.0},
        {**good, "phases": [{"name": "bake", "steps": good["phases"][0]["steps"]}]},
        {
            **good,
            "phases": [
                {
                    "name": "build",
                    "steps": [
                        {"name": "Run", "action": "ExecuteBash", "inputs": {"command": ["x"]}}
                    ],
                }
            ],
        },
        {
            **good,
            "phases": [
                {
                    "name": "build",
                    "steps": [
                        {
                            "name": "Get",
                            "action": "S3Download",
                            "inputs": [{"source": "https://x/y", "destination": "/tmp/y"}],
                        }
                    ],
                }
            ],
        },
        {
            **good,
            "phases": [
                {"name": "build", "steps": [{"name": "Run", "action": "RunBash", "inputs": {}}]}
            ],
        },
        {
            **good,
            "phases": [
                {
                    "name": "build",
                    "steps": [
                        {
                            "name": "Run",
                            "action": "ExecuteBash",
                            "timeoutSeconds": 0,
                            "inputs": {"commands": ["x"]},
                        }
                    ],
                }
            ],
        },
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate_awstoe(broken)
    with pytest.raises(AssertionError, match="phase names repeat"):
        validate_awstoe({**good, "phases": good["phases"] * 2})


def test_build_instances_run_in_the_cluster_subnet_behind_an_egress_only_group() -> None:
    definition = example("p5-training")
    plan = plan_of(definition)
    result = run_ok(definition)
    (infra,) = result.of_type(T_INFRA)
    subnet = [s for s in result.of_type("aws:ec2/subnet:Subnet") if s.name.endswith("compute")]
    assert infra.inputs["subnetId"] == subnet[0].id
    assert infra.inputs["instanceTypes"] == ["c7i.2xlarge"]
    assert infra.inputs["terminateInstanceOnFailure"] is True
    assert infra.inputs["instanceProfileName"] == f"{plan.name}-image-build"
    assert infra.inputs["instanceMetadataOptions"]["httpTokens"] == "required"
    (group_id,) = infra.inputs["securityGroupIds"]
    (group,) = [g for g in result.of_type(T_SG) if g.id == group_id]
    assert not [r for r in result.of_type(T_INGRESS) if r.inputs["securityGroupId"] == group_id]
    egress = [r for r in result.of_type(T_EGRESS) if r.inputs["securityGroupId"] == group_id]
    assert [r.inputs["cidrIpv4"] for r in egress] == ["0.0.0.0/0"]
    assert group.inputs["vpcId"] == result.one("aws:ec2/vpc:Vpc").id


def image_inputs(result: OfflineRun) -> dict[str, Any]:
    out = {}
    for kind in (T_COMPONENT, T_RECIPE, T_INFRA, T_IMAGE):
        for resource in result.of_type(kind):
            out[f"{kind}::{resource.name}"] = resource.inputs
    return out


def test_images_do_not_change_when_pools_do() -> None:
    """A pool added, resized or removed never builds an image: image inputs name no pool."""
    definition = example("p5-training")
    before = image_inputs(run_ok(definition))
    changed = copy.deepcopy(definition)
    changed["pools"].append({"name": "more", "instance_type": "p5.48xlarge", "count": 3})
    changed["pools"][0]["count"] = 4
    assert image_inputs(run_ok(changed)) == before


def test_a_new_image_version_builds_on_new_parents() -> None:
    """image.version: a new recipe (Image Builder resolves the parent parameter again), so a
    new Image and AMI; the version before stays what it was (same inputs)."""
    definition = example("cpu-hpc")
    first = run_ok(definition)
    again = run_ok(copy.deepcopy(definition))
    assert image_inputs(first) == image_inputs(again)
    bumped = copy.deepcopy(definition)
    bumped["image"] = {"version": 2}
    second = run_ok(bumped)
    (old,), (new,) = first.of_type(T_RECIPE), second.of_type(T_RECIPE)
    assert old.inputs["name"] != new.inputs["name"]
    assert old.inputs["parentImage"] == new.inputs["parentImage"]
    (old_image,), (new_image,) = first.of_type(T_IMAGE), second.of_type(T_IMAGE)
    assert old_image.inputs["imageRecipeArn"] != new_image.inputs["imageRecipeArn"]


def test_own_images_bake_nothing() -> None:
    definition = example("cpu-hpc")
    definition["image"] = {"ami": "ami-0123456789abcdef0"}
    result = run_ok(definition)
    for kind in (T_COMPONENT, T_RECIPE, T_INFRA, T_IMAGE):
        assert not result.of_type(kind)
    assert result.one(T_INSTANCE).inputs["ami"] == "ami-0123456789abcdef0"
    assert {lt.inputs["imageId"] for lt in result.of_type(T_LT)} == {"ami-0123456789abcdef0"}
    assert not [r for r in result.of_type("aws:iam/role:Role") if "image" in r.name]
    for group in result.of_type(T_ASG):
        assert group.inputs["instanceRefresh"]["strategy"] == "Rolling"


# --- a bake that fails tells why; a bake that runs long is waited for ---------------------------

T_LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
T_DISTRIBUTION = "aws:imagebuilder/distributionConfiguration:DistributionConfiguration"


def test_each_image_waits_for_the_build_groups_egress_rule() -> None:
    """The build instance downloads from its first step; the infrastructure configuration names
    the group, not its rule, so without this the Image could start before the rule exists."""
    result = run_ok(example("cpu-hpc"))
    (egress,) = [r for r in result.of_type(T_EGRESS) if r.name.endswith("-image-build-egress-all")]
    for image in result.of_type(T_IMAGE):
        assert egress.urn in image.options.depends_on, image.name


def test_the_build_timeout_covers_every_step_of_the_recipe() -> None:
    """Pulumi waits at least as long as Image Builder may take: the build step, the validate
    phase's test, the test stage, the snapshot and two instance boots (120 min did not)."""
    from slurmstack.stack import image as stack_image

    steps = (build.BUILD_TIMEOUT_SECONDS + build.TEST_TIMEOUT_SECONDS) / 60
    floor = steps + stack_image.IMAGE_TESTS_TIMEOUT_MINUTES + stack_image.SNAPSHOT_MINUTES
    result = run_ok(example("cpu-hpc"))
    for image in result.of_type(T_IMAGE):
        minutes = int(image.options.create_timeout.removesuffix("m"))
        assert minutes >= floor + 2 * stack_image.BUILD_INSTANCE_MINUTES > 120, minutes
        tests = image.inputs["imageTestsConfiguration"]["timeoutMinutes"]
        assert tests == stack_image.IMAGE_TESTS_TIMEOUT_MINUTES


def test_build_logs_go_to_a_log_group_the_build_role_may_write() -> None:
    from stack.iam_eval import decide

    definition = example("cpu-hpc")
    plan = plan_of(definition)
    result = run_ok(definition)
    groups = {g.inputs["name"]: g for g in result.of_type(T_LOG_GROUP)}
    policy = json.loads(
        result.one("aws:iam/rolePolicy:RolePolicy", f"{plan.name}-image-build").inputs["policy"]
    )
    for image in result.of_type(T_IMAGE):
        name = image.inputs["loggingConfiguration"]["logGroupName"]
        assert (
            name == f"/aws/imagebuilder/{image.name}"
            and groups[name].inputs["retentionInDays"] == 30
        )
        arn = f"arn:aws:logs:{plan.region}:123456789012:log-group:{name}:log-stream:1.0.0/1"
        for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
            assert decide([policy], action, arn) == "allow", action
    other = f"arn:aws:logs:{plan.region}:123456789012:log-group:/aws/imagebuilder/other-image-x"
    assert decide([policy], "logs:PutLogEvents", other) == "implicit-deny"


def test_a_failed_build_instance_is_kept_only_when_asked() -> None:
    definition = example("cpu-hpc")
    for keep in (False, True):
        data = copy.deepcopy(definition)
        data.setdefault("image", {})["keep_build_instance"] = keep
        for infra in run_ok(data).of_type(T_INFRA):
            assert infra.inputs["terminateInstanceOnFailure"] is (not keep)


def test_the_ami_carries_the_clusters_tags_and_the_image_key() -> None:
    definition = example("cpu-hpc")
    plan = plan_of(definition)
    result = run_ok(definition)
    distributions = {d.outputs["arn"]: d for d in result.of_type(T_DISTRIBUTION)}
    for image in result.of_type(T_IMAGE):
        distribution = distributions[image.inputs["distributionConfigurationArn"]]
        (target,) = distribution.inputs["distributions"]
        assert target["region"] == plan.region
        tags = target["amiDistributionConfiguration"]["amiTags"]
        assert tags["slurmstack:cluster"] == plan.name
        assert tags["slurmstack:image"] == image.inputs["tags"]["slurmstack:image"]
        assert "{{ imagebuilder:buildDate }}" in target["amiDistributionConfiguration"]["name"]


def test_the_amis_snapshot_carries_the_same_tags() -> None:
    """Image Builder tags the AMI only: the stack tags its root snapshot, found by the AMI's
    id once the image is built, with every tag the AMI carries (one ec2.Tag each)."""
    from slurmstack.offline.standins import hex_id

    definition = example("cpu-hpc")
    result = run_ok(definition)
    distributions = {d.outputs["arn"]: d for d in result.of_type(T_DISTRIBUTION)}
    tagged = result.of_type("aws:ec2/tag:Tag")
    asked = [a for t, a in result.invokes if t == "aws:ec2/getAmi:getAmi"]
    for image in result.of_type(T_IMAGE):
        (target,) = distributions[image.inputs["distributionConfigurationArn"]].inputs[
            "distributions"
        ]
        ami_tags = target["amiDistributionConfiguration"]["amiTags"]
        ami = image.outputs["outputResources"][0]["amis"][0]["image"]
        assert {"filters": [{"name": "image-id", "values": [ami]}], "owners": ["self"]} in asked
        snapshot = hex_id("snap", ami)
        on_snapshot = {
            t.inputs["key"]: t.inputs["value"] for t in tagged if t.inputs["resourceId"] == snapshot
        }
        assert on_snapshot == ami_tags
        assert on_snapshot["slurmstack:cluster"] == plan_of(definition).name
        assert "slurmstack:image" in on_snapshot


def test_a_pinned_parent_is_the_recipes_and_plan_says_so() -> None:
    """image.parents pins an image's parent AMI (an earlier one, say, whose kernel has an FSx
    Lustre client); the other images keep their public parameter; plan shows which."""
    from slurmstack.report.images import images_section

    definition = example("cpu-hpc")
    definition["image"] = {"parents": {"cpu-x86-64": "ami-0aaaabbbbccccdddd"}}
    plan = plan_of(definition)
    result = run_ok(definition)
    (recipe,) = result.of_type(T_RECIPE)
    assert recipe.inputs["parentImage"] == "ami-0aaaabbbbccccdddd"
    (image,) = images_section(plan)["baked"]
    assert image["parent"] == "ami-0aaaabbbbccccdddd"
    assert image["parent_pinned"] == "pinned by image.parents to ami-0aaaabbbbccccdddd"
    # A new pin is a new recipe (its name carries what it builds), so a new image.
    unpinned = run_ok(example("cpu-hpc")).of_type(T_RECIPE)[0]
    assert unpinned.inputs["name"] != recipe.inputs["name"]
    assert unpinned.inputs["parentImage"].startswith("ssm:/aws/service/canonical/")


def test_a_parent_pinned_by_parameter_version_is_read_at_deploy_and_exported() -> None:
    """image.parents {key: {parameter_version: N}}: the stack reads version N of the image's
    public parameter (GetParameter <name>:N, never the latest), the recipe is built on that
    AMI, the stack exports it as image_parents.<key>, and plan names parameter and version.
    A new version is a new recipe; the other images keep following their parameter."""
    from slurmstack.offline.standins import hex_id
    from slurmstack.report.images import images_section

    definition = example("cpu-hpc")
    definition["image"] = {"parents": {"cpu-x86-64": {"parameter_version": 42}}}
    plan = plan_of(definition)
    result = run_ok(definition)
    (parameter,) = images_section(plan)["baked"]
    name = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
    asked = [a["name"] for t, a in result.invokes if t == "aws:ssm/getParameter:getParameter"]
    assert asked == [f"{name}:42"]
    (recipe,) = result.of_type(T_RECIPE)
    assert recipe.inputs["parentImage"] == hex_id("ami", f"{name}:42")  # the stand-in's AMI
    assert result.outputs["image_parents"] == {"cpu-x86-64": recipe.inputs["parentImage"]}
    assert parameter["parent"] == f"{name}:42"
    assert parameter["parent_pinned"] == (
        f"pinned by image.parents to version 42 of {name}; the stack reads that version's AMI "
        "at deploy time and exports it (stack output image_parents.cpu-x86-64)"
    )
    definition["image"]["parents"]["cpu-x86-64"]["parameter_version"] = 43
    other = run_ok(definition).of_type(T_RECIPE)[0]
    assert other.inputs["name"] != recipe.inputs["name"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"parameter_version": 0}, "greater than or equal to 1"),
        ({"version": 3}, "parameter_version"),
        ("ami-12", "ami-"),
    ],
)
def test_a_bad_parent_pin_is_a_finding(value: object, message: str) -> None:
    from slurmstack.validate import validate_object

    definition = example("cpu-hpc")
    definition["image"] = {"parents": {"cpu-x86-64": value}}
    result = validate_object(definition)
    assert not result.ok
    lines = [f.line() for f in result.findings]
    assert any(line.startswith("image.parents.cpu-x86-64") and message in line for line in lines), (
        lines
    )
