"""tools/refresh_replacement_data.py reads the provider's Go sources: ForceNew attributes
(nested ones too), plugin-framework RequiresReplace, a CustomizeDiff's conditional ForceNew,
and pulumi-aws's own overrides; here on small sources written for the test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]

HOOK = """
// @SDKResource("aws_autoscaling_lifecycle_hook", name="Lifecycle Hook")
func resourceLifecycleHook() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"autoscaling_group_name": {
				Type:     schema.TypeString,
				Required: true,
			},
			names.AttrName: {
				Type:     schema.TypeString,
				Required: true,
				ForceNew: true,
			},
			"heartbeat_timeout": {
				Type:     schema.TypeInt,
				Optional: true, // "ForceNew: true" in a comment or string is not a flag
			},
			names.AttrARN: {
				Type:     schema.TypeString,
				Computed: true,
			},
		},
	}
}
"""

GROUP = """
// @SDKResource("aws_autoscaling_group", name="Group")
func resourceGroup() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"initial_lifecycle_hook": {
				Type:     schema.TypeSet,
				Optional: true,
				Elem: &schema.Resource{
					Schema: map[string]*schema.Schema{
						"heartbeat_timeout": {Type: schema.TypeInt, Optional: true, ForceNew: true},
					},
				},
			},
			"max_size": {Type: schema.TypeInt, Required: true},
		},
	}
}
"""

LUSTRE = """
// @SDKResource("aws_fsx_lustre_file_system", name="Lustre File System")
func resourceLustreFileSystem() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"storage_capacity": {Type: schema.TypeInt, Optional: true},
			"deployment_type": {Type: schema.TypeString, Optional: true, ForceNew: true},
		},
		CustomizeDiff: shrinkReplaces,
	}
}

func shrinkReplaces(_ context.Context, d *schema.ResourceDiff, meta any) error {
	if d.HasChange("storage_capacity") {
		o, n := d.GetChange("storage_capacity")
		if n.(int) < o.(int) {
			return d.ForceNew("storage_capacity")
		}
	}
	return nil
}
"""

RULE = """
// @FrameworkResource("aws_vpc_security_group_ingress_rule", name="Security Group Ingress Rule")
func (r *ingressRule) Schema(ctx context.Context, req SchemaRequest, resp *SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"security_group_id": schema.StringAttribute{
				Required: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
			},
			"from_port": schema.Int64Attribute{
				Optional: true,
			},
		},
	}
}
"""

RESOURCES_GO = """
		"aws_autoscaling_lifecycle_hook": {
			Tok: awsResource(autoscalingMod, "LifecycleHook"),
			Fields: map[string]*tfbridge.SchemaInfo{
				"default_result": {ForceNew: tfbridge.True()},
			},
			DeleteBeforeReplace: true,
		},
"""


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "refresh", REPO / "tools" / "refresh_replacement_data.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["refresh"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_tool_reads_force_new_from_go_sources(tmp_path: Path) -> None:
    refresh = tool()
    checkout = tmp_path / "upstream"
    for name, text in {
        "hook.go": HOOK,
        "group.go": GROUP,
        "lustre.go": LUSTRE,
        "rule.go": RULE,
    }.items():
        (checkout / "internal" / "service").mkdir(parents=True, exist_ok=True)
        (checkout / "internal" / "service" / name).write_text(text)
    files = refresh.terraform_files(checkout)
    assert set(files) == {
        "aws_autoscaling_lifecycle_hook", "aws_autoscaling_group",
        "aws_fsx_lustre_file_system", "aws_vpc_security_group_ingress_rule",
    }  # fmt: skip
    data = {
        "types": {
            "aws:autoscaling/lifecycleHook:LifecycleHook": {
                "terraform": "aws_autoscaling_lifecycle_hook"
            },
            "aws:autoscaling/group:Group": {"terraform": "aws_autoscaling_group"},
            "aws:fsx/lustreFileSystem:LustreFileSystem": {
                "terraform": "aws_fsx_lustre_file_system"
            },
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": {
                "terraform": "aws_vpc_security_group_ingress_rule"
            },
        }
    }
    out, problems = refresh.refreshed(
        data, files, {"aws": checkout, "random": checkout}, {"aws": RESOURCES_GO}
    )
    # These small sources declare a few of each resource's inputs: the rest of the SDK's are
    # listed, not guessed; nothing else went unmapped.
    assert [p for p in problems if "unclassified" not in p] == []
    assert "maxSize" not in out["types"]["aws:autoscaling/group:Group"]["unclassified"]
    assert "minSize" in out["types"]["aws:autoscaling/group:Group"]["unclassified"]
    hook = out["types"]["aws:autoscaling/lifecycleHook:LifecycleHook"]
    assert hook["replace"] == ["defaultResult", "name"]  # the schema's, and pulumi-aws's own
    assert hook["update"] == ["autoscalingGroupName", "heartbeatTimeout"]
    assert hook["delete_before_replace"] is True
    assert hook["source"]["path"] == "internal/service/hook.go"
    group = out["types"]["aws:autoscaling/group:Group"]
    assert group["replace"] == ["initialLifecycleHooks.heartbeatTimeout"]  # pluralized as the SDK
    lustre = out["types"]["aws:fsx/lustreFileSystem:LustreFileSystem"]
    assert lustre["replace"] == ["deploymentType"]
    assert lustre["replace_when"] == {"storageCapacity": ["decrease"]}
    rule = out["types"]["aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"]
    assert rule["replace"] == ["securityGroupId"] and rule["update"] == ["fromPort"]


EGRESS = """
// @FrameworkResource(name="Security Group Egress Rule")
func newEgressRule(context.Context) (resource.ResourceWithConfigure, error) {
	return &egressRule{}, nil
}

type egressRule struct {
	sharedRule
}

func (*egressRule) Metadata(_ context.Context, request resource.MetadataRequest, response *resource.MetadataResponse) {
	response.TypeName = "aws_vpc_security_group_egress_rule"
}
"""

SHARED_RULE = """
func (r *sharedRule) Schema(ctx context.Context, request resource.SchemaRequest, response *resource.SchemaResponse) {
	response.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"security_group_id": schema.StringAttribute{
				Required: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			names.AttrTags: tftags.TagsAttribute(),
			names.AttrTagsAll: tftags.TagsAttributeComputedOnly(),
		},
	}
}

func (r *sharedRule) ModifyPlan(ctx context.Context, request ModifyPlanRequest, response *ModifyPlanResponse) {
	response.RequiresReplace = []path.Path{path.Root(old), path.Root(new)}
}
"""

ROUTE = """
const (
	routeDestinationCIDRBlock = "destination_cidr_block"
)

// @SDKResource("aws_route", name="Route")
func resourceRoute() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"route_table_id": {Type: schema.TypeString, Required: true, ForceNew: true},
			routeDestinationCIDRBlock: {
				Type:     schema.TypeString,
				Optional: true,
				ForceNew: true,
			},
			"gateway_id": {Type: schema.TypeString, Optional: true},
		},
	}
}
"""

GROUP_WITH_RULES = """
// @SDKResource("aws_security_group", name="Security Group")
func resourceSecurityGroup() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			names.AttrName: {Type: schema.TypeString, Optional: true, ForceNew: true},
			"ingress": ruleBlock,
			names.AttrTags:    tftags.TagsSchema(),
			names.AttrTagsAll: tftags.TagsSchemaComputed(),
			"vpc_id": {Type: schema.TypeString, Optional: true, ForceNew: true},
		},
	}
}

var (
	ruleBlock = &schema.Schema{
		Type:     schema.TypeSet,
		Optional: true,
		Elem: &schema.Resource{
			Schema: map[string]*schema.Schema{
				"from_port": {Type: schema.TypeInt, Required: true},
			},
		},
	}
)
"""

INSTANCE = """
// @SDKResource("aws_instance", name="Instance")
func resourceInstance() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"ami": {Type: schema.TypeString, Optional: true, ForceNew: true},
			"user_data": {Type: schema.TypeString, Optional: true},
			"volume_tags": tagsFor([]string{"x"}),
		},
		CustomizeDiff: customdiff.All(
			customdiff.ForceNewIf("user_data", func(_ context.Context, d *schema.ResourceDiff, meta any) bool {
				return d.Get("user_data_replace_on_change").(bool)
			}),
		),
	}
}

func tagsFor(conflictsWith []string) *schema.Schema {
	v := tftags.TagsSchema()
	v.ConflictsWith = conflictsWith
	return v
}
"""


def test_the_tool_reads_what_real_sources_write(tmp_path: Path) -> None:
    """Shapes the provider's real sources have: a framework resource named only in its
    Metadata and embedding a shared schema, attribute names held in package constants, a
    block held in a package variable, tags from helpers, ForceNewIf; and what it cannot map
    (a ModifyPlan's computed paths, a helper it cannot resolve) it says."""
    refresh = tool()
    checkout = tmp_path / "upstream"
    service = checkout / "internal" / "service" / "ec2"
    service.mkdir(parents=True)
    for name, text in {
        "egress.go": EGRESS, "shared.go": SHARED_RULE, "route.go": ROUTE,
        "group.go": GROUP_WITH_RULES, "instance.go": INSTANCE,
    }.items():  # fmt: skip
        (service / name).write_text(text)
    files = refresh.terraform_files(checkout)
    assert files["aws_vpc_security_group_egress_rule"].name == "egress.go"
    data = {"types": {
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": {
            "terraform": "aws_vpc_security_group_egress_rule"},
        "aws:ec2/route:Route": {"terraform": "aws_route"},
        "aws:ec2/securityGroup:SecurityGroup": {"terraform": "aws_security_group"},
        "aws:ec2/instance:Instance": {"terraform": "aws_instance",
                                      "replace": ["primaryNetworkInterface"]},
    }}  # fmt: skip
    out, problems = refresh.refreshed(data, files, {"aws": checkout}, {})
    egress = out["types"]["aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"]
    assert egress["replace"] == ["securityGroupId"] and egress["update"] == ["tags"]
    assert egress["source"]["schema_path"] == "internal/service/ec2/shared.go"
    route = out["types"]["aws:ec2/route:Route"]
    assert route["replace"] == ["destinationCidrBlock", "routeTableId"]
    assert route["update"] == ["gatewayId"]
    group = out["types"]["aws:ec2/securityGroup:SecurityGroup"]
    assert group["replace"] == ["name", "vpcId"] and group["update"] == ["ingress", "tags"]
    instance = out["types"]["aws:ec2/instance:Instance"]
    assert instance["replace_when"] == {"userData": ["userDataReplaceOnChange=True"]}
    # An input this source lacks keeps the class the data had, marked as documented.
    assert "primaryNetworkInterface" in instance["replace"]
    assert instance["documented"] == ["primaryNetworkInterface"]
    said = "\n".join(problems)
    assert "ModifyPlan sets RequiresReplace" in said
    assert "volume_tags is built by tagsFor(), not read" in said
    assert "no pulumi-aws provider/resources.go given" in said


OVERRIDES_V7 = """
func resourceOverrides(p shim.Provider) map[string]*tfbridge.ResourceInfo {
	return map[string]*tfbridge.ResourceInfo{
		"aws_db_instance": {
			Fields: map[string]*tfbridge.SchemaInfo{
				"identifier": {
					Default: &tfbridge.DefaultInfo{
						AutoNamed: true,
						ComputeDefault: func(ctx context.Context, opts tfbridge.ComputeDefaultOptions) (any, error) {
							return tfbridge.ComputeAutoNameDefault(ctx, tfbridge.AutoNameOptions{Randlen: 7}, opts)
						},
					},
				},
				"instance_class": {Type: "string"},
			},
		},
		"aws_efs_mount_target": {

			DeleteBeforeReplace: true, // only 1 mount target per AZ.
		},
		"aws_iam_role": {
			Fields: map[string]*tfbridge.SchemaInfo{
				"inline_policy": {
					Elem: &tfbridge.SchemaInfo{
						Fields: map[string]*tfbridge.SchemaInfo{
							"name": tfbridge.AutoName("name", 128, "-"),
						},
					},
				},
			},
		},
		"aws_route53_record": {
			Fields: map[string]*tfbridge.SchemaInfo{
				"name": {Name: "name"},
			},
		},
	}
}
"""

AUTONAMING = """
func setAutonaming(p *tfbridge.ProviderInfo, resourceMetadata awsResourceMetadataLookup) {
}
"""


def test_the_tool_reads_pulumi_aws_7_overrides(tmp_path: Path) -> None:
    """pulumi-aws 7 keeps its overrides in resource_overrides.go and auto-names every
    input `name` in autonaming.go: both read, nested fields and plain name entries not
    taken for the resource's own auto-named inputs."""
    refresh = tool()
    (tmp_path / "provider").mkdir()
    (tmp_path / "provider" / "resource_overrides.go").write_text(OVERRIDES_V7)
    (tmp_path / "provider" / "autonaming.go").write_text(AUTONAMING)
    sources = refresh.bridge_sources(tmp_path)
    db = refresh.pulumi_overrides(sources, "aws_db_instance")
    assert db.auto_named == ["identifier"] and not db.delete_first and db.forced == []
    assert refresh.pulumi_overrides(sources, "aws_efs_mount_target").delete_first
    role = refresh.pulumi_overrides(sources, "aws_iam_role")
    assert role.auto_named == []  # the inline policies' name is not the role's
    assert refresh.pulumi_overrides(sources, "aws_route53_record").plain == ["name"]
    entry = {"terraform": "aws_iam_role"}
    problems: list[str] = []
    known = refresh.sdk_inputs("aws:iam/role:Role")
    refresh.apply_bridge(entry, sources, role, known, "aws:iam/role:Role", problems)
    assert entry["auto_named"] == ["name"] and problems == []  # autonaming.go's blanket rule
