#!/usr/bin/python3
"""HealthCheckProgram on a virtual-cluster node: a stand-in (stand-in "health-check-env"). slurmd
runs its HealthCheckProgram with SLURMD_NODENAME alone in its environment; nodes here reach moto
through AWS_ENDPOINT_URL (and give the metadata service more time), which a real node does not
need. This sets what /etc/vcluster/aws.env holds (written at the node's start) and runs the
rendered program, unchanged. Standard library only."""

import os
import sys

ENV = "/etc/vcluster/aws.env"
PROGRAM = "/usr/local/sbin/slurmstack-health-check"

with open(ENV) as handle:
    for line in handle:
        key, _, value = line.strip().partition("=")
        if key:
            os.environ[key] = value
os.execv(PROGRAM, [PROGRAM, *sys.argv[1:]])
