"""The head node's one day-2 loop (`slurmstack-node control`, run by slurmstack-controller.timer):
observe (observe.py), decide (decide.py and its repair rules, repair.py: pure functions that
return actions.py's Decision), act (act.py), remembering between passes what the breaker and the
escalations need (state.py); loop.py runs one pass, reap.py deletes dead records. It grew out of the dead-node
reaper, whose deletions are one of its actions. README, "When nodes fail"."""

from .commands import COMMANDS
from .loop import breakers, control, reset_breaker

__all__ = ["COMMANDS", "breakers", "control", "reset_breaker"]
