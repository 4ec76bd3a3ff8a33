"""The contract between the control plane and the nodes: every fact both sides must agree on.

Plan, render, the templates (as the Jinja global ``contract``), the stack and the report take
these names from here, and so does the node agent, on the node: this package ships with it (the
config store delivers ``slurmstack/contract/`` next to ``slurmstack/node/``). Nothing else
spells a node path, a parameter key, a port, a tag, the node-name scheme or the layout of a
node's configuration files. The first-boot script (``slurmstack/node/bootstrap.py``) runs
before the agent is installed: render writes the names it takes from here into its copy in the
user data (``slurmstack.render.cloud_init.bootstrap_script``).

Standard library only, no I/O at import: it runs on the nodes' system Python. This module is
the one door: import every name from ``slurmstack.contract``, never from its modules, which are

- ``names``: The names slurmstack gives things: roles, the node-name schemes, the AWS resources
  of a pool, tags, secrets and the deploy-time parameters.
- ``aws``: AWS's and Slurm's network facts: Slurm's ports, the instance metadata service,
  partitions and ARNs.
- ``paths``: Where things land on a node: files, directories, systemd units, the state volume,
  the health checks' and the jobs' places.
- ``commands``: The agent's subcommands as units, cloud-init, SSM documents and slurmctld call
  them, and the programs and timings of the head's loops (reaping, power saving).
- ``store``: The cluster bucket's layout: the config store (content-keyed objects, bundles, the
  manifest) and where nodes copy their logs.
- ``env``: The node's KEY=value files: bootstrap.env (who the node is) and node.env (what it
  learned at boot).
- ``reasons``: The reasons slurmstack gives a node in Slurm, and the causes the repair table is
  written in.
- ``repair``: The head controller's repair policy: what it does about each cause.
- ``documents``: The one codec of the JSON documents (node.json, accounting.json, acceptance.json).
- ``node_config``: node.json: what the node agent knows about its role, written by render.
- ``accounting``: accounting.json: what the head's agent knows about accounting, written by
  render.
- ``observe``: The exporters' ports, the agent's metrics and scrape targets, the GPU-to-job
  files, the alert event's schema.
- ``image``: What a node's image must hold, and where the image build finds its inputs.
- ``people``: identities.json: the people every node knows, their ids, login pools' names.
- ``topology``: Slurm's network topology: the switches slurmstack adds to EC2's, topology.conf,
  a node's Topology= value.
- ``acceptance``: acceptance.json: what acceptance expects of each pool's nodes, and how it
  tests them.
"""

# ruff: noqa: F403
from . import (
    acceptance,
    accounting,
    aws,
    commands,
    documents,
    env,
    image,
    names,
    node_config,
    observe,
    paths,
    people,
    reasons,
    repair,
    store,
    topology,
)
from .acceptance import *
from .accounting import *
from .aws import *
from .commands import *
from .documents import *
from .env import *
from .image import *
from .names import *
from .node_config import *
from .observe import *
from .paths import *
from .people import *
from .reasons import *
from .repair import *
from .store import *
from .topology import *

__all__ = sorted(
    [
        *acceptance.__all__,
        *accounting.__all__,
        *aws.__all__,
        *commands.__all__,
        *documents.__all__,
        *env.__all__,
        *image.__all__,
        *names.__all__,
        *node_config.__all__,
        *observe.__all__,
        *paths.__all__,
        *people.__all__,
        *reasons.__all__,
        *repair.__all__,
        *store.__all__,
        *topology.__all__,
    ]
)
