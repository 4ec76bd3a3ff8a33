"""Jobs submitted all along while a scenario changes the cluster, as users would: one every
half second on a thread, at most ``limit`` of them, each refusal kept.

    with SubmittedAlong(lambda: run("sbatch", ...)) as along:
        ...  # nodes join and leave
    assert along.submitted > 0 and along.failures == []
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

JOIN_SECONDS = 150


class SubmittedAlong:
    def __init__(
        self,
        submit: Callable[[], subprocess.CompletedProcess[str]],
        limit: int = 400,
        every: float = 0.5,
    ) -> None:
        self._submit = submit
        self._limit = limit
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="submitted-along")
        self.submitted = 0
        self.failures: list[str] = []

    def _run(self) -> None:
        for _ in range(self._limit):
            if self._stop.is_set():
                return
            out = self._submit()
            self.submitted += 1
            if out.returncode != 0:
                self.failures.append(out.stderr)
            time.sleep(self._every)

    def __enter__(self) -> SubmittedAlong:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=JOIN_SECONDS)
