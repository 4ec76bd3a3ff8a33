"""EFA on a pool: whether it is on, and the launch template's interface layout.

Shared by the checks (addresses per node, Lustre connections) and the plan, so both count
from the same layout. Pure: no Pulumi import.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from slurmstack.catalog import InstanceFacts
from slurmstack.spec import PoolSpec


class InterfaceType(enum.StrEnum):
    INTERFACE = "interface"  # a plain ENA interface
    EFA = "efa"  # EFA with an ENA device: carries IP traffic and the fabric
    EFA_ONLY = "efa-only"  # fabric only, takes no IP address of its own


@dataclass(frozen=True)
class NetworkInterfacePlan:
    network_card_index: int
    device_index: int
    interface_type: InterfaceType

    @property
    def uses_ip_address(self) -> bool:
        return self.interface_type is not InterfaceType.EFA_ONLY


def resolve_efa(pool: PoolSpec, facts: InstanceFacts) -> bool:
    """EFA as the definition asks: ``auto`` is on wherever the instance type supports it."""
    return facts.efa_supported if pool.efa == "auto" else bool(pool.efa)


def efa_interfaces(facts: InstanceFacts, efa: bool) -> tuple[NetworkInterfacePlan, ...]:
    """The interface list of a launch template.

    Card 0 / device 0 carries the node's IP address, so it is a full ``efa`` interface
    (ENA + EFA). Every other card gets one ``efa-only`` interface at device index 1:
    efa-only interfaces take no IP address, which keeps a p5 (32 cards) from consuming
    32 addresses of the subnet, and device index 1 is what AWS documents for the extra
    cards of multi-card instances.
    """
    if not efa:
        return (NetworkInterfacePlan(0, 0, InterfaceType.INTERFACE),)
    cards = min(facts.network_cards, max(facts.max_efa_interfaces, 1))
    layout = [NetworkInterfacePlan(0, 0, InterfaceType.EFA)]
    layout += [NetworkInterfacePlan(card, 1, InterfaceType.EFA_ONLY) for card in range(1, cards)]
    return tuple(layout)


def efa_device_count(interfaces: tuple[NetworkInterfacePlan, ...]) -> int:
    """EFA devices a node has (under /sys/class/infiniband): one per EFA or efa-only interface."""
    return sum(1 for i in interfaces if i.interface_type is not InterfaceType.INTERFACE)


def addresses_per_node(interfaces: tuple[NetworkInterfacePlan, ...]) -> int:
    """Subnet addresses one node takes: every interface but the efa-only ones."""
    return sum(1 for i in interfaces if i.uses_ip_address)
