"""Shared fixtures."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(scope="module")
def one_blas_thread():
    """Small dense problems: one BLAS thread avoids oversubscription on the 2-core CI box."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
