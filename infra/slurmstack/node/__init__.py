"""The node agent (slurmstack-node): cli.main runs it. A Context (context.py) carries what every
step needs; one module per concern holds its steps; commands.py is the table of subcommands.

bootstrap.py, which installs the agent from the config store, travels in the user data
instead (render writes the contract's names it uses into that copy)."""
