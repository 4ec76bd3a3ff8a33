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
        data, files, {"aws": checkout, "random": checkout}, RESOURCES_GO
    )
    assert problems == []
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
