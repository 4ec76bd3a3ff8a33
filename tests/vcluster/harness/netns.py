"""The virtual cluster's network: a bridge inside a namespace of its own (the "fabric"), and a
network namespace per node joined to it by a veth pair.

The host's root namespace is never touched: the bridge, the router address nodes use as their
gateway (where the stand-in AWS endpoints listen) and the metadata address all live in the
fabric namespace. Every name carries the run id, so concurrent runs never collide, and
``Fabric.close`` removes every namespace the run made (deleting a namespace deletes its end of
each veth pair, and with it the other end).
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

NETNS_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
# The instance metadata service's link-local address (EC2 User Guide, "Access instance
# metadata"): nodes reach it through their default route, the fabric namespace answers.
METADATA_ADDRESS = "169.254.169.254"
BRIDGE = "br0"
# The bridge's own MAC address, fixed: a Linux bridge otherwise takes the lowest MAC of its
# ports, which changes as nodes come and go, and every node's neighbour entry for the router
# (moto, the metadata service) would point nowhere until it expired (about 30 s). Outside
# moto's range (02:00:00:xx:xx:xx).
BRIDGE_MAC = "02:76:63:00:00:01"
NAME_PREFIX = "vc"  # every namespace of a run: vc<run id>-<role>


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


def run_in_namespace(namespace: str, call: Callable[[], T]) -> T:
    """``call()`` on a thread that has joined ``namespace``: sockets it creates (listening
    servers) belong to that namespace for good. A network namespace is per thread, so the
    rest of the process stays in its own."""
    box: dict[str, object] = {}

    def target() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(os.path.join(NETNS_DIR, namespace), os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {namespace}")
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc
        finally:
            os.close(fd)

    thread = threading.Thread(target=target, name=f"netns-{namespace}")
    thread.start()
    thread.join(timeout=60)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    if "value" not in box:
        raise TimeoutError(f"nothing came back from namespace {namespace}")
    return box["value"]  # type: ignore[return-value]


def stale_namespaces() -> list[str]:
    """Namespaces left by runs whose process is gone (a run killed before its cleanup)."""
    out = []
    names = os.listdir(NETNS_DIR) if os.path.isdir(NETNS_DIR) else []
    for name in names:
        head, _, _ = name.partition("-")
        pid = head.removeprefix(NAME_PREFIX)
        if head.startswith(NAME_PREFIX) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            out.append(name)
    return out


class Fabric:
    """The bridge namespace. The bridge carries the subnet's first host address, which AWS
    keeps for the VPC router: no instance is ever given it, so the stand-in AWS endpoints
    listen there, and the metadata address sits next to it."""

    def __init__(self, run_id: str, subnet: ipaddress.IPv4Network) -> None:
        self.run_id = run_id
        self.subnet = subnet
        self.router = str(next(subnet.hosts()))
        self.namespace = f"{NAME_PREFIX}{run_id}-fabric"
        self._nodes: dict[str, str] = {}  # node namespace -> veth name in the fabric
        self._lock = threading.Lock()
        self._count = 0
        ip("netns", "add", self.namespace)
        fab = ("-n", self.namespace)
        ip(*fab, "link", "set", "lo", "up")
        ip(*fab, "link", "add", BRIDGE, "type", "bridge")
        ip(*fab, "link", "set", BRIDGE, "address", BRIDGE_MAC)
        ip(*fab, "addr", "add", f"{self.router}/{subnet.prefixlen}", "dev", BRIDGE)
        ip(*fab, "addr", "add", f"{METADATA_ADDRESS}/32", "dev", BRIDGE)
        ip(*fab, "link", "set", BRIDGE, "up")

    def add_node(self, label: str, address: str, mac: str = "") -> str:
        """A namespace for one node, wired to the bridge with ``address`` and, when given, the
        MAC address ``mac`` (the instance's network interface's: an instance launched on an
        existing interface keeps its MAC as well as its address, so the other nodes' neighbour
        entries stay right); returns its name."""
        with self._lock:
            self._count += 1
            veth = f"v{self._count}"
        namespace = f"{NAME_PREFIX}{self.run_id}-{label}"
        ip("netns", "add", namespace)
        with self._lock:
            self._nodes[namespace] = veth
        node = ("-n", namespace)
        ip("-n", self.namespace, "link", "add", veth, "type", "veth", "peer", "name", "eth0",
           "netns", namespace)  # fmt: skip
        ip("-n", self.namespace, "link", "set", veth, "master", BRIDGE, "up")
        ip(*node, "link", "set", "lo", "up")
        if mac:
            ip(*node, "link", "set", "eth0", "address", mac)
        ip(*node, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", "eth0")
        ip(*node, "link", "set", "eth0", "up")
        ip(*node, "route", "add", "default", "via", self.router)
        return namespace

    def remove_node(self, namespace: str) -> None:
        with self._lock:
            self._nodes.pop(namespace, None)
        ip("netns", "delete", namespace, check=False)

    def close(self) -> None:
        for namespace in list(self._nodes):
            self.remove_node(namespace)
        ip("netns", "delete", self.namespace, check=False)
