"""moto's in-process AWS for the agent's tests."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from support.node import REGION


@pytest.fixture
def aws():
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        yield session
