"""params: the deploy-time parameters this role needs (node.env), the node's name (an elastic
instance's from its tag, slurmstack.node.elastic), /etc/hosts;
head-address: the controllers' addresses again, before every slurmd start.

With a backup controller (head_node.backup) both controllers boot the head's document: the
instance at the BACKUP_ADDRESS parameter's address is the backup and takes its name, and every
node's /etc/hosts names both."""

from __future__ import annotations

from dataclasses import replace

from ...contract import DeployParameter, NodeConfig, NodeEnv, backup_host, head_host, node_name
from ..context import AgentError, Context, log, write_atomic
from . import elastic

HOSTS_BEGIN = "# slurmstack begin"
# head-address takes the boot's reading of the parameters (slurmstack.node.parameters) when it is
# at most this old: at boot, slurmd's first start follows the first-boot script's reading by
# minutes; a later restart reads the parameter again.
HEAD_ADDRESS_FRESH_SECONDS = 900.0
HOSTS_END = "# slurmstack end"


def params(ctx: Context, timeout: float = 3600.0, poll: float = 10.0) -> NodeEnv:
    """What the node needs to start its Slurm daemon: its address and name, and on a
    worker the head's address. File system names are waited for by `mounts`, so the head
    starts slurmctld while Lustre is still being created."""
    config = ctx.config()
    address = ctx.imds("local-ipv4")
    env = replace(ctx.node_env(), instance_id=ctx.imds("instance-id"), address=address)
    if config.is_head:
        name = head_host(config.cluster)
        if config.backup:
            env = replace(
                env,
                head_address=ctx.wait_parameter(DeployParameter.HEAD_ADDRESS, timeout, poll),
                backup_address=ctx.wait_parameter(DeployParameter.BACKUP_ADDRESS, timeout, poll),
            )
            if address == env.backup_address:
                name = backup_host(config.cluster)
        hosts = controller_hosts(config, env) if config.backup else [f"{address} {name}"]
    else:
        # An elastic instance (launched by the head's power programs) takes the CLOUD node name
        # it was given; an always-on one is named by its address.
        given = elastic.elastic_name(ctx, env.instance_id) if config.elastic else None
        if config.elastic:
            elastic.slurmd_dropin(ctx, given is not None)
        name = given or node_name(config.node_name_prefix, address)
        head = ctx.wait_parameter(DeployParameter.HEAD_ADDRESS, timeout, poll)
        env = replace(env, head_address=head)
        if config.backup:
            backup = ctx.wait_parameter(DeployParameter.BACKUP_ADDRESS, timeout, poll)
            env = replace(env, backup_address=backup)
        hosts = [*controller_hosts(config, env), f"{address} {name}"]
    env = replace(env, node_name=name)
    ctx.write_node_env(env)
    write_hosts(ctx, hosts)
    # slurmctld only starts on the host SlurmctldHost names; nodes carry their Slurm name.
    ctx.sh("hostnamectl", "set-hostname", name, check=False)
    return env


def controller_hosts(config: NodeConfig, env: NodeEnv) -> list[str]:
    """/etc/hosts lines of the controllers: SlurmctldHost names them, and slurmd, sackd and the
    clients resolve those names here."""
    lines = [f"{env.head_address} {head_host(config.cluster)}"]
    if config.backup and env.backup_address:
        lines.append(f"{env.backup_address} {backup_host(config.cluster)}")
    return lines


def _read_address(ctx: Context, key: DeployParameter, attempts: int, delay: float) -> str | None:
    for attempt in range(1, attempts + 1):
        try:
            return ctx.get_parameter(key, HEAD_ADDRESS_FRESH_SECONDS)
        except Exception as exc:  # botocore's errors: SSM unreachable or throttled
            log(f"head-address: cannot read {key.value} ({exc}), attempt {attempt}")
            if attempt < attempts:
                ctx.sleep(delay)
    return None


def head_address(ctx: Context, attempts: int = 3, delay: float = 5.0) -> str:
    """The head node's address from its parameter, into node.env and /etc/hosts, when it
    changed (run before every slurmd start). The head's address outlives the instance
    (its own network interface), so a change is rare; if the parameter cannot be read in
    ``attempts`` tries the address known so far is kept, as slurmd must still start."""
    config = ctx.config()
    env = ctx.node_env()
    known = env.head_address
    current = _read_address(ctx, DeployParameter.HEAD_ADDRESS, attempts, delay)
    if not current:
        if not known:
            raise AgentError("the head node's address is neither known nor readable")
        log(f"head-address: keeping {known}")
        return known
    backup = env.backup_address
    if config.backup:
        backup = _read_address(ctx, DeployParameter.BACKUP_ADDRESS, attempts, delay) or backup
    if (current, backup) != (known, env.backup_address):
        if current != known:
            log(f"head-address: the head node is at {current} (was {known or 'unknown'})")
        if backup != env.backup_address:
            log(f"head-address: the backup controller is at {backup}")
        env = replace(env, head_address=current, backup_address=backup)
        ctx.write_node_env(env)
        hosts = controller_hosts(config, env)
        if env.node_name and env.address:
            hosts.append(f"{env.address} {env.node_name}")
        write_hosts(ctx, hosts)
    return current


def write_hosts(ctx: Context, lines: list[str]) -> None:
    """slurmstack's block of /etc/hosts, replacing the one written before."""
    path = ctx.path("/etc/hosts")
    current = path.read_text() if path.exists() else ""
    kept, skipping = [], False
    for line in current.splitlines():
        if line == HOSTS_BEGIN:
            skipping = True
        elif line == HOSTS_END:
            skipping = False
        elif not skipping:
            kept.append(line)
    block = [HOSTS_BEGIN, *lines, HOSTS_END]
    write_atomic(path, ("\n".join(kept + block) + "\n").encode(), 0o644)
