"""params: the deploy-time parameters this role needs (node.env), the node's name, /etc/hosts."""

from __future__ import annotations

from .base import (
    HEAD_ROLE,
    NODE_ENV,
    PARAM_EFS_ID,
    PARAM_HEAD_ADDRESS,
    PARAM_LUSTRE_DNS,
    PARAM_LUSTRE_MOUNT_NAME,
    NodeBase,
    node_name,
    write_atomic,
)

HOSTS_BEGIN = "# slurmstack begin"
HOSTS_END = "# slurmstack end"


class Params(NodeBase):
    def params(self, timeout: float = 3600.0, poll: float = 10.0) -> dict[str, str]:
        config = self.config()
        role = str(config["role"])
        cluster = str(config["cluster"])
        env: dict[str, str] = {}
        address = self.imds("local-ipv4")  # type: ignore[operator]
        env["SLURMSTACK_INSTANCE_ID"] = self.imds("instance-id")  # type: ignore[operator]
        env["SLURMSTACK_ADDRESS"] = address
        kinds = {m["kind"] for m in config.get("mounts", [])}
        if role == HEAD_ROLE:
            name = f"{cluster}-head"
            hosts = [f"{address} {name}"]
        else:
            name = node_name(str(config["node_name_prefix"]), address)
            head = self.wait_parameter(PARAM_HEAD_ADDRESS, timeout, poll)
            env["SLURMSTACK_HEAD_ADDRESS"] = head
            hosts = [f"{head} {cluster}-head", f"{address} {name}"]
        env["SLURMSTACK_NODE_NAME"] = name
        if "efs" in kinds:
            env["SLURMSTACK_EFS_ID"] = self.wait_parameter(PARAM_EFS_ID, timeout, poll)
        if "lustre" in kinds:
            env["SLURMSTACK_LUSTRE_DNS"] = self.wait_parameter(PARAM_LUSTRE_DNS, timeout, poll)
            env["SLURMSTACK_LUSTRE_MOUNT_NAME"] = self.wait_parameter(
                PARAM_LUSTRE_MOUNT_NAME, timeout, poll
            )
        text = "".join(f"{k}={v}\n" for k, v in sorted(env.items()))
        write_atomic(self.path(NODE_ENV), text.encode(), 0o644)
        self._write_hosts(hosts)
        # slurmctld only starts on the host SlurmctldHost names; nodes carry their Slurm name.
        self.sh("hostnamectl", "set-hostname", name, check=False)
        return env

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
