"""The Pulumi stack: one ComponentResource per role and resource family, composed by
``SlurmCluster``. Importing this package imports pulumi and the pulumi_aws submodules it
uses, and creates nothing."""

from slurmstack.stack.cluster import SlurmCluster
from slurmstack.stack.outputs import export_outputs

__all__ = ["SlurmCluster", "export_outputs"]
