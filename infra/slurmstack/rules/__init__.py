"""The rules the checks and the plan share, one module per subject, so a rule the checks
enforce and the fact the plan derives from it are written once: ``efa`` (which instance types
have EFA, and the interface layout), ``fsx`` (FSx for Lustre's sizes, throughputs and EFA),
``subnets`` (carving the VPC), ``fabric`` (the NCCL/libfabric environment of a pool),
``accounting`` (accounts, QoS, TRES), ``health_policy`` (the repair table and the XIDs that drain
a node) and ``facts`` (a node's instance facts: the definition's, else the catalog's). Pure
Python, no Pulumi; they import the spec, the catalog and the contract, never the checks or the
plan."""
