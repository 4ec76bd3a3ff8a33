"""Instance facts from a checked-in data file (``catalog.json``); never fetched at run time.

Each record says what slurmstack needs to plan a node: CPU layout and memory for Slurm,
accelerators for GRES and capacity figures, EFA and network cards for the interface
layout, NVMe disks for local scratch, usage classes for purchase options, and an
on-demand list price with its source. Sources are named per record and per region.
"""

from __future__ import annotations

import difflib
import enum
import json
import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

CATALOG_FILE = Path(__file__).with_name("catalog.json")


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Architecture(enum.StrEnum):
    X86_64 = "x86_64"
    ARM64 = "arm64"


class UsageClass(enum.StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    CAPACITY_BLOCK = "capacity-block"


class Accelerator(Record):
    """The accelerators of one instance (all of one model)."""

    kind: str = Field(description="gpu or neuron.")
    vendor: str = Field(description="e.g. NVIDIA, AWS.")
    model: str = Field(description="Model name as AWS reports it, e.g. H100, A10G, Trainium2.")
    count: int = Field(ge=1, description="Accelerators per instance.")
    memory_gib: float = Field(gt=0, description="Memory per accelerator, GiB.")
    bf16_dense_tflops: float = Field(gt=0, description="Dense BF16 TFLOP/s per accelerator.")
    gres_type: str = Field(
        description="Slurm GRES type name (lowercase model, e.g. h100, a100, l40s)."
    )


class Nvme(Record):
    """Instance-store NVMe disks."""

    count: int = Field(ge=1, description="Number of NVMe disks.")
    size_gb: int = Field(ge=1, description="Size of each disk, GB (as AWS states it).")


class Price(Record):
    """An on-demand list price, with where and when it was read."""

    usd_per_hour: float = Field(gt=0, description="On-demand price per instance-hour, USD.")
    region: str = Field(description="Region the price applies to.")
    date: str = Field(description="Date the price was read (YYYY-MM-DD).")
    source: str = Field(description="Where the price comes from.")


class InstanceFacts(Record):
    """What slurmstack knows about one EC2 instance type."""

    vcpus: int = Field(ge=1, description="vCPUs.")
    cores: int = Field(ge=1, description="Physical cores.")
    threads_per_core: int = Field(ge=1, le=2, description="Threads per core (1 or 2).")
    sockets: int = Field(default=1, ge=1, le=8, description="CPU sockets (Slurm Sockets=).")
    memory_mib: int = Field(ge=512, description="Memory, MiB.")
    architecture: Architecture = Field(default=Architecture.X86_64, description="CPU architecture.")
    accelerator: Accelerator | None = Field(default=None, description="Accelerators, if any.")
    efa_supported: bool = Field(default=False, description="Supports Elastic Fabric Adapter.")
    max_efa_interfaces: int = Field(default=0, ge=0, description="Most EFA interfaces.")
    network_cards: int = Field(default=1, ge=1, description="Network cards.")
    max_network_interfaces: int = Field(
        default=4, ge=1, description="Most network interfaces (ENIs) over all cards."
    )
    network_gbps: float = Field(gt=0, description="Advertised network bandwidth, Gbit/s.")
    gpudirect_rdma: bool = Field(
        default=False, description="EFA supports GPUDirect RDMA (FI_EFA_USE_DEVICE_RDMA)."
    )
    nvme: Nvme | None = Field(default=None, description="Instance-store NVMe disks, if any.")
    usage_classes: frozenset[UsageClass] = Field(
        default=frozenset({UsageClass.ON_DEMAND, UsageClass.SPOT}),
        description="Purchase options the type supports.",
    )
    price: Price | None = Field(default=None, description="On-demand list price.")
    source: str = Field(default="user-supplied", description="Where these facts come from.")

    @property
    def gpus(self) -> int:
        return self.accelerator.count if self.accelerator else 0


class RegionInfo(Record):
    zones: tuple[str, ...] = Field(description="Availability zone names of the region.")
    fsx_lustre_efa: bool = Field(
        default=False, description="FSx for Lustre EFA-enabled file systems are offered here."
    )


class Catalog(Record):
    """The whole data file."""

    sources: dict[str, str] = Field(description="Source id -> citation.")
    instances: dict[str, InstanceFacts]
    regions: dict[str, RegionInfo]
    offerings: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="Instance type -> the Regions of this catalog that offer it "
        "(source: ec2-region-offerings).",
    )

    def instance(self, name: str) -> InstanceFacts | None:
        return self.instances.get(name)

    def offered_in(self, name: str) -> tuple[str, ...] | None:
        """The catalog's Regions that offer ``name``; None when the catalog does not know."""
        return self.offerings.get(name)

    def suggest(self, name: str, options: list[str] | None = None) -> list[str]:
        """Up to three close spellings, fewest typos first (a swap of two letters counts as
        one, so us-esat-1 finds us-east-1 before us-west-1)."""
        pool = options if options is not None else list(self.instances)
        close = difflib.get_close_matches(name, pool, n=6, cutoff=0.6)
        return sorted(close, key=lambda option: edit_distance(name, option))[:3]

    def suggest_instance_type(self, name: str) -> list[str]:
        """Known types close to ``name``, nearest first: another size of the same family,
        else the same size in the nearest family of the same series and processor
        (m5.4xlarge -> m6i.4xlarge, never a GPU type), else close spellings."""
        family, _, size = name.partition(".")
        families: dict[str, list[str]] = {}
        for known in self.instances:
            known_family, _, known_size = known.partition(".")
            families.setdefault(known_family, []).append(known_size)
        if family in families:
            sizes = difflib.get_close_matches(size, families[family], n=3, cutoff=0.6)
            return [f"{family}.{s}" for s in sizes]
        wanted = family_parts(family)
        if wanted is not None:
            series, generation, processor = wanted
            ranked: list[tuple[int, int, float, str]] = []
            for known_family, sizes in families.items():
                parts = family_parts(known_family)
                if parts is None or parts[0] != series or size not in sizes:
                    continue
                similarity = difflib.SequenceMatcher(None, family, known_family).ratio()
                ranked.append(
                    (
                        int(parts[2] != processor),
                        abs(parts[1] - generation),
                        -similarity,
                        f"{known_family}.{size}",
                    )
                )
            if ranked:
                return [entry[-1] for entry in sorted(ranked)[:3]]
        return self.suggest(name)


def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of neighbours turning a into b."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = int(a[i - 1] != b[j - 1])
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


# A family name: series letters, generation, then attributes (processor, disk, network...),
# e.g. m6i (m, 6, i), c5n (c, 5, n), p6-b200 (p, 6, -b200), trn1n (trn, 1, n), hpc7a.
_FAMILY = re.compile(r"^([a-z]+)(\d+)([a-z0-9-]*)$")


def family_parts(family: str) -> tuple[str, int, str] | None:
    """(series, generation, processor) of an EC2 family: the processor is a for AMD, g for
    Graviton, i for Intel (older Intel families carry no letter)."""
    match = _FAMILY.match(family)
    if match is None:
        return None
    attributes = match.group(3)
    processor = "a" if "a" in attributes else "g" if "g" in attributes else "i"
    return match.group(1), int(match.group(2)), processor


@lru_cache(maxsize=1)
def load_catalog(path: Path = CATALOG_FILE) -> Catalog:
    return Catalog.model_validate(json.loads(path.read_text()))


def did_you_mean(options: list[str]) -> str:
    """' (did you mean a or b?)' for close matches, '' when there are none."""
    if not options:
        return ""
    return " (did you mean " + " or ".join(repr(o) for o in options) + "?)"
