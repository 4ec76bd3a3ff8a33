"""node-check: what a job sees on one node, against what its pool should have.

Run inside a job step (the check job runs it once per node; acceptance too): the GPUs
``nvidia-smi`` lists, their topology (``nvidia-smi topo -m``, shown), the EFA devices libfabric
finds (``fi_info -p efa``), the pool's mounts, and the NCCL/libfabric variables the task got
from the TaskProlog. Expectations come from acceptance.json, rendered from the plan. Prints
each check with what it saw, or one JSON object (``--json``) for acceptance to collect.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ...contract import (
    ACCEPTANCE_PATH,
    Acceptance,
    PoolAcceptance,
    load_document,
)
from .. import system
from ..context import AgentError, Context

# Where the EFA installer puts libfabric's tools on the Deep Learning AMIs (not on PATH).
EFA_BIN = "/opt/amazon/efa/bin"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# An EFA domain is the device's name and the endpoint type it serves (libfabric's
# efa_domain_name_suffix): rdmap79s0-rdm, efa_0-dgrm.
DOMAIN_SUFFIX = re.compile(r"-(rdm|dgrm)$")
# Shown with the check (not judged): what else steers NCCL and libfabric.
SHOWN_PREFIXES = ("NCCL_", "FI_", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    output: str = ""  # what the command printed, for the human report


def acceptance_of(ctx: Context, pool: str | None) -> PoolAcceptance:
    path = ctx.path(ACCEPTANCE_PATH)
    if not path.exists():
        raise AgentError(f"{ACCEPTANCE_PATH} is missing (installed by sync-config)")
    acceptance = load_document(Acceptance, path.read_text())
    name = pool or ctx.config().role
    try:
        return acceptance.pool(name)
    except KeyError:
        known = [p.pool for p in acceptance.pools]
        raise AgentError(f"no pool {name!r} in {ACCEPTANCE_PATH}: one of {known}") from None


def tool(
    ctx: Context, name: str, env: Mapping[str, str], extra: tuple[str, ...] = ()
) -> str | None:
    """The node path of executable ``name`` on the task's PATH (then ``extra``), if any."""
    for directory in [*env.get("PATH", DEFAULT_PATH).split(":"), *extra]:
        candidate = f"{directory.rstrip('/')}/{name}"
        if directory and os.access(ctx.path(candidate), os.X_OK):
            return candidate
    return None


def gpus(ctx: Context, expected: int, env: Mapping[str, str]) -> Check:
    smi = tool(ctx, "nvidia-smi", env)
    if smi is None:
        return Check("gpus", False, f"no nvidia-smi on PATH; expected {expected} GPUs")
    query = ctx.sh(smi, "--query-gpu=index,name,pci.bus_id", "--format=csv,noheader", check=False)
    listed = [line for line in query.stdout.splitlines() if line.strip()]
    if query.returncode != 0:
        return Check("gpus", False, f"nvidia-smi failed: {query.stderr.strip()}", query.stdout)
    ok = len(listed) == expected
    detail = f"{len(listed)} GPUs, expected {expected}"
    return Check("gpus", ok, detail, query.stdout)


def topology(ctx: Context, env: Mapping[str, str]) -> Check:
    smi = tool(ctx, "nvidia-smi", env)
    if smi is None:
        return Check("topology", False, "no nvidia-smi on PATH")
    topo = ctx.sh(smi, "topo", "-m", check=False)
    if topo.returncode != 0:
        return Check("topology", False, f"nvidia-smi topo -m failed: {topo.stderr.strip()}")
    return Check("topology", True, "nvidia-smi topo -m (shown)", topo.stdout)


def efa_devices(listing: str) -> set[str]:
    """The EFA devices ``fi_info -p efa`` lists. It lists a device once per endpoint it offers,
    and that is more than once on many libfabric versions: the core provider's RDM and DGRAM
    domains (``efa_0-rdm``, ``efa_0-dgrm``), a layered provider over one of them
    (``efa;ofi_rxd``, libfabric 1.x), one RDM entry per fabric (``efa-direct`` and ``efa``,
    libfabric 2.x). The device is the domain's name without its endpoint suffix."""
    devices = set()
    for line in listing.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "domain" and value.strip():
            devices.add(DOMAIN_SUFFIX.sub("", value.strip()))
    return devices


def efa(ctx: Context, expected: int, env: Mapping[str, str]) -> Check:
    fi_info = tool(ctx, "fi_info", env, (EFA_BIN,))
    if fi_info is None:
        return Check("efa", False, f"no fi_info (PATH, {EFA_BIN}); expected {expected} EFA devices")
    found = ctx.sh(fi_info, "-p", "efa", "-t", "FI_EP_RDM", check=False)
    devices = efa_devices(found.stdout)
    if found.returncode != 0 and not devices:
        detail = f"fi_info -p efa found no EFA device ({found.stderr.strip() or 'no output'})"
        return Check("efa", False, f"{detail}; expected {expected}", found.stdout)
    ok = len(devices) == expected
    return Check("efa", ok, f"{len(devices)} EFA devices, expected {expected}", found.stdout)


def mounts(ctx: Context, expected: tuple[str, ...]) -> Check:
    missing = [m for m in expected if not system.mounted(ctx, m)]
    if missing:
        return Check("mounts", False, f"not mounted: {', '.join(missing)}")
    return Check("mounts", True, f"mounted: {', '.join(expected)}")


def environment(env: Mapping[str, str], expected: tuple[tuple[str, str], ...]) -> Check:
    wrong = [
        f"{name}={env.get(name, '<unset>')} (expected {value})"
        for name, value in expected
        if env.get(name) != value
    ]
    shown = "".join(f"{k}={v}\n" for k, v in sorted(env.items()) if k.startswith(SHOWN_PREFIXES))
    if wrong:
        return Check("nccl-env", False, "; ".join(wrong), shown)
    return Check("nccl-env", True, f"{len(expected)} variables as the pool sets them", shown)


def node_check(ctx: Context, pool: PoolAcceptance, env: Mapping[str, str]) -> list[Check]:
    checks: list[Check] = []
    if pool.gpus_per_node:
        checks += [gpus(ctx, pool.gpus_per_node, env), topology(ctx, env)]
    if pool.efa_devices:
        checks.append(efa(ctx, pool.efa_devices, env))
    if pool.mounts:
        checks.append(mounts(ctx, pool.mounts))
    checks.append(environment(env, pool.env))
    return checks


def node_name(env: Mapping[str, str]) -> str:
    return env.get("SLURMD_NODENAME") or socket.gethostname()


def report(node: str, pool: str, checks: list[Check], as_json: bool) -> str:
    ok = all(c.ok for c in checks)
    if as_json:
        document = {
            "node": node,
            "pool": pool,
            "ok": ok,
            "checks": [{k: v for k, v in asdict(c).items() if k != "output"} for c in checks],
        }
        return json.dumps(document, sort_keys=True)
    lines = [f"== {node} (pool {pool}): {'ok' if ok else 'FAILED'}"]
    for check in checks:
        lines.append(f"{'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
        lines += [f"     {line}" for line in check.output.rstrip().splitlines()]
    return "\n".join(lines)
