"""Wait for the program's pending outputs in one pass per generation, before the SDK's drain.

Every resource property is an ``Output`` whose future the Pulumi SDK (3.272) tracks in one
set. After the program returns, ``wait_for_rpcs`` (pulumi/runtime/stack.py) drains that
set with ``asyncio.wait(..., return_when=FIRST_COMPLETED)`` in a loop: each round adds a
callback to every pending future and removes it again, so each completion costs a pass
over everything still pending. Under the mock engine most outputs complete together and
the rounds are few; under real registration latency (``pulumi preview``/``up``) they
complete one by one and the drain turns quadratic in the number of outputs.

``drain_pending_outputs`` runs first, as the program's ``pulumi.run`` entry point (awaited
after the module's top level, before the SDK's drain). It waits for everything pending
with ``FIRST_EXCEPTION``: one pass per generation of outputs (those created while the
previous pass waited), so each output is waited on once. It never raises and never
changes the tracked set: a failed output stops it, and the SDK's own drain then finds that
failure and reports it exactly as it would have. When it returns, the SDK's drain finds
(almost) nothing left. The same change, proposed upstream, is
``benchmarks/sdk_drain/wait_for_rpcs.patch``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pulumi.runtime import settings as runtime_settings

# Far above the generations a program has (a chain of applies is a few dozen deep); a
# bound so the loop ends even if a future kept spawning new outputs.
MAX_GENERATIONS = 10_000


def _pending_outputs() -> set[asyncio.Future[object]]:
    """The SDK's tracked outputs that are still running (empty if this SDK has no such set)."""
    tracked = getattr(runtime_settings.SETTINGS, "outputs", None)
    if tracked is None:
        return set()
    with runtime_settings.SETTINGS.lock:
        return {future for future in tracked if not future.done()}


def _failed(future: asyncio.Future[object]) -> bool:
    return future.cancelled() or future.exception() is not None


async def drain_pending_outputs(
    pending: Callable[[], set[asyncio.Future[object]]] = _pending_outputs,
) -> None:
    """Wait until no tracked output is running, or one has failed (the SDK reports it)."""
    for _ in range(MAX_GENERATIONS):
        waiting = pending()
        if not waiting:
            return
        done, _still = await asyncio.wait(waiting, return_when=asyncio.FIRST_EXCEPTION)
        if any(_failed(future) for future in done):
            return
