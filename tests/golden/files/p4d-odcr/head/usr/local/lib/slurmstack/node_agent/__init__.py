"""The node agent (slurmstack-node): cli.main runs it; node.Node is the node it configures.

bootstrap.py, which installs the agent from the config store, is not part of the agent's
package on the nodes."""
