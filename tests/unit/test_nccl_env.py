"""The NCCL/libfabric environment per instance family, against what the AWS documentation
says. Sources:
- aws-ofi-nccl, doc/efa-env-var.md ("EFA Cheatsheet"): FI_EFA_USE_DEVICE_RDMA "Do not set
  for libfabric>=1.18.0 and aws-ofi-nccl>=1.7.0. It's not harmful to set it on p4/p5";
  FI_PROVIDER=efa and NCCL_PROTO=simple "Use for aws-ofi-nccl<=1.5.0"; FI_EFA_FORK_SAFE "Not
  needed anymore ... the plugin ... always set[s] this flag"; RDMAV_FORK_SAFE "Do not use";
  NCCL_MIN_CHANNELS / NCCL_BUFFSIZE "leave it out to use the default".
- libfabric fi_efa(7): FI_EFA_USE_DEVICE_RDMA=1 on a device without RDMA aborts the
  application; unset, RDMA is used where the device has it.
- aws-ofi-nccl doc/tuner.md: the tuner has regions for P5/P5e, P5en, P6 only.
- aws-ofi-nccl src/nccl_ofi_interface_nvidia.cpp: NCCL_NET="AWS Libfabric" accepted by
  every plugin version (name fixup since 1.12).
- NCCL src/plugin/tuner.cc: NCCL_TUNER_PLUGIN is dlopen()ed as given first.
- AWS Neuron docs, setup-trn1-multi-node-execution: FI_PROVIDER=efa,
  FI_EFA_USE_DEVICE_RDMA=1, FI_EFA_FORK_SAFE=1 for multi-node Trainium.
"""

from __future__ import annotations

import pytest

from slurmstack.catalog import load_catalog
from slurmstack.rules.fabric import (
    EnvTarget,
    FabricProfile,
    fabric_env,
    fabric_profile,
    with_overrides,
)

NEVER = {
    "NCCL_PROTO",
    "RDAMV_FORK_SAFE",
    "RDMAV_FORK_SAFE",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MIN_CHANNELS",
    "NCCL_BUFFSIZE",
    "NCCL_SOCKET_NTHREADS",
    "NCCL_NSOCKS_PERTHREAD",
}


def env_of(instance_type: str, efa: bool = True) -> dict[str, str]:
    facts = load_catalog().instance(instance_type)
    assert facts is not None
    family = instance_type.split(".")[0]
    return {v.name: v.value for v in fabric_env(family, facts, efa)}


@pytest.mark.parametrize(
    "itype",
    [
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
    ],
)
def test_gpudirect_families(itype: str) -> None:
    env = env_of(itype)
    assert env["FI_PROVIDER"] == "efa"
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert env["NCCL_NET"] == "AWS Libfabric"
    path = env["LD_LIBRARY_PATH"].split(":")
    assert path == [
        "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
        "/opt/amazon/ofi-nccl/lib",
        "/opt/amazon/efa/lib",
    ]
    assert "FI_EFA_FORK_SAFE" not in env  # the plugin sets it itself
    assert not NEVER & set(env)


def test_tuner_only_where_it_has_regions() -> None:
    for itype in ("p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"):
        assert env_of(itype)["NCCL_TUNER_PLUGIN"] == "libnccl-ofi-tuner.so"
    for itype in ("p4d.24xlarge", "g6e.12xlarge", "trn2.48xlarge"):
        assert "NCCL_TUNER_PLUGIN" not in env_of(itype)


@pytest.mark.parametrize("itype", ["g5.12xlarge", "g6.12xlarge", "g6e.12xlarge", "g6e.48xlarge"])
def test_g_families_use_efa_without_rdma(itype: str) -> None:
    env = env_of(itype)
    assert env["FI_PROVIDER"] == "efa"
    assert env["NCCL_NET"] == "AWS Libfabric"
    # fi_efa(7): =1 on a device without RDMA read aborts the job.
    assert "FI_EFA_USE_DEVICE_RDMA" not in env
    assert not NEVER & set(env)


@pytest.mark.parametrize("itype", ["g6.12xlarge", "g6e.xlarge", "g5.xlarge", "c7i.16xlarge"])
def test_nothing_efa_without_efa(itype: str) -> None:
    facts = load_catalog().instance(itype)
    assert facts is not None
    # g6e.xlarge has no EFA at all; g6.12xlarge below is the example's efa: false.
    assert env_of(itype, efa=False) == {}


@pytest.mark.parametrize("itype", ["trn1.32xlarge", "trn2.48xlarge"])
def test_trainium(itype: str) -> None:
    env = env_of(itype)
    assert env["FI_PROVIDER"] == "efa"
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert env["FI_EFA_FORK_SAFE"] == "1"
    assert env["LD_LIBRARY_PATH"] == "/opt/amazon/efa/lib"
    assert not {k for k in env if k.startswith("NCCL_")}


def test_cpu_efa_pool_uses_the_efa_provider_only() -> None:
    assert env_of("hpc7a.96xlarge") == {"FI_PROVIDER": "efa"}


def test_every_value_has_a_reason_and_a_target() -> None:
    facts = load_catalog().instance("p5.48xlarge")
    assert facts is not None
    for var in fabric_env("p5", facts, True):
        assert len(var.reason) > 20
        assert var.target is (
            EnvTarget.NCCL_CONF if var.name.startswith("NCCL_") else EnvTarget.PROCESS
        )


def test_overrides_replace_and_come_last() -> None:
    facts = load_catalog().instance("p5.48xlarge")
    assert facts is not None
    env = with_overrides(fabric_env("p5", facts, True), {"NCCL_DEBUG": "INFO", "FI_PROVIDER": "x"})
    assert [v.name for v in env][-2:] == ["FI_PROVIDER", "NCCL_DEBUG"]
    assert [v.value for v in env if v.name == "FI_PROVIDER"] == ["x"]
    assert env[-1].target is EnvTarget.NCCL_CONF


def test_profiles() -> None:
    cat = load_catalog()
    assert fabric_profile(cat.instance("p5.48xlarge"), True) is FabricProfile.EFA_GPUDIRECT  # type: ignore[arg-type]
    assert fabric_profile(cat.instance("g6e.12xlarge"), True) is FabricProfile.EFA_GPU  # type: ignore[arg-type]
    assert fabric_profile(cat.instance("p5.48xlarge"), False) is FabricProfile.NONE  # type: ignore[arg-type]
