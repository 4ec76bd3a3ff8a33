"""Change safety: what a new definition (or a new slurmstack) does to a running cluster.

``snapshot`` reads what a deployment is made of (an offline run, or a saved plan),
``replacement`` holds the provider's force-new rules (``replacement.json``), ``diff``
compares two snapshots as the engine would, ``effects`` says what each change means for
the jobs, and ``plan`` puts it together for `slurmstack plan --against` and the preflight.
Pure Python: no Pulumi import.
"""
