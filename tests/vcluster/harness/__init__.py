"""The virtual cluster: a cluster definition booted on this machine, a network namespace per
node, moto as AWS. See cluster.VirtualCluster, and standins.STAND_INS for what is not real."""

from .cluster import VirtualCluster, wait_until
from .standins import STAND_INS

__all__ = ["STAND_INS", "VirtualCluster", "wait_until"]
