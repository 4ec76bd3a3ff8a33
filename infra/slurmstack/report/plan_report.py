"""`slurmstack plan`: what `pulumi up` would build, as one JSON-ready document.

The resources come from running the real Pulumi program (``infra/__main__.py``) under the
offline engine; capacity, storage, cost and time to ready are derived from the plan and
from that resource graph.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from slurmstack.change.snapshot import document_fields
from slurmstack.contract import MountKind
from slurmstack.findings import Finding, Level
from slurmstack.offline.record import OfflineRun, RecordedResource
from slurmstack.plan import ClusterPlan
from slurmstack.report.capacity import ClusterCapacity, cluster_capacity
from slurmstack.report.cost import CostReport, cost_report
from slurmstack.report.data import mounts_section
from slurmstack.report.head_failure import head_failure_section
from slurmstack.report.images import images_section
from slurmstack.report.monitoring_cost import budget_warning
from slurmstack.report.people import people_section
from slurmstack.report.readiness import time_to_ready, time_to_ready_range, time_to_stack
from slurmstack.report.slurm import slurm_section
from slurmstack.report.timing import Timeline, TimelineRange
from slurmstack.report.topology import topology_section


@dataclass(frozen=True)
class PlanReport:
    plan: ClusterPlan
    run: OfflineRun
    capacity: ClusterCapacity
    cost: CostReport
    ready: Timeline
    ready_range: TimelineRange
    ready_if_addresses_embedded: Timeline
    ready_images_built: Timeline  # the same cluster once its images exist (they are reused)
    stack: Timeline
    warnings: tuple[Finding, ...]

    def to_dict(self) -> dict[str, Any]:
        return plan_document(self)


def build_report(plan: ClusterPlan, run: OfflineRun, findings: list[Finding]) -> PlanReport:
    ready = time_to_ready_range(run)
    cost = cost_report(plan)
    budget, warnings = budget_warning(plan, cost), [f for f in findings if f.level is Level.WARNING]
    return PlanReport(
        plan=plan,
        run=run,
        capacity=cluster_capacity(plan),
        cost=cost,
        ready=ready.typical,
        ready_range=ready,
        ready_if_addresses_embedded=time_to_ready(run, embed_addresses=True, images_built=True),
        ready_images_built=time_to_ready(run, images_built=True),
        stack=time_to_stack(run),
        warnings=tuple(warnings + ([budget] if budget is not None else [])),
    )


def _component_name(run: OfflineRun, resource: RecordedResource) -> str:
    component = run.component_of(resource)
    return component.name if component is not None else "(stack)"


def _dependency_names(resource: RecordedResource, names: dict[str, str]) -> list[str]:
    """Names of the resources ``resource`` waits for: explicit depends_on and every resource
    whose outputs feed its inputs (a component dependency counts as its resources). A name
    can be shared by resources of different types (a subnet and its security group)."""
    return sorted({names[urn] for urn in resource.options.dependencies if urn in names})


def resources_section(run: OfflineRun) -> list[dict[str, Any]]:
    """Every resource; a provider resource also with what `plan --against` compares (its
    URN, inputs and options: slurmstack.change.snapshot.document_fields)."""
    names = {r.urn: r.name for r in run.resources if r.type != "pulumi:pulumi:Stack"}
    out = []
    for r in run.resources:
        if r.type == "pulumi:pulumi:Stack":
            continue
        out.append(
            {
                "type": r.type,
                "name": r.name,
                "kind": "resource" if r.custom else "component",
                "component": _component_name(run, r),
                "protect": r.options.protect,
                "retain_on_delete": r.options.retain_on_delete,
                "depends_on": _dependency_names(r, names),
                **(document_fields(r) if r.custom else {}),
            }
        )
    return out


def components_section(run: OfflineRun) -> list[dict[str, Any]]:
    out = []
    for comp in run.resources:
        if comp.custom or comp.type == "pulumi:pulumi:Stack":
            continue
        direct = [r for r in run.children(comp.urn) if r.custom]
        out.append(
            {
                "component": comp.name,
                "type": comp.type,
                "resources": len(direct),
                "by_type": dict(sorted(Counter(r.type for r in direct).items())),
            }
        )
    return out


def storage_section(plan: ClusterPlan, capacity: ClusterCapacity) -> list[dict[str, Any]]:
    tiers: list[dict[str, Any]] = []
    for pool in capacity.pools:
        if pool.scratch_gb_per_node:
            planned = plan.pool(pool.pool)
            tiers.append(
                {
                    "tier": "node-local NVMe RAID0",
                    "mount": planned.local_scratch,
                    "scope": f"pool {pool.pool}, per node",
                    "capacity": f"{pool.scratch_gb_per_node:,} GB per node",
                }
            )
    if plan.lustre is not None:
        lus = plan.lustre
        tib = lus.spec.capacity_gib / 1024
        throughput = lus.per_unit_storage_throughput
        tiers.append(
            {
                "tier": f"FSx for Lustre {lus.spec.deployment.value}",
                "mount": lus.spec.mount,
                "scope": "shared",
                "capacity": f"{lus.spec.capacity_gib:,} GiB",
                "throughput_mbps": round(tib * throughput) if throughput else None,
                "efa": lus.efa,
                "s3_link": lus.spec.s3_import_export,
            }
        )
    for mount in plan.mounts:
        if mount.kind is MountKind.EFS:
            tiers.append(
                {
                    "tier": "EFS (elastic throughput)",
                    "mount": mount.path,
                    "scope": "shared",
                    "capacity": "grows with use",
                }
            )
    bucket = plan.spec.storage.bucket
    tiers.append(
        {
            "tier": "S3 bucket",
            "mount": None,
            "scope": "durable",
            "capacity": "grows with use",
            "versioning": bucket.versioning,
            "noncurrent_version_days": bucket.noncurrent_version_days,
        }
    )
    return tiers


def _timeline_dict(timeline: Timeline) -> list[dict[str, Any]]:
    return [
        {
            "step": t.step.label,
            "start_s": t.start,
            "finish_s": t.finish,
            "seconds": t.step.duration.seconds,
            "range_s": list(t.step.duration.range),
            "basis": t.step.duration.basis,
        }
        for t in timeline.critical_path
    ]


def plan_document(report: PlanReport) -> dict[str, Any]:
    plan, run, cap, cost = report.plan, report.run, report.capacity, report.cost
    resources = resources_section(run)
    cloud = [r for r in resources if r["kind"] == "resource"]
    return {
        "cluster": plan.name,
        "region": plan.region,
        "availability_zone": plan.availability_zone,
        "summary": {
            "nodes": cap.nodes,
            "gpus": cap.accelerators,
            "gpus_by_model": cap.accelerators_by_model,
            "gpu_memory_gib": round(cap.accelerator_memory_gib, 1),
            "bf16_dense_pflops": round(cap.bf16_dense_pflops, 2),
            # With every pool at max_count, and with no job running (the elastic nodes
            # stopped, the always-on ones and everything else still there).
            "hourly_cost_usd": round(cost.hourly_usd, 2),
            "idle_hourly_cost_usd": round(cost.idle_hourly_usd, 2),
            "monthly_cost_usd": round(cost.monthly_usd, 2),
            "idle_monthly_cost_usd": round(cost.idle_monthly_usd, 2),
            "idle_nodes": cap.always_on_nodes,
            "idle_gpus": cap.always_on_accelerators,
            "cost_complete": cost.complete,
            "unpriced_pools": list(cost.unpriced_pools),
            "unpriced": list(cost.unpriced),
            "resources": len(cloud),
            "components": len(resources) - len(cloud),
            "users": plan.users,
            "login_nodes": sum(p.count for p in plan.login_pools),
            "time_to_ready_minutes": round(report.ready.total_seconds / 60, 1),
            "time_to_ready_range_minutes": [
                round(report.ready_range.low_seconds / 60, 1),
                round(report.ready_range.high_seconds / 60, 1),
            ],
        },
        "resources": resources,
        "resource_counts": dict(sorted(Counter(r["type"] for r in cloud).items())),
        "components": components_section(run),
        "capacity": {
            "pools": [
                {
                    "pool": p.pool,
                    "instance_type": p.instance_type,
                    "nodes": p.nodes,
                    "always_on_nodes": p.always_on_nodes,
                    "elastic_nodes": p.nodes - p.always_on_nodes,
                    "accelerator": p.accelerator_model,
                    "accelerators": p.accelerators,
                    "accelerator_memory_gib": round(p.accelerator_memory_gib, 1),
                    "bf16_dense_pflops": round(p.bf16_dense_pflops, 3),
                    "efa": p.efa,
                    "efa_gbps_per_node": p.efa_gbps_per_node,
                    "efa_gbps_total": p.efa_gbps_total,
                    "cpu_cores": p.cpu_cores,
                    "memory_gib": round(p.memory_gib, 1),
                }
                for p in cap.pools
            ],
            "totals": {
                "nodes": cap.nodes,
                "always_on_nodes": cap.always_on_nodes,
                "always_on_accelerators": cap.always_on_accelerators,
                "accelerators": cap.accelerators,
                "accelerator_memory_gib": round(cap.accelerator_memory_gib, 1),
                "bf16_dense_pflops": round(cap.bf16_dense_pflops, 2),
                "efa_gbps_total": cap.efa_gbps_total,
                "cpu_cores": cap.cpu_cores,
                "memory_gib": round(cap.memory_gib, 1),
            },
        },
        "storage": storage_section(plan, cap),
        "mounts": mounts_section(plan)["mounts"],
        "images": images_section(plan),
        "slurm": slurm_section(plan),
        "head_failure": head_failure_section(plan),
        "topology": topology_section(plan),
        "people": people_section(plan),
        "cost": {
            "lines": [
                {
                    "item": line.item,
                    "category": line.category,
                    "hourly_usd": None if line.hourly_usd is None else round(line.hourly_usd, 4),
                    "monthly_usd": None if line.monthly_usd is None else round(line.monthly_usd, 2),
                    "idle_hourly_usd": line.idle_hourly_usd and round(line.idle_hourly_usd, 4),
                    "basis": line.basis,
                    "note": line.note,
                    "source": line.source,
                }
                for line in cost.lines
            ],
            "usage_billed": [
                {"item": u.item, "unit_price": u.unit_price, "source": u.source}
                for u in cost.usage_billed
            ],
            "hourly_usd": round(cost.hourly_usd, 2),
            "per_30_days_usd": round(cost.monthly_usd, 2),
            "idle_hourly_usd": round(cost.idle_hourly_usd, 2),
            "idle_per_30_days_usd": round(cost.idle_monthly_usd, 2),
        },
        "time_to_ready": {
            "seconds": report.ready.total_seconds,
            # Every step at the low and at the high end of its published range.
            "range_seconds": [report.ready_range.low_seconds, report.ready_range.high_seconds],
            "critical_path": _timeline_dict(report.ready),
            "stack_complete_seconds": report.stack.total_seconds,
            # Once the images exist (every `pulumi up` after the first reuses them), and that
            # case again with the file systems' addresses baked into user data.
            "images_built_seconds": report.ready_images_built.total_seconds,
            "images_built_critical_path": _timeline_dict(report.ready_images_built),
            "if_addresses_were_in_user_data_seconds": report.ready_if_addresses_embedded.total_seconds,
        },
        "warnings": [f.line() for f in report.warnings],
        "outputs": {k: v for k, v in run.to_dict()["outputs"].items()},
    }
