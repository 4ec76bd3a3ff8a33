"""What `slurmstack plan` and `slurmstack diagram` report: capacity, cost, time to ready,
and diagrams. Pure functions of the plan (and, for resources and timing, of the resource
graph the offline engine collected)."""
