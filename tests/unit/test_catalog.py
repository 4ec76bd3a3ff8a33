"""The checked-in instance catalog: shape, coverage, and every fact cross-checked against the
EC2 DescribeInstanceTypes data that the ``moto`` package ships.

Where the catalog deliberately differs from that data, ``EXCEPTIONS`` names the type and field
and says why; the test then asserts the difference still exists, so it fails the day moto's data
is corrected and the exception can go.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import moto
import pytest

from slurmstack.catalog import CATALOG_FILE, Catalog, InstanceFacts

MOTO_RESOURCES = Path(moto.__file__).parent / "ec2" / "resources"

G_SIZES = [
    "xlarge",
    "2xlarge",
    "4xlarge",
    "8xlarge",
    "12xlarge",
    "16xlarge",
    "24xlarge",
    "48xlarge",
]
CPU_SIZES = ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "24xlarge"]
# Head node, login and CPU-pool families people use: every size but metal.
CPU_FAMILIES = {
    "m5": [*CPU_SIZES, "12xlarge"],
    "m6i": [*CPU_SIZES, "12xlarge", "32xlarge"],
    "m6a": [*CPU_SIZES, "12xlarge", "32xlarge", "48xlarge"],
    "c5": ["large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge", "24xlarge"],
    "c6a": [*CPU_SIZES, "12xlarge", "32xlarge", "48xlarge"],
    "c7a": ["medium", *CPU_SIZES, "12xlarge", "32xlarge", "48xlarge"],
    "r5": [*CPU_SIZES, "12xlarge"],
    "r6i": [*CPU_SIZES, "12xlarge", "32xlarge"],
    "r6a": [*CPU_SIZES, "12xlarge", "32xlarge", "48xlarge"],
    "r7i": [*CPU_SIZES, "12xlarge", "48xlarge"],
}
SIZES = {
    **CPU_FAMILIES,
    "p4d": ["24xlarge"],
    "p4de": ["24xlarge"],
    "p5": ["4xlarge", "48xlarge"],
    "p5e": ["48xlarge"],
    "p5en": ["48xlarge"],
    "p6-b200": ["48xlarge"],
    "g5": G_SIZES,
    "g6": G_SIZES,
    "g6e": G_SIZES,
    "trn1": ["2xlarge", "32xlarge"],
    "trn1n": ["32xlarge"],
    "trn2": ["3xlarge", "48xlarge"],
    "trn2u": ["48xlarge"],
    "m7i": [*CPU_SIZES, "12xlarge", "48xlarge"],
    "m7a": [*CPU_SIZES, "48xlarge"],
    "c7i": [*CPU_SIZES, "48xlarge"],
    "c6i": [*CPU_SIZES, "32xlarge"],
    "hpc7a": ["12xlarge", "24xlarge", "48xlarge", "96xlarge"],
    "c5n": ["large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "18xlarge"],
}
REQUIRED_TYPES = sorted(f"{family}.{size}" for family, sizes in SIZES.items() for size in sizes)

REQUIRED_REGIONS = [
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "eu-north-1",
    "ap-northeast-1",
    "ap-southeast-2",
]

# The catalog holds every Region that sells these (by moto's offerings data).
TRAINING_TYPES = [
    "p4d.24xlarge",
    "p5.4xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
    "p6-b300.48xlarge",
    "trn1.2xlarge",
    "trn1.32xlarge",
    "trn1n.32xlarge",
    "trn2.3xlarge",
    "trn2.48xlarge",
]

# Instance types AWS lists for EC2 Capacity Blocks for ML ("Capacity Blocks for ML",
# supported instance types, EC2 User Guide; Capacity Blocks pricing page).
CAPACITY_BLOCK_TYPES = {
    "p4d.24xlarge",
    "p5.4xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
    "p6-b300.48xlarge",
    "trn1.32xlarge",
    "trn2.3xlarge",
    "trn2.48xlarge",
    # UltraServers are bought as Capacity Blocks, one block per UltraServer ("How Capacity
    # Blocks work", EC2 User Guide: P6e-GB200 and Trn2 UltraServer types).
    "trn2u.48xlarge",
}

# EFA with GPUDirect RDMA (device RDMA for Trainium): the P-series from p4d and the EFA-capable
# Trainium types. G-families do not (aws-ofi-nccl#547); CPU types have no accelerator.
# trn2u is trn2.48xlarge's host in an UltraServer.
GPUDIRECT_FAMILIES = {
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "p5en",
    "p6-b200",
    "trn1",
    "trn1n",
    "trn2",
    "trn2u",
}

# (instance type, field) -> why the catalog differs from moto's DescribeInstanceTypes data.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("trn2.48xlarge", "accelerator.memory_gib"): (
        "moto reports 524288 MiB (512 GiB) per Trainium2 device; a Trainium2 chip has 96 GiB of "
        "HBM (AWS Neuron 'Trainium2 Architecture'; trn2.48xlarge = 16 x 96 GiB = 1.5 TiB)."
    ),
    ("trn2.3xlarge", "accelerator.memory_gib"): (
        "moto reports 524288 MiB per Trainium2 device here too; the chip has 96 GiB of HBM."
    ),
    # moto's trn2u.48xlarge record has no NeuronInfo: the UltraServer's instance carries the
    # same 16 Trainium2 devices as trn2.48xlarge (AWS Neuron 'Trainium2 Architecture').
    ("trn2u.48xlarge", "accelerator.kind"): "moto's record lists no Neuron devices.",
    ("trn2u.48xlarge", "accelerator.model"): "moto's record lists no Neuron devices.",
    ("trn2u.48xlarge", "accelerator.count"): "moto's record lists no Neuron devices.",
    ("trn2u.48xlarge", "accelerator.memory_gib"): "moto's record lists no Neuron devices.",
    ("p4de.24xlarge", "usage_classes"): (
        "moto lists capacity-block for p4de.24xlarge; the EC2 Capacity Blocks documentation and "
        "pricing page do not offer p4de, so the catalog does not either."
    ),
}


@cache
def catalog() -> Catalog:
    return Catalog.model_validate(json.loads(CATALOG_FILE.read_text()))


@cache
def moto_types() -> dict[str, dict[str, Any]]:
    return json.loads(gzip.decompress((MOTO_RESOURCES / "instance_types.json.gz").read_bytes()))


def _gbps(performance: str) -> float:
    """'Up to 12.5 Gigabit' -> 12.5, '4x 100 Gigabit' -> 400, '3200 Gigabit' -> 3200."""
    match = re.fullmatch(r"(?:Up to )?(?:(\d+)x )?([\d.]+) Gigabit", performance)
    assert match, f"unparsed NetworkPerformance {performance!r}"
    return float(match.group(2)) * int(match.group(1) or 1)


def moto_view(name: str) -> dict[str, Any]:
    """The catalog's fields as moto's DescribeInstanceTypes record states them."""
    t = moto_types()[name]
    network = t["NetworkInfo"]
    view: dict[str, Any] = {
        "vcpus": t["VCpuInfo"]["DefaultVCpus"],
        "cores": t["VCpuInfo"]["DefaultCores"],
        "threads_per_core": t["VCpuInfo"]["DefaultThreadsPerCore"],
        "memory_mib": t["MemoryInfo"]["SizeInMiB"],
        "architecture": tuple(t["ProcessorInfo"]["SupportedArchitectures"]),
        "efa_supported": bool(network.get("EfaSupported")),
        "max_efa_interfaces": network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0),
        "network_cards": network["MaximumNetworkCards"],
        "max_network_interfaces": network["MaximumNetworkInterfaces"],
        "network_gbps": _gbps(network["NetworkPerformance"]),
        "usage_classes": frozenset(t["SupportedUsageClasses"]),
    }
    device, kind = None, None
    if t.get("GpuInfo"):
        device, kind = t["GpuInfo"]["Gpus"][0], "gpu"
    elif t.get("NeuronInfo"):
        device, kind = t["NeuronInfo"]["NeuronDevices"][0], "neuron"
    view["accelerator.kind"] = kind
    view["accelerator.model"] = device["Name"] if device else None
    view["accelerator.count"] = device["Count"] if device else 0
    view["accelerator.memory_gib"] = (
        round(device["MemoryInfo"]["SizeInMiB"] / 1024, 2) if device else None
    )
    disks = (t.get("InstanceStorageInfo") or {}).get("Disks") or []
    assert len(disks) <= 1, f"{name}: more than one disk kind"
    view["nvme.count"] = disks[0]["Count"] if disks else None
    view["nvme.size_gb"] = disks[0]["SizeInGB"] if disks else None
    return view


def catalog_view(facts: InstanceFacts) -> dict[str, Any]:
    acc, nvme = facts.accelerator, facts.nvme
    return {
        "vcpus": facts.vcpus,
        "cores": facts.cores,
        "threads_per_core": facts.threads_per_core,
        "memory_mib": facts.memory_mib,
        "architecture": (facts.architecture.value,),
        "efa_supported": facts.efa_supported,
        "max_efa_interfaces": facts.max_efa_interfaces,
        "network_cards": facts.network_cards,
        "max_network_interfaces": facts.max_network_interfaces,
        "network_gbps": facts.network_gbps,
        "usage_classes": frozenset(c.value for c in facts.usage_classes),
        "accelerator.kind": acc.kind if acc else None,
        "accelerator.model": acc.model if acc else None,
        "accelerator.count": facts.gpus,
        "accelerator.memory_gib": acc.memory_gib if acc else None,
        "nvme.count": nvme.count if nvme else None,
        "nvme.size_gb": nvme.size_gb if nvme else None,
    }


def test_file_validates_against_the_model() -> None:
    data = json.loads(CATALOG_FILE.read_text())
    assert Catalog.model_validate(data).instances


@pytest.mark.parametrize("name", REQUIRED_TYPES)
def test_required_type_present(name: str) -> None:
    assert catalog().instance(name) is not None, f"{name} missing from the catalog"


@pytest.mark.parametrize("name", sorted(json.loads(CATALOG_FILE.read_text())["instances"]))
def test_entry_matches_moto(name: str) -> None:
    assert name in moto_types(), f"{name} not in moto's data: add an EXCEPTIONS entry for it"
    expected, actual = moto_view(name), catalog_view(catalog().instances[name])
    assert set(expected) == set(actual)
    for field in expected:
        reason = EXCEPTIONS.get((name, field))
        if reason is None:
            assert actual[field] == expected[field], (
                f"{name} {field}: catalog {actual[field]!r}, moto {expected[field]!r}"
            )
        else:
            assert actual[field] != expected[field], (
                f"{name} {field}: moto now agrees with the catalog ({actual[field]!r}); "
                f"drop the exception ({reason})"
            )


@pytest.mark.parametrize("key", sorted(EXCEPTIONS))
def test_exception_names_a_catalog_entry_and_a_compared_field(key: tuple[str, str]) -> None:
    name, field = key
    assert name in catalog().instances
    assert field in moto_view(name)


def test_every_source_is_cited() -> None:
    cat = catalog()
    for name, facts in cat.instances.items():
        assert facts.source in cat.sources, f"{name}: source {facts.source!r} not in sources"
        if facts.price is not None:
            assert facts.price.source in cat.sources, f"{name}: price source {facts.price.source!r}"
    assert all(text.strip() for text in cat.sources.values())


def test_prices_are_dated_on_demand_list_prices() -> None:
    cat = catalog()
    for name, facts in cat.instances.items():
        price = facts.price
        if price is None:
            continue
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.date), name
        assert price.region in cat.regions, f"{name}: price region {price.region} not in regions"
        assert "on-demand" in {c.value for c in facts.usage_classes}, name
    priced = {name for name, facts in cat.instances.items() if facts.price is not None}
    # Types AWS sells on demand in us-east-1 must carry a price.
    assert {
        "p4d.24xlarge",
        "p5.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
        "g6e.12xlarge",
        "trn1.32xlarge",
        "m7i.4xlarge",
        "c5n.18xlarge",
    } <= priced


def test_cpu_family_prices_scale_with_vcpus() -> None:
    """AWS charges every size of a CPU family the same per vCPU; a mistyped size breaks this."""
    per_vcpu: dict[str, set[float]] = {}
    for name, facts in catalog().instances.items():
        if facts.accelerator is None and facts.price is not None and not name.startswith("hpc"):
            per_vcpu.setdefault(name.split(".")[0], set()).add(
                round(facts.price.usd_per_hour / facts.vcpus, 7)
            )
    assert per_vcpu
    for family, rates in per_vcpu.items():
        assert len(rates) == 1, f"{family}: per-vCPU price differs across sizes: {sorted(rates)}"


def test_gres_type_is_the_lowercase_model() -> None:
    for name, facts in catalog().instances.items():
        if facts.accelerator is not None:
            model = facts.accelerator.model
            assert facts.accelerator.gres_type == model.lower().replace(" ", ""), name
            assert facts.accelerator.kind in {"gpu", "neuron"}, name


def test_one_dense_bf16_figure_per_accelerator_model() -> None:
    figures: dict[str, set[float]] = {}
    for facts in catalog().instances.values():
        if facts.accelerator is not None:
            figures.setdefault(facts.accelerator.model, set()).add(
                facts.accelerator.bf16_dense_tflops
            )
    assert all(len(v) == 1 for v in figures.values()), figures
    # Dense, not sparse: H100 SXM is 989.5 dense (1,979 with sparsity).
    assert figures["H100"] == {989.5}


def test_capacity_block_only_where_aws_offers_it() -> None:
    for name, facts in catalog().instances.items():
        has_block = "capacity-block" in {c.value for c in facts.usage_classes}
        assert has_block == (name in CAPACITY_BLOCK_TYPES), name


def test_gpudirect_rdma_only_on_p_series_and_trainium() -> None:
    for name, facts in catalog().instances.items():
        family = name.split(".")[0]
        expected = family in GPUDIRECT_FAMILIES and facts.efa_supported
        assert facts.gpudirect_rdma == expected, name
        if facts.gpudirect_rdma:
            assert facts.accelerator is not None and facts.efa_supported, name


def test_cpu_layout_is_consistent() -> None:
    for name, facts in catalog().instances.items():
        assert facts.cores * facts.threads_per_core == facts.vcpus, name
        assert facts.cores % facts.sockets == 0, name
        assert facts.max_efa_interfaces <= facts.network_cards or not facts.efa_supported, name
        assert facts.efa_supported == (facts.max_efa_interfaces > 0), name


def test_efa_layout_of_the_big_training_types() -> None:
    cards = {
        name: catalog().instances[name].network_cards
        for name in (
            "p5.48xlarge",
            "p5en.48xlarge",
            "p4d.24xlarge",
            "p6-b200.48xlarge",
            "trn2.48xlarge",
        )
    }
    assert cards == {
        "p5.48xlarge": 32,
        "p5en.48xlarge": 16,
        "p4d.24xlarge": 4,
        "p6-b200.48xlarge": 8,
        "trn2.48xlarge": 16,
    }


@pytest.mark.parametrize("region", REQUIRED_REGIONS)
def test_region_zones(region: str) -> None:
    info = catalog().regions.get(region)
    assert info is not None, f"{region} missing"
    assert len(info.zones) >= 3
    assert len(set(info.zones)) == len(info.zones)
    for zone in info.zones:
        assert zone.startswith(region) and re.fullmatch(re.escape(region) + r"[a-z]", zone), zone


def test_region_zones_match_moto_offerings() -> None:
    for region, info in catalog().regions.items():
        path = MOTO_RESOURCES / "instance_type_offerings" / "availability-zone"
        rows = json.loads(gzip.decompress((path / f"{region}.json.gz").read_bytes()))
        assert set(info.zones) == {row["Location"] for row in rows}, region


def test_accelerator_memory_is_per_device() -> None:
    # Per accelerator, not per instance: no accelerator carries more than 200 GiB.
    for name, facts in catalog().instances.items():
        if facts.accelerator is not None:
            assert 0 < facts.accelerator.memory_gib <= 200, name
            assert math.isfinite(facts.accelerator.bf16_dense_tflops), name


@cache
def moto_offerings() -> dict[str, set[str]]:
    """Region -> instance types offered there (DescribeInstanceTypeOfferings, location-type
    region, as moto ships it)."""
    path = MOTO_RESOURCES / "instance_type_offerings" / "region"
    return {
        p.name.removesuffix(".json.gz"): {
            row["InstanceType"] for row in json.loads(gzip.decompress(p.read_bytes()))
        }
        for p in path.glob("*.json.gz")
    }


def test_offerings_match_moto_for_every_entry_and_region() -> None:
    cat = catalog()
    assert set(cat.offerings) == set(cat.instances)
    for name, regions in cat.offerings.items():
        expected = [r for r in sorted(cat.regions) if name in moto_offerings()[r]]
        assert list(regions) == expected, name


@pytest.mark.parametrize("name", TRAINING_TYPES)
def test_every_region_selling_the_training_types_is_known(name: str) -> None:
    selling = {region for region, types in moto_offerings().items() if name in types}
    assert selling, f"moto lists no Region for {name}"
    assert selling <= set(catalog().regions), sorted(selling - set(catalog().regions))


def test_every_region_selling_an_accelerated_type_of_the_catalog_is_known() -> None:
    """Every commercial Region where moto's offerings data sells one of the catalog's GPU or
    Trainium types (main refused ap-southeast-1, which sells p4de.24xlarge, and five more)."""
    accelerated = {n for n, facts in catalog().instances.items() if facts.accelerator}
    selling = {region for region, types in moto_offerings().items() if types & accelerated}
    assert not selling - set(catalog().regions), sorted(selling - set(catalog().regions))
    assert {"ap-southeast-1", "ap-northeast-3", "eu-central-2", "il-central-1"} <= selling


def test_offerings_name_only_known_types_and_regions() -> None:
    cat = catalog()
    assert all(set(regions) <= set(cat.regions) for regions in cat.offerings.values())
    # hpc7a is not sold in us-east-1 (the case that motivated the check).
    assert "us-east-1" not in cat.offerings["hpc7a.96xlarge"]
    assert "us-east-2" in cat.offerings["hpc7a.96xlarge"]


def test_did_you_mean_ranks_the_same_family_and_series_first() -> None:
    cat = catalog()
    # A size of a known family: that family's sizes.
    assert cat.suggest_instance_type("m7i.4xlarg")[0] == "m7i.4xlarge"
    # An unknown family: the same size in the nearest family of its series and processor,
    # never an accelerated type that merely spells alike (g5.4xlarge, p5.4xlarge).
    without_m5 = cat.model_copy(
        update={"instances": {k: v for k, v in cat.instances.items() if not k.startswith("m5.")}}
    )
    close = without_m5.suggest_instance_type("m5.4xlarge")
    assert close[0] == "m6i.4xlarge"
    assert all(without_m5.instances[c].accelerator is None for c in close), close
    assert cat.suggest_instance_type("m4.4xlarge")[0] == "m5.4xlarge"
    assert cat.suggest_instance_type("c6in.8xlarge")[0] == "c6i.8xlarge"
    assert cat.suggest_instance_type("p4.24xlarge")[0] == "p4d.24xlarge"
