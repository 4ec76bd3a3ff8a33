"""sync-config: this role's files from the config store, as the manifest lists them."""

from __future__ import annotations

from collections.abc import Mapping

from ...contract import (
    CONTROLLER_TIMER,
    HEAD_ROLE,
    MONITORING_UNITS,
    POWER_TIMER,
    SLURM_CONF_PATH,
    TOPOLOGY_CONF_PATH,
    TOPOLOGY_YAML_PATH,
    DeployParameter,
    matches_key,
    read_bundle,
    read_manifest,
    unit_path,
)
from .. import system
from ..context import AgentError, Context, log, write_atomic

# Keys of slurm.conf that scontrol reconfigure does not apply: slurmctld must restart. NodeName
# too: the nodes slurm.conf declares (the elastic pools' CLOUD nodes) are fixed until a restart
# ("node count has changed before reconfiguration ... You have to restart slurmctld",
# read_config.c, Slurm 23.11).
RESTART_KEYS = ("MaxNodeCount", "SlurmctldPort", "SlurmdPort", "SlurmctldParameters", "NodeName")
# The controller's timer (head node) is enabled by sync-config wherever it is merely disabled;
# an operator stops the controller for good with `systemctl mask slurmstack-controller.timer`.
CONTROLLER_TIMER_PATH = unit_path(CONTROLLER_TIMER)
# The reaper's timer of agents before the controller, which the controller's pass now includes:
# one loop on the head, so an older head's reaper timer is stopped where it is still enabled.
SUPERSEDED_TIMERS = ("slurmstack-reaper.timer",)
# The manifest's key changes with every configuration change: sync-config takes it from the
# boot's reading of the parameters (the first-boot script's, seconds before) only when it is
# this fresh; run later (the head's SSM association after a change) it reads it again.
MANIFEST_FRESH_SECONDS = 60.0
EXECUTABLE_DIRS = ("/usr/local/bin/", "/usr/local/sbin/")


def file_mode(node_path: str) -> int:
    executable = node_path.startswith(EXECUTABLE_DIRS) or node_path.endswith(".sh")
    return 0o755 if executable else 0o644


def restart_keys(slurm_conf: str) -> dict[str, str]:
    """The values of RESTART_KEYS (a key on several lines, as NodeName: all of them)."""
    out: dict[str, str] = {}
    for line in slurm_conf.splitlines():
        key, _, value = line.split("#", 1)[0].partition("=")
        if key.strip() in RESTART_KEYS:
            key = key.strip()
            out[key] = f"{out[key]}\n{value.strip()}" if key in out else value.strip()
    return out


def sync_config(ctx: Context, timeout: float = 3600.0, poll: float = 10.0) -> list[str]:
    """Bring this role's files up to date with the manifest; return the changed paths."""
    role = ctx.bootstrap_env().role
    manifest_key = ctx.wait_parameter(
        DeployParameter.CONFIG_MANIFEST, timeout, poll, max_age=MANIFEST_FRESH_SECONDS
    )
    bucket = ctx.wait_parameter(DeployParameter.BUCKET, timeout, poll)
    s3 = ctx.aws.s3()

    def fetch(key: str) -> bytes:
        """An object of the store, checked against the hash its key names."""
        body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        if not matches_key(body, key):
            raise AgentError(f"s3://{bucket}/{key} does not match its sha256")
        return body

    manifest = read_manifest(fetch(manifest_key))
    if role not in manifest.files:
        raise AgentError(f"the manifest has no entry for role {role!r}")
    wanted = manifest.files[role]
    stale = {
        path: key
        for path, key in wanted.items()
        if not (ctx.path(path).exists() and matches_key(ctx.path(path).read_bytes(), key))
    }
    old_slurm_conf = system.read(ctx, SLURM_CONF_PATH)
    changed: list[str] = []
    if stale:
        # Every bundle is fetched and every file checked before any file is written.
        contents: dict[str, bytes] = {}
        for bundle in manifest.bundles.get(role, ()):
            contents.update(read_bundle(fetch(bundle)))
        for path, key in sorted(stale.items()):
            if path not in contents or not matches_key(contents[path], key):
                raise AgentError(f"the bundles of role {role!r} do not hold {path} as listed")
        for path in sorted(stale):
            write_atomic(ctx.path(path), contents[path], file_mode(path))
            changed.append(path)
    if role == HEAD_ROLE:
        changed += _drop_stale_topology(ctx, wanted)
    if any(p.startswith("/etc/systemd/") for p in changed):
        ctx.sh("systemctl", "daemon-reload", check=False)
    if role == HEAD_ROLE:
        _enable_controller(ctx)
        # The elastic nodes' sweep, once a pool is elastic.
        _enable_timer(ctx, POWER_TIMER)
    # Exporters, the metrics timer and (on the head) Prometheus, Alertmanager, the relay and
    # Grafana: every role's, whichever of them the role received.
    for unit in MONITORING_UNITS:
        _enable_timer(ctx, unit)
    if role == HEAD_ROLE and SLURM_CONF_PATH in changed and old_slurm_conf:
        new = system.read(ctx, SLURM_CONF_PATH) or ""
        if restart_keys(old_slurm_conf) != restart_keys(new):
            active = ctx.sh("systemctl", "is-active", "--quiet", "slurmctld", check=False)
            if active.returncode == 0:
                log("a key that reconfigure cannot apply changed: restarting slurmctld")
                ctx.sh("systemctl", "restart", "slurmctld")
    return changed


def _drop_stale_topology(ctx: Context, wanted: Mapping[str, str]) -> list[str]:
    """Remove a topology file the head's configuration no longer has: slurmctld reads
    topology.yaml whenever it exists (ignoring topology.conf and TopologyPlugin), so one left
    from before a change (an UltraServer pool removed, or topology turned off) would go on
    deciding the topology."""
    dropped = []
    for path in (TOPOLOGY_CONF_PATH, TOPOLOGY_YAML_PATH):
        if path not in wanted and ctx.path(path).exists():
            ctx.path(path).unlink()
            log(f"removed {path}: the configuration no longer has it")
            dropped.append(path)
    return dropped


def _enable_timer(ctx: Context, timer: str) -> None:
    """Enable a unit (a timer, or a service with an [Install] section) where it is installed
    and merely disabled: on a new node, and on one that got it from an older agent, a new
    elastic pool or a configuration change. A masked unit stays off."""
    if not ctx.path(unit_path(timer)).exists():
        return
    # Prometheus keeps its samples on the head's state volume, which the first boot mounts
    # after its first sync: started before it, it would write to the root disk under the
    # mount point (systemd finds no mount unit to wait for). It stays disabled until then,
    # and the boot's sync after the volume starts it.
    waits_for = [m for m in _required_mounts(ctx, timer) if not system.mounted(ctx, m)]
    if waits_for:
        log(f"{timer} starts once {', '.join(waits_for)} is mounted")
        return
    state = ctx.sh("systemctl", "is-enabled", timer, check=False).stdout.strip()
    if state == "disabled":
        ctx.sh("systemctl", "enable", "--now", timer, check=False)


def _required_mounts(ctx: Context, unit: str) -> list[str]:
    """The unit file's RequiresMountsFor paths."""
    text = ctx.path(unit_path(unit)).read_text()
    key = "RequiresMountsFor="
    return [
        p for line in text.splitlines() if line.startswith(key) for p in line[len(key) :].split()
    ]


def _enable_controller(ctx: Context) -> None:
    """Enable the controller's timer where it is installed and merely disabled: on a new head
    node, and on one that got the timer from an older agent. A masked timer stays off. The
    reaper timer it supersedes is stopped where an older agent enabled it."""
    if not ctx.path(CONTROLLER_TIMER_PATH).exists():
        return
    state = ctx.sh("systemctl", "is-enabled", CONTROLLER_TIMER, check=False).stdout.strip()
    if state == "disabled":
        ctx.sh("systemctl", "enable", "--now", CONTROLLER_TIMER, check=False)
    for timer in SUPERSEDED_TIMERS:
        if ctx.sh("systemctl", "is-enabled", timer, check=False).stdout.strip() == "enabled":
            log(f"{timer} is superseded by {CONTROLLER_TIMER}: disabling it")
            ctx.sh("systemctl", "disable", "--now", timer, check=False)
