"""NCCL and libfabric environment overrides.

Guidance from aws-ofi-nccl's "EFA Cheatsheet" (aws/aws-ofi-nccl, doc/efa-env-var.md), which
the AWS EFA and Deep Learning AMI documentation point to: with current libfabric (>= 1.18)
and aws-ofi-nccl (>= 1.7; the Deep Learning AMI ships 1.17+), FI_PROVIDER, NCCL_PROTO,
FI_EFA_USE_DEVICE_RDMA and FI_EFA_FORK_SAFE need not be set, RDMAV_* must not be set, and
the NCCL socket and InfiniBand knobs do not apply to EFA.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmstack.catalog import Catalog
from slurmstack.checks import rule
from slurmstack.checks.common import PoolFacts, error, pools_with_facts, warning
from slurmstack.findings import Finding
from slurmstack.spec import ClusterSpec, SettingValue

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# The environment slurmstack renders is NCCL's and libfabric's, plus the knobs of the layers
# around them: the aws-ofi-nccl plugin, rdma-core, PyTorch's NCCL process group, CUDA's
# connection count and the Neuron runtime's collectives (which use libfabric on Trainium).
ALLOWED_PREFIXES = ("NCCL_", "FI_", "OFI_NCCL_", "RDMAV_", "TORCH_NCCL_", "CUDA_", "NEURON_")

# "Not applicable for EFA" (EFA Cheatsheet): NCCL's own socket transport is not used when
# the aws-ofi-nccl plugin carries the traffic.
SOCKET_ONLY = ("NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD")

# Settings that take traffic off NVLink / shared memory, or that the EFA Cheatsheet says to
# leave at their defaults (more channels than needed starve EFA of data).
DISCOURAGED = {
    "NCCL_P2P_DISABLE": "turns off NVLink/PCIe peer-to-peer between the GPUs of a node",
    "NCCL_SHM_DISABLE": "turns off shared-memory transport inside a node",
    "NCCL_MIN_CHANNELS": "more channels than needed split messages until EFA starves",
    "NCCL_BUFFSIZE": "aws-ofi-nccl recommends the default buffer size",
}


def _text(value: SettingValue) -> str:
    return str(value).strip()


def _truthy(value: SettingValue) -> bool:
    return _text(value).lower() in ("1", "true", "yes", "on")


def _efa_pools(spec: ClusterSpec, catalog: Catalog) -> list[PoolFacts]:
    return [pf for pf in pools_with_facts(spec, catalog) if pf.efa and pf.pool.max_nodes > 0]


def _env(spec: ClusterSpec) -> Iterator[tuple[str, str, SettingValue]]:
    for name, value in spec.nccl.env.items():
        yield f"nccl.env.{name}", name, value


# why: a name outside these prefixes is not an NCCL/libfabric setting, or is misspelt.
@rule
def nccl_env_name(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, _value in _env(spec):
        if not ENV_NAME.match(name) or not name.startswith(ALLOWED_PREFIXES):
            yield error(
                path,
                f"{name!r} is not an NCCL/libfabric variable; names are upper case and start "
                f"with {', '.join(ALLOWED_PREFIXES)}",
            )


# why: a line break in a value would add lines to the rendered environment file.
@rule
def nccl_env_value(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, value in _env(spec):
        if isinstance(value, str) and any(c in value for c in "\n\r\x00"):
            yield error(path, f"the value of {name} contains a line break; use one line")


# why: "RDMAV_FORK_SAFE=1: Do not use ... on newer kernels it can break things"; RDMAV_*: "Do
# not use" (EFA Cheatsheet).
@rule
def nccl_rdmav(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, _value in _env(spec):
        if name == "RDMAV_FORK_SAFE":
            yield error(
                path,
                "RDMAV_FORK_SAFE is harmful with EFA on current kernels (aws-ofi-nccl: 'do not "
                "use'); remove it (the plugin already sets FI_EFA_FORK_SAFE where needed)",
            )
        elif name.startswith("RDMAV_"):
            yield warning(
                path,
                f"{name} is an rdma-core variable that aws-ofi-nccl advises against; remove it",
            )


# why: the plugin sets it itself for every supported libfabric; setting it hides that.
@rule
def nccl_fork_safe(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, _value in _env(spec):
        if name == "FI_EFA_FORK_SAFE":
            yield warning(
                path,
                "FI_EFA_FORK_SAFE is not needed: aws-ofi-nccl sets it for every supported "
                "libfabric; remove it",
            )


# why: NCCL_PROTO=simple was a workaround for aws-ofi-nccl <= 1.5; it disables the LL and
# LL128 protocols and slows small messages.
@rule
def nccl_proto_simple(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, value in _env(spec):
        if name == "NCCL_PROTO" and _text(value).lower() == "simple":
            yield warning(
                path,
                "NCCL_PROTO=simple was only needed with aws-ofi-nccl <= 1.5.0 and disables the "
                "faster LL/LL128 protocols; remove it",
            )


# why: any provider but efa on EFA pools sends NCCL traffic over TCP; efa without EFA pools
# finds no device and NCCL falls back to sockets.
@rule
def nccl_fi_provider(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    value = spec.nccl.env.get("FI_PROVIDER")
    if value is None:
        return
    provider = _text(value).lower()
    efa = [pf.pool.name for pf in _efa_pools(spec, catalog)]
    if efa and provider != "efa":
        yield error(
            "nccl.env.FI_PROVIDER",
            f"FI_PROVIDER={value} keeps libfabric off EFA on pools {', '.join(efa)}; remove "
            f"it (aws-ofi-nccl picks efa itself). {FORCE_TCP_HINT}",
        )
    elif not efa and provider == "efa":
        yield warning(
            "nccl.env.FI_PROVIDER",
            "FI_PROVIDER=efa but no pool has EFA; libfabric finds no EFA device; remove it",
        )


# NCCL's own name for its TCP transport (NCCL_NET=Socket); matched without regard to case.
NCCL_SOCKET_NET = "socket"
FORCE_TCP_HINT = (
    "To try TCP for one job while debugging, set NCCL_NET=Socket in that job's environment "
    "(docs/deploying.md: forcing TCP)"
)


# why: NCCL_NET=Socket puts every collective on NCCL's TCP sockets instead of the
# aws-ofi-nccl plugin, so EFA pools run at a small fraction of their bandwidth, cluster-wide.
@rule
def nccl_net_socket(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    value = spec.nccl.env.get("NCCL_NET")
    if value is None or _text(value).lower() != NCCL_SOCKET_NET:
        return
    gpu_efa = [
        pf.pool.name
        for pf in _efa_pools(spec, catalog)
        if pf.facts.accelerator is not None and pf.facts.accelerator.kind == "gpu"
    ]
    if gpu_efa:
        yield error(
            "nccl.env.NCCL_NET",
            f"NCCL_NET={value} keeps NCCL off EFA on pools {', '.join(gpu_efa)} (its TCP "
            f"sockets instead of aws-ofi-nccl); remove it. {FORCE_TCP_HINT}",
        )


# why: libfabric fails to open EFA with device RDMA forced on a type without GPUDirect RDMA.
@rule
def nccl_device_rdma(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    value = spec.nccl.env.get("FI_EFA_USE_DEVICE_RDMA")
    if value is None or not _truthy(value):
        return
    lacking = [
        f"{pf.pool.name} ({pf.pool.instance_type})"
        for pf in _efa_pools(spec, catalog)
        if not pf.facts.gpudirect_rdma
    ]
    if lacking:
        yield error(
            "nccl.env.FI_EFA_USE_DEVICE_RDMA",
            f"FI_EFA_USE_DEVICE_RDMA={value} but pools {', '.join(lacking)} have no GPUDirect "
            "RDMA, so libfabric fails there; remove it (current libfabric enables RDMA itself "
            "where the device has it)",
        )


# why: settings that cannot take effect mislead whoever tunes the cluster next.
@rule
def nccl_not_applicable(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    efa = bool(_efa_pools(spec, catalog))
    for path, name, _value in _env(spec):
        if name.startswith("NCCL_IB_"):
            yield warning(
                path,
                f"{name} tunes NCCL's InfiniBand transport; EC2 has no InfiniBand (EFA goes "
                "through aws-ofi-nccl), so it has no effect; remove it",
            )
        elif efa and name in SOCKET_ONLY:
            yield warning(
                path,
                f"{name} tunes NCCL's socket transport, which EFA pools do not use; remove it",
            )


# why: interface names differ between instance types (ens5 on m7i, enp*s0 on multi-card
# p5), so a fixed name breaks NCCL's bootstrap on some pool; an exclusion list does not.
@rule
def nccl_socket_ifname(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    value = spec.nccl.env.get("NCCL_SOCKET_IFNAME")
    if value is not None and not _text(value).startswith("^"):
        yield warning(
            "nccl.env.NCCL_SOCKET_IFNAME",
            f"NCCL_SOCKET_IFNAME={value} names interfaces, whose names differ between instance "
            "types; use an exclusion such as ^lo,docker or remove it",
        )


# why: see DISCOURAGED; each of these costs bandwidth on every collective.
@rule
def nccl_tuning_override(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    for path, name, value in _env(spec):
        reason = DISCOURAGED.get(name)
        if reason is None:
            continue
        if name.endswith("_DISABLE") and not _truthy(value):
            continue
        yield warning(path, f"{name}={value}: {reason}; remove it unless you measured a gain")


# why: NCCL variables on a cluster without NVIDIA GPUs are set for nothing (Neuron uses its own).
@rule
def nccl_env_no_gpu(spec: ClusterSpec, catalog: Catalog) -> Iterator[Finding]:
    names = [name for _, name, _ in _env(spec) if name.startswith(("NCCL_", "OFI_NCCL_"))]
    if not names:
        return
    gpus = any(
        pf.facts.accelerator is not None and pf.facts.accelerator.kind == "gpu"
        for pf in pools_with_facts(spec, catalog)
    )
    if not gpus:
        yield warning(
            f"nccl.env.{names[0]}",
            f"{', '.join(names)} set, but no pool has NVIDIA GPUs, so NCCL never reads them",
        )
