"""params: the deploy-time parameters this role needs (node.env), the node's name, /etc/hosts;
head-address: the head node's address again, before every slurmd start."""

from __future__ import annotations

from ..contract import head_host
from .base import (
    HEAD_ROLE,
    NODE_ENV,
    PARAM_HEAD_ADDRESS,
    AgentError,
    NodeBase,
    log,
    node_name,
    write_atomic,
)

HOSTS_BEGIN = "# slurmstack begin"
HOSTS_END = "# slurmstack end"


class Params(NodeBase):
    def params(self, timeout: float = 3600.0, poll: float = 10.0) -> dict[str, str]:
        """What the node needs to start its Slurm daemon: its address and name, and on a
        worker the head's address. File system names are waited for by `mounts`, so the head
        starts slurmctld while Lustre is still being created."""
        config = self.config()
        role = str(config["role"])
        cluster = str(config["cluster"])
        env = self.node_env()
        address = self.imds("local-ipv4")  # type: ignore[operator]
        env["SLURMSTACK_INSTANCE_ID"] = self.imds("instance-id")  # type: ignore[operator]
        env["SLURMSTACK_ADDRESS"] = address
        if role == HEAD_ROLE:
            name = head_host(cluster)
            hosts = [f"{address} {name}"]
        else:
            name = node_name(str(config["node_name_prefix"]), address)
            head = self.wait_parameter(PARAM_HEAD_ADDRESS, timeout, poll)
            env["SLURMSTACK_HEAD_ADDRESS"] = head
            hosts = [f"{head} {head_host(cluster)}", f"{address} {name}"]
        env["SLURMSTACK_NODE_NAME"] = name
        self._write_node_env(env)
        self._write_hosts(hosts)
        # slurmctld only starts on the host SlurmctldHost names; nodes carry their Slurm name.
        self.sh("hostnamectl", "set-hostname", name, check=False)
        return env

    def head_address(self, attempts: int = 3, delay: float = 5.0) -> str:
        """The head node's address from its parameter, into node.env and /etc/hosts, when it
        changed (run before every slurmd start). The head's address outlives the instance
        (its own network interface), so a change is rare; if the parameter cannot be read in
        ``attempts`` tries the address known so far is kept, as slurmd must still start."""
        config = self.config()
        env = self.node_env()
        known = env.get("SLURMSTACK_HEAD_ADDRESS", "")
        current = None
        for attempt in range(1, attempts + 1):
            try:
                current = self.get_parameter(PARAM_HEAD_ADDRESS)
                break
            except Exception as exc:  # botocore's errors: SSM unreachable or throttled
                log(f"head-address: cannot read the parameter ({exc}), attempt {attempt}")
                if attempt < attempts:
                    self.sleep(delay)  # type: ignore[operator]
        if not current:
            if not known:
                raise AgentError("the head node's address is neither known nor readable")
            log(f"head-address: keeping {known}")
            return known
        if current != known:
            log(f"head-address: the head node is at {current} (was {known or 'unknown'})")
            env["SLURMSTACK_HEAD_ADDRESS"] = current
            self._write_node_env(env)
            name = env.get("SLURMSTACK_NODE_NAME")
            hosts = [f"{current} {head_host(config['cluster'])}"]
            if name and env.get("SLURMSTACK_ADDRESS"):
                hosts.append(f"{env['SLURMSTACK_ADDRESS']} {name}")
            self._write_hosts(hosts)
        return current

    def _write_node_env(self, env: dict[str, str]) -> None:
        text = "".join(f"{k}={v}\n" for k, v in sorted(env.items()))
        write_atomic(self.path(NODE_ENV), text.encode(), 0o644)

    def _write_hosts(self, lines: list[str]) -> None:
        path = self.path("/etc/hosts")
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
