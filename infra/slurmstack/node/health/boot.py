"""The boot health check (`slurmstack-node health`, before every slurmd start): devices and
whether they answer (a GPU the driver lost since boot named as such), shared file systems, and
on an instance's first boot DCGM's diagnostic.
A node that fails it copies its logs to the bucket, marks its instance Unhealthy so its Auto
Scaling group replaces it, and slurmd never starts: it is never scheduled."""

from __future__ import annotations

from ..context import Context, log
from ..logs import ship_logs
from .devices import device_findings
from .diagnostic import deep_diagnostic
from .findings import Finding, record
from .kernel_log import lost_this_boot
from .volumes import file_system_findings

# Boot has no 60 s limit (slurmd's unit gives ExecStartPre its own): a mount gets longer.
FILE_SYSTEM_SECONDS = 30


def boot_findings(ctx: Context, instance: str) -> list[Finding]:
    config = ctx.config()
    found = lost_this_boot(ctx, config.health) + device_findings(ctx, config.health)
    found += file_system_findings(ctx, config.mounts, FILE_SYSTEM_SECONDS)
    if not found:  # a node already known bad does not spend twenty minutes on DCGM
        found = deep_diagnostic(ctx, config.health, instance)
    return found


def health(ctx: Context) -> list[str]:
    """Problems found (their reasons); when there are any the node's logs go to the bucket and
    its instance is marked Unhealthy."""
    ctx.config()  # node.json first: without it there is nothing to check against
    instance = ctx.node_env().instance_id or ctx.imds("instance-id")
    found = boot_findings(ctx, instance)
    if found:
        record(ctx, found, "boot")
        try:
            ship_logs(ctx, "the boot health check failed")
        except Exception as exc:  # the logs are worth a try, the replacement is not optional
            log(f"could not copy the logs to the bucket: {exc}")
        ctx.aws.autoscaling().set_instance_health(
            InstanceId=instance, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
        )
        log(f"marked {instance} Unhealthy in its Auto Scaling group")
    return [f.reason for f in found]
