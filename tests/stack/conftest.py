"""Fixtures of the stack tests: every example through the real program under mocks."""

from __future__ import annotations

from typing import Any

import pytest

from slurmstack.offline import OfflineRun
from slurmstack.plan import ClusterPlan
from support.stack import EXAMPLE_IDS, example, plan_of, run_ok


@pytest.fixture(params=EXAMPLE_IDS)
def example_run(request: pytest.FixtureRequest) -> tuple[dict[str, Any], ClusterPlan, OfflineRun]:
    definition = example(request.param)
    return definition, plan_of(definition), run_ok(definition)
