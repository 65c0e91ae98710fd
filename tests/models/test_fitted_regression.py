"""The fitted results of every EM model on the bundled datasets equal those recorded before
the estimator refactoring of issue 26 (``tests/data/fitted_before_refactor.npz``, written by
``tests/models/fitted_regression_cases.py``): posteriors, parameters, objective histories,
iteration counts, to ``atol=1e-9`` plus ``rtol=1e-6``.

The relative part is there because the record was written on one CPU and is checked on others:
parameters that sit along nearly flat directions of the objective (GLAD's item difficulties
``beta_`` near 14, SparseExpertsEM's intercepts near 25 on ``rte``) carry the last bits of the
CPU's floating point into their ninth or tenth significant digit (1.4e-9 and 1.1e-7 apart, relative
1e-10 and 4e-9, on an AMD EPYC against the machine that wrote the record). A change to
what a model computes moves them by far more than a millionth."""

from __future__ import annotations

import numpy as np
import pytest

from fitted_regression_cases import CASES, RECORD, fitted_arrays

ATOL = 1e-9
RTOL = 1e-6


@pytest.fixture(scope="module")
def recorded():
    with np.load(RECORD) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("case", list(CASES))
def test_fit_equals_recorded(case, recorded):
    expected = {key.split(":", 1)[1]: value for key, value in recorded.items()
                if key.split(":", 1)[0] == case}
    assert expected, f"nothing recorded for {case}"
    got = fitted_arrays(case)
    assert sorted(got) == sorted(expected), f"{case}: fitted attributes changed"
    for name, value in expected.items():
        assert got[name].shape == value.shape, f"{case}: {name} changed shape"
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{case}: {name}")


def test_every_record_has_a_case(recorded):
    assert {key.split(":", 1)[0] for key in recorded} == set(CASES)
