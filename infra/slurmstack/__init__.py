"""slurmstack: an AI training cluster on AWS as code.

The package is layered so that everything before the Pulumi stack is pure Python:
spec (definition models) -> catalog (instance facts) -> checks (findings) -> plan
(derived, frozen facts) -> render (Jinja2 templates) -> stack (Pulumi components).
Only ``slurmstack.stack`` and ``slurmstack.offline`` import ``pulumi``.
"""

__version__ = "0.1.0"
