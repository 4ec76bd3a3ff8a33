"""Rewrite the golden files from the current templates: `python tests/golden/refresh.py`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if __name__ == "__main__":
    os.environ["SLURMSTACK_UPDATE_GOLDEN"] = "1"
    here = Path(__file__).resolve().parent
    sys.exit(pytest.main([str(here), "-q", "-p", "no:cacheprovider"]))
