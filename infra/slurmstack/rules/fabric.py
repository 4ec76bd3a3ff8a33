"""The NCCL/libfabric environment of a pool, chosen per instance family from the catalog.

EFA with GPUDirect RDMA (p4d, p5, p6), EFA without RDMA (g-families), Trainium over EFA,
MPI over EFA on CPU types, or nothing fabric-specific where there is no EFA; the
definition's ``nccl.env`` overrides come last. Every variable carries the reason it is set,
which the templates write next to it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from slurmstack.catalog import InstanceFacts


class EnvTarget(enum.StrEnum):
    """Where a variable of the pool's NCCL/libfabric environment is written."""

    NCCL_CONF = "nccl.conf"  # /etc/nccl.conf: NCCL reads it at init, whatever launched the process
    PROCESS = "process"  # profile script and Slurm TaskProlog: the process environment


@dataclass(frozen=True)
class EnvVar:
    """One variable of a pool's NCCL/libfabric environment, with why it is set."""

    name: str
    value: str
    reason: str
    target: EnvTarget
    prepend: bool = False  # a search path put in front of the inherited value


class FabricProfile(enum.StrEnum):
    """What the pool's network and accelerators ask of NCCL/libfabric."""

    EFA_GPUDIRECT = "efa-gpudirect"  # EFA with GPUDirect RDMA: p4d, p4de, p5, p5e, p5en, p6
    EFA_GPU = "efa-gpu"  # EFA without RDMA reads: g5, g6, g6e
    EFA_NEURON = "efa-neuron"  # Trainium over EFA: trn1, trn1n, trn2
    EFA_CPU = "efa-cpu"  # MPI over EFA: hpc7a, c7i.48xlarge, ...
    NONE = "none"  # no EFA: nothing fabric-specific is set


# Where the AWS Deep Learning AMIs (Ubuntu) install the EFA software and the aws-ofi-nccl
# plugin. The plugin's directory is lib/<multiarch triplet> on Ubuntu and lib elsewhere;
# both go on the search path so the same file works on either layout.
EFA_LIB_DIR = "/opt/amazon/efa/lib"
OFI_NCCL_LIB_DIRS = ("/opt/amazon/ofi-nccl/lib/{triplet}", "/opt/amazon/ofi-nccl/lib")
# The aws-ofi-nccl tuner has measured regions only for these platforms (doc/tuner.md:
# "It supports P5/P5e, P5en, P6, and P6-B300"); elsewhere it defers to NCCL's own tuner.
OFI_TUNER_FAMILIES = frozenset({"p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200"})
OFI_TUNER_LIBRARY = "libnccl-ofi-tuner.so"

SOURCE_OFI_CHEATSHEET = "aws-ofi-nccl doc/efa-env-var.md (EFA cheatsheet)"
SOURCE_FI_EFA = "libfabric fi_efa(7), FI_EFA_USE_DEVICE_RDMA"
SOURCE_OFI_NAME = "aws-ofi-nccl src/nccl_ofi_interface_nvidia.cpp, nvidia_plugin_name_fixup"
SOURCE_NCCL_TUNER = "NCCL src/plugin/tuner.cc: NCCL_TUNER_PLUGIN is dlopen()ed as given first"
SOURCE_NEURON_EFA = (
    "AWS Neuron docs, 'How to prepare trn1.32xlarge for multi-node execution' "
    "(setup-trn1-multi-node-execution)"
)


def _setting_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def fabric_profile(facts: InstanceFacts, efa: bool) -> FabricProfile:
    if not efa:
        return FabricProfile.NONE
    acc = facts.accelerator
    if acc is None:
        return FabricProfile.EFA_CPU
    if acc.kind == "neuron":
        return FabricProfile.EFA_NEURON
    return FabricProfile.EFA_GPUDIRECT if facts.gpudirect_rdma else FabricProfile.EFA_GPU


def _library_path(profile: FabricProfile, facts: InstanceFacts) -> EnvVar | None:
    triplet = "aarch64-linux-gnu" if facts.architecture.value == "arm64" else "x86_64-linux-gnu"
    if profile in (FabricProfile.EFA_GPUDIRECT, FabricProfile.EFA_GPU):
        dirs = [d.format(triplet=triplet) for d in OFI_NCCL_LIB_DIRS] + [EFA_LIB_DIR]
        reason = (
            "aws-ofi-nccl (libnccl-net.so, libnccl-ofi-tuner.so) and libfabric as the Deep "
            "Learning AMI installs them; NCCL finds its net plugin on the library path"
        )
    elif profile is FabricProfile.EFA_NEURON:
        dirs = [EFA_LIB_DIR]
        reason = "libfabric of the EFA installer, which the Neuron runtime loads"
    else:
        return None
    return EnvVar("LD_LIBRARY_PATH", ":".join(dirs), reason, EnvTarget.PROCESS, prepend=True)


def fabric_env(family: str, facts: InstanceFacts, efa: bool) -> tuple[EnvVar, ...]:
    """The NCCL/libfabric environment a pool's nodes get, each value with its reason.

    Deliberately absent (see the EFA cheatsheet in aws-ofi-nccl, doc/efa-env-var.md):
    NCCL_PROTO=simple (only for aws-ofi-nccl <= 1.5.0), RDMAV_FORK_SAFE ("Do not use"),
    NCCL_MIN_NCHANNELS and NCCL_BUFFSIZE ("leave it out to use the default"), and on GPU
    pools FI_EFA_FORK_SAFE (the plugin sets it itself).
    """
    profile = fabric_profile(facts, efa)
    out: list[EnvVar] = []
    proc, conf = EnvTarget.PROCESS, EnvTarget.NCCL_CONF
    if profile is FabricProfile.NONE:
        return ()
    out.append(
        EnvVar(
            "FI_PROVIDER",
            "efa",
            "use only libfabric's EFA provider, so a broken EFA device fails the job instead "
            "of falling back to TCP (required by aws-ofi-nccl up to 1.5.0, harmless after; "
            f"{SOURCE_OFI_CHEATSHEET})",
            proc,
        )
    )
    if profile in (FabricProfile.EFA_GPUDIRECT, FabricProfile.EFA_NEURON):
        out.append(
            EnvVar(
                "FI_EFA_USE_DEVICE_RDMA",
                "1",
                "GPUDirect RDMA over EFA. libfabric 1.18 and later turn it on by default where "
                "the device supports RDMA (the cheatsheet: not needed with libfabric 1.18+ and "
                "aws-ofi-nccl 1.7+, not harmful on p4/p5); set so a device without RDMA aborts "
                f"the job rather than emulating RMA ({SOURCE_FI_EFA}), and for older stacks "
                "where p4d needed it",
                proc,
            )
        )
    if profile is FabricProfile.EFA_NEURON:
        out.append(
            EnvVar(
                "FI_EFA_FORK_SAFE",
                "1",
                "the Neuron runtime drives libfabric itself and forks workers; the Neuron "
                f"multi-node setup exports it ({SOURCE_NEURON_EFA})",
                proc,
            )
        )
    path = _library_path(profile, facts)
    if path is not None:
        out.append(path)
    if profile in (FabricProfile.EFA_GPUDIRECT, FabricProfile.EFA_GPU):
        out.append(
            EnvVar(
                "NCCL_NET",
                "AWS Libfabric",
                "fail instead of silently using NCCL's socket transport when the aws-ofi-nccl "
                "plugin does not load; every plugin version answers to this name "
                f"({SOURCE_OFI_NAME})",
                conf,
            )
        )
    if family in OFI_TUNER_FAMILIES:
        out.append(
            EnvVar(
                "NCCL_TUNER_PLUGIN",
                OFI_TUNER_LIBRARY,
                "the aws-ofi-nccl tuner picks algorithm and protocol per message size from "
                "measurements on this platform (aws-ofi-nccl doc/tuner.md); found through the "
                f"library path ({SOURCE_NCCL_TUNER})",
                conf,
            )
        )
    return tuple(out)


def with_overrides(
    env: tuple[EnvVar, ...], overrides: dict[str, str | int | float | bool]
) -> tuple[EnvVar, ...]:
    """The definition's nccl.env replaces a variable of the same name and comes last."""
    for name, value in overrides.items():
        if "\n" in str(value) or "=" in name:
            raise ValueError(f"nccl.env.{name}: not a valid environment variable")
    kept = [v for v in env if v.name not in overrides]
    for name in sorted(overrides):
        target = EnvTarget.NCCL_CONF if name.startswith("NCCL_") else EnvTarget.PROCESS
        kept.append(
            EnvVar(name, _setting_text(overrides[name]), "set by the definition (nccl.env)", target)
        )
    return tuple(kept)
