"""The metadata-service firewall, for real: the rule set a node's cloud-init document carries is
loaded with Debian's nft in a network namespace, and IMDSv2 requests to a stand-in metadata
service are answered for root only (see conftest.py for the namespaces)."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest
import yaml

from firewall.conftest import CLIENT_TIMEOUT, MetadataNetwork, require_tools
from firewall.metadata_standin import INSTANCE_ID
from slurmstack.contract import HEAD_ROLE, IMDS_IPV6, SLURM_USER
from slurmstack.imds_firewall import RULES_PATH, TABLE
from slurmstack.render import roles, user_data
from slurmstack.render.monitoring import MONITOR_USER
from support.examples import EXAMPLE_IDS, example_plan

pytestmark = pytest.mark.firewall

UNPRIVILEGED = "nobody"


def shipped_rules(example: str, role: str, tmp_path: Path) -> Path:
    """The rule set exactly as the role's cloud-init document writes it on the node."""
    document = yaml.safe_load(user_data(example_plan(example), role))
    (entry,) = [f for f in document["write_files"] if f["path"] == RULES_PATH]
    path = tmp_path / f"{example}-{role}.nft"
    path.write_text(entry["content"])
    return path


def answered(reply: dict[str, object]) -> bool:
    return reply.get("answer") == INSTANCE_ID


def refused(reply: dict[str, object]) -> bool:
    """Turned away by the rule set, not timed out: "administratively prohibited" is
    EHOSTUNREACH over IPv4 and EACCES over IPv6."""
    return (
        "answer" not in reply
        and reply.get("errno") in (errno.EHOSTUNREACH, errno.EACCES)
        and float(str(reply["seconds"])) < CLIENT_TIMEOUT
    )


def test_only_root_reaches_the_metadata_service(
    metadata_network: MetadataNetwork, tmp_path: Path
) -> None:
    net = metadata_network
    net.clear_rules()
    # Without the rules everyone is answered: the setup itself refuses nobody.
    assert answered(net.ask(user=UNPRIVILEGED))
    assert answered(net.ask(ns=net.container))

    net.load_rules(shipped_rules("p5-training", "train", tmp_path))
    assert answered(net.ask())
    assert answered(net.ask(host=IMDS_IPV6))
    assert refused(net.ask(user=UNPRIVILEGED))
    assert refused(net.ask(user=UNPRIVILEGED, host=IMDS_IPV6))
    # A rootless container's "root" is still the job user to the kernel.
    reply = net.ask(user=UNPRIVILEGED, userns_root=True)
    assert reply["uid"] == 0 and refused(reply)
    # A bridged container's packets are forwarded by the node and refused, even as root.
    assert refused(net.ask(ns=net.container))
    # Every refusal was the rule set's doing: output (v4 user, v6 user, userns) and forward.
    metadata_reject, forward_v4, forward_v6 = net.counters()
    assert metadata_reject >= 3 and forward_v4 >= 1 and forward_v6 == 0


def test_slurmuser_reaches_it_on_the_head_node_only(
    metadata_network: MetadataNetwork, tmp_path: Path
) -> None:
    """slurmctld runs the elastic pools' power programs as SlurmUser on the head node: there
    `slurm` is answered (and only `slurm` besides root); on a worker it is refused like any
    job user. The example has elastic pools (g6e-inference-spot)."""
    net = metadata_network
    example = "g6e-inference-spot"
    assert example_plan(example).elastic_pools
    net.clear_rules()
    net.load_rules(shipped_rules(example, HEAD_ROLE, tmp_path))
    assert answered(net.ask(user=SLURM_USER))
    assert answered(net.ask())
    assert refused(net.ask(user=UNPRIVILEGED))
    assert refused(net.ask(ns=net.container))
    worker = next(p.name for p in example_plan(example).pools)
    net.load_rules(shipped_rules(example, worker, tmp_path))
    assert refused(net.ask(user=SLURM_USER))
    assert answered(net.ask())


def test_prometheus_reaches_it_on_the_head_node_only(
    metadata_network: MetadataNetwork, tmp_path: Path
) -> None:
    """The head's Prometheus signs its remote writes to the managed Prometheus workspace with
    the head's role: `prometheus` is answered on the head; on a worker (where node_exporter
    runs as it) it is refused like any job user."""
    net = metadata_network
    example = "g6e-inference-spot"
    net.clear_rules()
    net.load_rules(shipped_rules(example, HEAD_ROLE, tmp_path))
    assert answered(net.ask(user=MONITOR_USER))
    assert refused(net.ask(user=UNPRIVILEGED))
    worker = next(p.name for p in example_plan(example).pools)
    net.load_rules(shipped_rules(example, worker, tmp_path))
    assert refused(net.ask(user=MONITOR_USER))
    assert answered(net.ask())


def test_loading_again_replaces_only_its_own_table(
    metadata_network: MetadataNetwork, tmp_path: Path
) -> None:
    """The unit runs at every boot and may run again by hand: loading twice leaves one copy of
    the rules, and another rule set (docker's, say) that accepts everything stays and does not
    let the container through."""
    net = metadata_network
    net.clear_rules()
    net.nft("add", "table", "ip", "dockerlike")
    try:
        net.nft(
            "add chain ip dockerlike FORWARD { type filter hook forward priority 0; policy accept; }"
        )
        net.nft("add", "rule", "ip", "dockerlike", "FORWARD", "accept")
        head = shipped_rules("p5-training", HEAD_ROLE, tmp_path)
        net.load_rules(head)
        net.load_rules(head)
        tables = net.nft("list", "tables").stdout.split("\n")
        assert tables.count(f"table inet {TABLE}") == 1
        assert "table ip dockerlike" in tables
        listed = net.nft("list", "table", "inet", TABLE).stdout
        assert listed.count("meta skuid 0 accept") == 1
        assert refused(net.ask(ns=net.container))
        assert refused(net.ask(user=UNPRIVILEGED))
        assert answered(net.ask())
    finally:
        net.nft("delete", "table", "ip", "dockerlike", check=False)


@pytest.mark.parametrize("example", EXAMPLE_IDS)
def test_every_shipped_rule_set_loads(example: str, tmp_path: Path) -> None:
    """nft accepts every role's rule set (checked against the kernel in a throw-away network
    namespace, nothing committed)."""
    require_tools()
    for role in roles(example_plan(example)):
        path = shipped_rules(example, role, tmp_path)
        done = subprocess.run(
            ["unshare", "--net", "nft", "--check", "-f", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, (role, done.stderr)
