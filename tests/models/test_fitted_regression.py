"""The fitted results of every EM model on the bundled datasets equal those recorded before
the estimator refactoring of issue 26 (``tests/data/fitted_before_refactor.npz``, written by
``tests/models/fitted_regression_cases.py``) to ``atol=1e-9``: posteriors, parameters, objective
histories, iteration counts."""

from __future__ import annotations

import numpy as np
import pytest

from fitted_regression_cases import CASES, RECORD, fitted_arrays

ATOL = 1e-9


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
        np.testing.assert_allclose(got[name], value, rtol=0, atol=ATOL,
                                   err_msg=f"{case}: {name}")


def test_every_record_has_a_case(recorded):
    assert {key.split(":", 1)[0] for key in recorded} == set(CASES)
