"""Diagrams of a planned cluster: Mermaid (renders on GitHub) and Graphviz DOT.

Both come from one list of nodes, groups and edges, so they always show the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmstack.contract import SLURMCTLD_PORT, SLURMD_PORT, SLURMDBD_PORT
from slurmstack.plan import ClusterPlan, PoolPlan
from slurmstack.spec import CapacityType


@dataclass(frozen=True)
class Node:
    id: str
    lines: tuple[str, ...]
    store: bool = False  # drawn as a cylinder


@dataclass
class Group:
    id: str
    label: str
    nodes: list[Node] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str
    both_ways: bool = False


_CAPACITY_LABEL = {
    CapacityType.ON_DEMAND: "on-demand",
    CapacityType.SPOT: "spot",
    CapacityType.CAPACITY_BLOCK: "capacity block",
    CapacityType.CAPACITY_RESERVATION: "capacity reservation",
}


def _nodes(pool: PoolPlan, per_node: int = 1) -> str:
    """'4' for a fixed pool; '0-8' for an elastic one (always running to at most)."""
    low, high = pool.count * per_node, pool.max_count * per_node
    return f"{low}-{high}" if pool.elastic else str(low)


def _pool_node(pool: PoolPlan) -> Node:
    acc = pool.facts.accelerator
    lines = [f"pool {pool.name}", f"{_nodes(pool)} × {pool.instance_type}"]
    if acc is not None:
        lines.append(f"{_nodes(pool, acc.count)} × {acc.model}")
    fabric = f"EFA × {len(pool.interfaces)}" if pool.efa else "no EFA"
    placement = " · placement group" if pool.placement_group else ""
    lines.append(f"{fabric}{placement} · {_CAPACITY_LABEL[pool.capacity.type]}")
    if pool.local_scratch:
        lines.append(f"NVMe RAID0 {pool.local_scratch}")
    if pool.elastic:
        lines.append(
            f"elastic: started for pending jobs, stopped after {pool.scale_down_idle_minutes} min idle"
        )
    return Node(f"pool_{pool.name.replace('-', '_')}", tuple(lines))


def diagram_model(plan: ClusterPlan) -> tuple[list[Group], list[Node], list[Edge]]:
    """Groups (nested), free-standing nodes and edges of the cluster picture."""
    spec = plan.spec
    net = spec.network
    vpc_label = f"VPC {plan.vpc_cidr}" if plan.vpc_cidr else f"VPC {net.vpc_id}"
    vpc = Group("vpc", f"{vpc_label} · {plan.region}")
    compute_label = f"compute subnet {plan.compute_subnet_cidr or net.compute_subnet_id}"
    compute = Group("compute", f"{compute_label} · {plan.availability_zone}")
    public_head = plan.head_in_public_subnet
    head_lines = ["head node", plan.head.instance_type, "slurmctld · state volume"]
    if public_head:
        head_lines.append("public IP · SSH from " + ", ".join(str(c) for c in net.ssh_cidrs))
    head = Node("head", tuple(head_lines))
    public: Group | None = None
    if net.vpc_id is None or public_head:
        public = Group("public", f"public subnet {plan.public_subnet_cidr or net.public_subnet_id}")
    if public_head and public is not None:
        public.nodes.append(head)
    else:
        compute.nodes.append(head)
    pools = [_pool_node(p) for p in plan.pools]
    compute.nodes.extend(pools)
    edges: list[Edge] = [
        Edge("head", p.id, f"slurm {SLURMCTLD_PORT}/{SLURMD_PORT}", both_ways=True) for p in pools
    ]
    logins = [
        Node(
            f"login_{p.name.replace('-', '_')}",
            (
                f"login pool {p.name}",
                f"{p.count} × {p.instance_type}",
                f"sackd · sshd · {plan.users} users",
                "SSH via Session Manager"
                + (" · from " + ", ".join(p.ssh_cidrs) if p.ssh_cidrs else ""),
            ),
        )
        for p in plan.login_pools
    ]
    compute.nodes.extend(logins)
    for login in logins:
        edges.append(
            Edge(login.id, "head", f"slurmctld {SLURMCTLD_PORT} · slurmdbd {SLURMDBD_PORT}")
        )
        edges.extend(Edge(login.id, p.id, "srun") for p in pools)
    stores: list[Node] = []
    if plan.lustre is not None:
        lus = plan.lustre
        throughput = (
            f" · {lus.per_unit_storage_throughput} MB/s/TiB"
            if lus.per_unit_storage_throughput
            else ""
        )
        efa = " · EFA" if lus.efa else ""
        stores.append(
            Node(
                "lustre",
                (
                    f"FSx for Lustre {lus.spec.mount}",
                    f"{lus.spec.capacity_gib} GiB {lus.spec.deployment.value}{throughput}{efa}",
                ),
                store=True,
            )
        )
    if spec.storage.home is not None:
        stores.append(Node("efs", (f"EFS {spec.storage.home.mount}",), store=True))
    compute.nodes.extend(stores)
    for store in stores:
        edges.append(Edge("head", store.id, "mount"))
        edges.extend(Edge(p.id, store.id, "mount") for p in [*pools, *logins])
    vpc.groups.append(compute)
    if net.vpc_id is None and public is not None:
        public.nodes.append(Node("nat", ("NAT gateway",)))
    if public is not None:
        vpc.groups.append(public)
    if net.vpc_id is None:
        # Only a VPC slurmstack creates gets its S3 gateway endpoint.
        vpc.nodes.append(Node("s3_endpoint", ("S3 gateway endpoint",)))
    bucket_lines = ["S3 bucket", "datasets · checkpoints"]
    if spec.storage.bucket.versioning:
        bucket_lines.append("versioned")
    outside = [
        Node("bucket", tuple(bucket_lines), store=True),
        Node("users", ("users", "SSM Session Manager" + (" · SSH" if net.ssh_cidrs else ""))),
    ]
    if net.vpc_id is None and not public_head:
        # A head node in the public subnet reaches the internet through its gateway directly.
        edges.append(Edge("head", "nat", "egress"))
    if net.vpc_id is None:
        edges.append(Edge("s3_endpoint", "bucket", "S3 traffic off the NAT"))
        edges.append(Edge("head", "s3_endpoint", "config store"))
    else:
        edges.append(Edge("head", "bucket", "config store"))
    if plan.lustre is not None and plan.lustre.spec.s3_import_export:
        edges.append(
            Edge(
                "lustre",
                "bucket",
                f"repository association {plan.lustre.spec.s3_import_export}",
                True,
            )
        )
    edges.append(Edge("users", "head", "SSH 22 · shell" if public_head else "shell"))
    return [vpc], outside, edges


def _mermaid_label(node: Node) -> str:
    text = "<br/>".join(line.replace('"', "'") for line in node.lines)
    return f'{node.id}[("{text}")]' if node.store else f'{node.id}["{text}"]'


def mermaid(plan: ClusterPlan) -> str:
    groups, outside, edges = diagram_model(plan)
    out = ["flowchart LR"]

    def emit(group: Group, depth: int) -> None:
        pad = "  " * depth
        out.append(f'{pad}subgraph {group.id}["{group.label}"]')
        for node in group.nodes:
            out.append(f"{pad}  {_mermaid_label(node)}")
        for sub in group.groups:
            emit(sub, depth + 1)
        out.append(f"{pad}end")

    for group in groups:
        emit(group, 1)
    for node in outside:
        out.append(f"  {_mermaid_label(node)}")
    for edge in edges:
        arrow = "<-->" if edge.both_ways else "-->"
        out.append(f'  {edge.source} {arrow}|"{edge.label}"| {edge.target}')
    return "\n".join(out) + "\n"


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot(plan: ClusterPlan) -> str:
    groups, outside, edges = diagram_model(plan)
    out = [
        f"digraph {_dot_quote(plan.name)} {{",
        "  rankdir=LR;",
        "  node [shape=box, fontname=Helvetica];",
    ]

    def node_line(node: Node, pad: str) -> str:
        shape = "cylinder" if node.store else "box"
        return f"{pad}{node.id} [label={_dot_quote(chr(10).join(node.lines))}, shape={shape}];"

    def emit(group: Group, depth: int) -> None:
        pad = "  " * depth
        out.append(f"{pad}subgraph cluster_{group.id} {{")
        out.append(f"{pad}  label={_dot_quote(group.label)};")
        for node in group.nodes:
            out.append(node_line(node, pad + "  "))
        for sub in group.groups:
            emit(sub, depth + 1)
        out.append(f"{pad}}}")

    for group in groups:
        emit(group, 1)
    for node in outside:
        out.append(node_line(node, "  "))
    for edge in edges:
        extra = ", dir=both" if edge.both_ways else ""
        out.append(f"  {edge.source} -> {edge.target} [label={_dot_quote(edge.label)}{extra}];")
    out.append("}")
    return "\n".join(out) + "\n"
