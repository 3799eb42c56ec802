"""Shared fixtures."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(scope="module")
def one_blas_thread():
    """Small dense problems: one BLAS thread avoids oversubscription on the 2-core CI box."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture
def scip_solve():
    """``solve(path, on_read=None)``: a model file read (then ``on_read(model)``, before
    presolve removes anything) and solved by SCIP at tolerances of 1e-9 (SCIP's
    defaults, 1e-6 feasibility and a 1e-4 gap, leave QP optima about 5e-8 relative from the true
    one), asserted optimal; returns the solved ``pyscipopt.Model``. SCIP solves a QP by spatial
    branch and bound, whose node count swings with the data (ridge with alpha=2 on the export
    tests' points: 70,000 nodes, 20 s; alpha=0.5: 0.3 s), so the instances are small and a time
    limit turns a stall into a failure, not a hang."""
    pyscipopt = pytest.importorskip("pyscipopt")

    def solve(path, on_read=None):
        m = pyscipopt.Model()
        m.hideOutput()
        m.setParam("limits/time", 120.0)
        m.setParam("numerics/feastol", 1e-9)
        m.setParam("numerics/dualfeastol", 1e-9)
        m.setParam("limits/gap", 1e-9)
        m.readProblem(str(path))
        if on_read is not None:
            on_read(m)
        m.optimize()
        assert m.getStatus() == "optimal"
        return m

    return solve
