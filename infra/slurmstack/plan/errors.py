"""The planner's one error."""


class PlanError(ValueError):
    """A definition reached the planner without a fact it needs (the checks should catch it)."""
