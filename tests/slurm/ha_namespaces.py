"""Hosts as network namespaces for the backup-controller test: two controller hosts and one
compute host, each with its own loopback and one address, joined by a bridge that lives in a
namespace of its own (the "switch"):

    ctl-a (10.251.0.1) --+
    ctl-b (10.251.0.2) --+-- bridge (hap-<pid>-switch)
    node  (10.251.0.3) --+

slurmctld listens on every address of its port and tells primary from backup by its
hostname, so two controllers on one machine need a network and a hostname each: the
namespaces give the first, ``unshare --uts`` (see ``host_command``) the second. The host's
own namespace is never touched and the only addresses are the ones assigned here. Every
namespace name carries this process's id; ``HostNetwork.close`` removes them, and
``remove_stale_namespaces`` those of runs killed before their cleanup.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

NAME_PREFIX = "hap-"
NETNS_DIR = "/run/netns"
SUBNET_PREFIX_LENGTH = 24  # 10.251.0.0/24: private, and assigned by nothing else here
BRIDGE = "br0"


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


def remove_stale_namespaces() -> None:
    """Delete the namespaces of runs whose process is gone (hap-<pid>-...)."""
    names = os.listdir(NETNS_DIR) if os.path.isdir(NETNS_DIR) else []
    for name in names:
        pid = name.removeprefix(NAME_PREFIX).split("-", 1)[0]
        if name.startswith(NAME_PREFIX) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            ip("netns", "delete", name, check=False)


@dataclass
class HostNetwork:
    """Host name -> (namespace, address) for each host on the switch."""

    switch: str
    hosts: dict[str, tuple[str, str]] = field(default_factory=dict)

    def address(self, host: str) -> str:
        return self.hosts[host][1]

    def enter(self, host: str) -> list[str]:
        """The command prefix that runs a program in ``host``'s network namespace. nsenter, not
        `ip netns exec`: that one mounts a new /sys, without the cgroup file system slurmd
        needs."""
        return ["nsenter", f"--net={NETNS_DIR}/{self.hosts[host][0]}"]

    def close(self) -> None:
        # Deleting a namespace deletes its end of each veth pair, and with it the other end.
        for namespace, _address in self.hosts.values():
            ip("netns", "delete", namespace, check=False)
        ip("netns", "delete", self.switch, check=False)


def make_network(addresses: dict[str, str]) -> HostNetwork:
    """One namespace per host of ``addresses`` (host name -> IPv4 address), all on one
    bridge. On failure, whatever was made is removed again."""
    remove_stale_namespaces()
    tag = f"{NAME_PREFIX}{os.getpid()}"
    network = HostNetwork(switch=f"{tag}-switch")
    try:
        ip("netns", "add", network.switch)
        switch = ("-n", network.switch)
        ip(*switch, "link", "set", "lo", "up")
        ip(*switch, "link", "add", BRIDGE, "type", "bridge")
        ip(*switch, "link", "set", BRIDGE, "up")
        for index, (host, address) in enumerate(addresses.items()):
            namespace = f"{tag}-{host}"
            ip("netns", "add", namespace)
            network.hosts[host] = (namespace, address)
            port = f"port{index}"
            ip(*switch, "link", "add", port, "type", "veth", "peer", "name", "eth0",
               "netns", namespace)  # fmt: skip
            ip(*switch, "link", "set", port, "master", BRIDGE, "up")
            inside = ("-n", namespace)
            ip(*inside, "link", "set", "lo", "up")
            ip(*inside, "addr", "add", f"{address}/{SUBNET_PREFIX_LENGTH}", "dev", "eth0")
            ip(*inside, "link", "set", "eth0", "up")
    except BaseException:
        network.close()
        raise
    return network


def host_command(
    network: HostNetwork, host: str, hostname: str, binds: dict[str, str], cmd: list[str]
) -> list[str]:
    """``cmd`` as run on ``host``: its network namespace, a UTS namespace whose hostname is
    ``hostname``, and a private mount namespace where each ``binds`` source directory is
    mounted over its target (the host's own directories: /run, /var/log). Every step execs
    the next, so the process started is ``cmd`` itself and its pid stops it."""
    script = 'hostname "$1" || exit 97; shift; '
    script += 'while [ "$1" != -- ]; do '
    script += 'mkdir -p "$2" && mount --bind "$1" "$2" || exit 97; shift 2; done; '
    script += 'shift; exec "$@"'
    pairs = [path for source, target in binds.items() for path in (source, target)]
    unshare = ["unshare", "--uts", "--mount", "--propagation", "private"]
    return [*network.enter(host), *unshare, "sh", "-c", script, "sh", hostname, *pairs, "--", *cmd]
