"""A node, its metadata service and a bridged container as three network namespaces, for the
metadata-firewall tests. Everything runs as root inside namespaces this fixture makes; the only
addresses are ones it assigns itself. With CI=true a missing tool fails instead of skipping.

    container (192.0.2.2) --veth-- node (192.0.2.1 | 169.254.0.1) --veth-- imds (169.254.169.254)

The node routes (forwards) the container's packets like a docker host does; the metadata
service sits behind the node's link-local interface as it does on EC2.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurmstack.contract import IMDS_IPV4, IMDS_IPV6
from slurmstack.imds_firewall import TABLE

TOOLS = ("ip", "nft", "setpriv", "unshare")
# The unprivileged user's interpreter must be one it may execute (not a virtualenv under /root).
SYSTEM_PYTHON = "/usr/bin/python3"
STANDIN = Path(__file__).resolve().parent / "metadata_standin.py"
NODE_V4, CONTAINER_V4 = "192.0.2.1", "192.0.2.2"  # TEST-NET-1, never routed anywhere
NODE_LINK_V4, NODE_V6 = "169.254.0.1", "fd00:ec2::1"
CLIENT_TIMEOUT = 3.0
_serial = itertools.count()

# IMDSv2 as a client does it: a token by PUT, then a metadata path with the token. Prints one
# JSON line: what was answered, or the error and how long it took. No proxy, whatever the
# environment says: the request goes to the stand-in's address and nowhere else.
CLIENT = """
import json, os, socket, sys, time, urllib.request
host, timeout = sys.argv[1], float(sys.argv[2])
base = "http://[%s]" % host if ":" in host else "http://%s" % host
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
start = time.monotonic()
try:
    put = urllib.request.Request(base + "/latest/api/token", method="PUT",
                                 headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})
    token = opener.open(put, timeout=timeout).read().decode()
    get = urllib.request.Request(base + "/latest/meta-data/instance-id",
                                 headers={"X-aws-ec2-metadata-token": token})
    body = opener.open(get, timeout=timeout).read().decode()
    print(json.dumps({"uid": os.getuid(), "answer": body}))
except OSError as error:
    reason = getattr(error, "reason", error)
    print(json.dumps({"uid": os.getuid(), "error": repr(reason),
                      "errno": getattr(reason, "errno", None),
                      "seconds": time.monotonic() - start}))
"""


def require_tools() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if not os.path.exists(SYSTEM_PYTHON):
        missing.append(SYSTEM_PYTHON)
    ci = os.environ.get("CI", "").lower() == "true"
    if missing:
        if ci:
            pytest.fail(f"CI=true but {missing} are missing (apt: nftables iproute2 util-linux)")
        pytest.skip(f"not installed: {missing}")
    if os.geteuid() != 0:
        if ci:
            pytest.fail("CI=true but the firewall tests need root (network namespaces, nft)")
        pytest.skip("the firewall tests need root")


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=30)


@dataclass
class MetadataNetwork:
    node: str
    imds: str
    container: str
    standin: subprocess.Popen[str] | None = None

    def in_ns(self, ns: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", ns, *cmd, check=check)

    def nft(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Debian's nft in the node's namespace."""
        return self.in_ns(self.node, "nft", *args, check=check)

    def load_rules(self, path: Path) -> None:
        self.nft("-f", str(path))

    def clear_rules(self) -> None:
        self.nft("delete", "table", "inet", TABLE, check=False)

    def ask(
        self,
        *,
        ns: str | None = None,
        user: str | None = None,
        userns_root: bool = False,
        host: str = IMDS_IPV4,
    ) -> dict[str, object]:
        """One IMDSv2 request from the node (or ``ns``), as root or as ``user``; with
        ``userns_root`` from inside a new user namespace where the user is mapped to uid 0
        (how rootless container runtimes such as enroot make a container's "root")."""
        cmd: list[str] = ["ip", "netns", "exec", ns or self.node]
        if user is not None:
            cmd += ["setpriv", f"--reuid={user}", f"--regid={user_group(user)}", "--clear-groups"]
        if userns_root:
            cmd += ["unshare", "--user", "--map-root-user"]
        cmd += [SYSTEM_PYTHON, "-c", CLIENT, host, str(CLIENT_TIMEOUT)]
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=CLIENT_TIMEOUT * 2 + 10, check=False
        )
        assert done.returncode == 0, (cmd, done.stderr)
        answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return answer

    def counters(self) -> list[int]:
        """Packet counts of the rule set's reject rules, in the order they are listed."""
        text = self.nft("list", "table", "inet", TABLE).stdout
        return [
            int(line.split("packets")[1].split()[0])
            for line in text.splitlines()
            if "counter packets" in line
        ]


def user_group(user: str) -> str:
    import grp
    import pwd

    return grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name


def _setup(net: MetadataNetwork, tag: str) -> None:
    for ns in (net.node, net.imds, net.container):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    # Interface names are at most 15 characters.
    a, b, c, d = (f"{tag}{x}" for x in "abcd")
    sh(
        "ip",
        "link",
        "add",
        a,
        "netns",
        net.node,
        "type",
        "veth",
        "peer",
        "name",
        b,
        "netns",
        net.imds,
    )
    sh("ip", "link", "add", c, "netns", net.node, "type", "veth", "peer", "name", d, "netns",
       net.container)  # fmt: skip
    sh("ip", "-n", net.node, "addr", "add", f"{NODE_LINK_V4}/16", "dev", a)
    sh("ip", "-n", net.node, "addr", "add", f"{NODE_V6}/64", "dev", a, "nodad")
    sh("ip", "-n", net.imds, "addr", "add", f"{IMDS_IPV4}/16", "dev", b)
    sh("ip", "-n", net.imds, "addr", "add", f"{IMDS_IPV6}/64", "dev", b, "nodad")
    sh("ip", "-n", net.node, "addr", "add", f"{NODE_V4}/24", "dev", c)
    sh("ip", "-n", net.container, "addr", "add", f"{CONTAINER_V4}/24", "dev", d)
    for ns, dev in ((net.node, a), (net.imds, b), (net.node, c), (net.container, d)):
        sh("ip", "-n", ns, "link", "set", dev, "up")
    sh("ip", "-n", net.container, "route", "add", "default", "via", NODE_V4)
    sh("ip", "-n", net.imds, "route", "add", f"{CONTAINER_V4}/32", "via", NODE_LINK_V4)
    net.in_ns(net.node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")


@pytest.fixture(scope="module")
def metadata_network() -> Iterator[MetadataNetwork]:
    require_tools()
    serial = next(_serial)
    base = f"slurmstack-fw-{os.getpid()}-{serial}"
    net = MetadataNetwork(node=f"{base}-node", imds=f"{base}-imds", container=f"{base}-ctr")
    try:
        _setup(net, tag=f"ssf{os.getpid() % 100000}{serial % 10}")
        net.standin = subprocess.Popen(
            ["ip", "netns", "exec", net.imds, sys.executable, str(STANDIN), IMDS_IPV4, IMDS_IPV6,
             "--lifetime", "300"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert net.standin.stdout is not None
        deadline = time.monotonic() + 20
        line = ""
        while time.monotonic() < deadline and not line and net.standin.poll() is None:
            line = net.standin.stdout.readline().strip()
        assert line == "ready", f"metadata stand-in did not start: {line!r}"
        yield net
    finally:
        if net.standin is not None:
            net.standin.kill()
            net.standin.wait(timeout=10)
        for ns in (net.container, net.node, net.imds):
            sh("ip", "netns", "delete", ns, check=False)
