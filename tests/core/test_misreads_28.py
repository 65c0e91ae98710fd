"""Issue 28, "no misread": one case per cause that was still open after the fuzz suite's
cases (``test_fuzz.py``, section 3b) -- each asserts the clear error or the right reading."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn._limits import fit_memory

pd = pytest.importorskip("pandas")


def frame(**columns):
    base = {"task": ["a", "a", "b", "b", "c", "c"], "worker": ["x", "y", "x", "y", "x", "y"],
            "label": [0, 1, 1, 1, 0, 0]}
    return pd.DataFrame({**base, **columns})


# -- ids of different types that compare equal: 1, 1.0, True ----------------------------------
def test_categorical_column_mixing_types_is_refused():
    # a categorical whose categories mix bool and int (pandas keeps False and 1 apart)
    labels = pd.Series([False, False, 1, 1, False, 1], dtype="category")
    assert labels.cat.categories.dtype == object
    with pytest.raises(ValueError, match="mix types"):
        cl.as_crowd_labels(frame(label=labels))
    workers = pd.Series(["1", 1, "1", 1, "1", 1], dtype="category")
    with pytest.raises(ValueError, match="mix types"):
        cl.DawidSkene().fit(frame(worker=workers))
    # one type per categorical column reads as the plain column does
    fine = frame(worker=pd.Series(["x", "y"] * 3, dtype="category"))
    np.testing.assert_array_equal(cl.DawidSkene().fit(fine).posterior_,
                                  cl.DawidSkene().fit(frame()).posterior_)


def test_categorical_made_by_pandas_from_equal_values_is_read_as_pandas_holds_it():
    # pandas itself makes one category of 0.0 and False when the column becomes categorical,
    # before crowdlearn sees it: the column holds 0.0 twice (documented in from_dataframe)
    merged = pd.Series([0.0, False, 1.0, True, 0.0, 1.0], dtype="category")
    assert merged.cat.categories.tolist() == [0.0, 1.0]
    crowd = cl.as_crowd_labels(frame(label=merged))
    assert crowd.class_ids.tolist() == [0.0, 1.0]
    # the same values as a plain (object) column are refused
    with pytest.raises(ValueError, match="mix types"):
        cl.as_crowd_labels(frame(label=pd.Series([0.0, False, 1.0, True, 0.0, 1.0],
                                                 dtype=object)))


def test_gold_by_id_never_matches_true_with_1():
    crowd = cl.as_crowd_labels(frame(task=[0, 0, 1, 1, 2, 2]))
    with pytest.raises(ValueError, match="item True of type bool"):
        cl.DawidSkene().fit(crowd, gold={True: 1})
    with pytest.raises(ValueError, match="item True of type bool"):
        cl.DawidSkene().fit(crowd, gold=pd.Series({True: 1}))
    with pytest.raises(ValueError, match="class True of type bool"):
        cl.DawidSkene().fit(crowd, gold={1: True})
    bool_classes = frame(label=[False, True, True, True, False, False])
    with pytest.raises(ValueError, match="class 1 of type int.*bool"):
        cl.DawidSkene().fit(bool_classes, gold={"b": 1})
    # the same number as int or float is one id, as everywhere else
    np.testing.assert_array_equal(cl.DawidSkene().fit(crowd, gold={1.0: 1}).posterior_,
                                  cl.DawidSkene().fit(crowd, gold={1: 1}).posterior_)
    assert cl.DawidSkene().fit(bool_classes, gold={"b": True}).predict()[1] == 1


def test_new_labels_with_ids_of_another_type_are_refused_at_predict_time():
    ds = cl.DawidSkene().fit(frame(worker=[1, 2, 1, 2, 1, 2]))
    with pytest.raises(ValueError, match="unknown expert.*type bool.*type int"):
        ds.predict_proba(cl.from_table(["t", "t"], [True, True], [0, 1]))
    with pytest.raises(ValueError, match="unknown label.*type bool.*type int"):
        ds.predict_proba(cl.from_table(["t", "t"], [1, 2], [True, False]))
    on_bools = cl.DawidSkene().fit(frame(label=[False, True, True, True, False, False]))
    with pytest.raises(ValueError, match="unknown label.*type int.*type bool"):
        on_bools.predict_proba(cl.from_table(["t", "t"], ["x", "y"], [1, 0]))
    # 1.0 is worker 1, as in a DataFrame
    np.testing.assert_array_equal(
        ds.predict_proba(cl.from_table(["t", "t"], [1.0, 2.0], [0, 1])),
        ds.predict_proba(cl.from_table(["t", "t"], [1, 2], [0, 1])))


# -- sizes that pass the limits fit in the memory they imply -----------------------------------
def _largest_admitted(K: int, per: str, budget: int) -> tuple[int, int]:
    lo, hi = 1, 10 ** 9
    while lo < hi:
        mid = (lo + hi + 1) // 2
        n, J = (mid, 3) if per == "items" else (3, mid)
        lo, hi = (mid, hi) if fit_memory(n, J, K) <= budget else (lo, mid - 1)
    return (lo, 3) if per == "items" else (3, lo)


MODELS = [(cl.DawidSkene, dict(accelerate=True, n_init=5, max_iter=20, random_state=1)),
          (cl.DawidSkene, dict(n_init=5, max_iter=20, random_state=1)),
          (cl.OneCoinDawidSkene, dict(accelerate=True, n_init=5, max_iter=20, random_state=1)),
          (cl.GLAD, dict(max_iter=2)), (cl.MACE, dict(max_iter=5, n_init=3, random_state=1)),
          (cl.MajorityVote, {}), (cl.Wawa, {}), (cl.ZeroBasedSkill, {})]


@pytest.mark.parametrize("K, per", [(2, "items"), (2, "experts"), (30, "experts"),
                                    (200, "items")])
def test_largest_crowd_the_limits_admit_fits_in_max_memory(K, per):
    budget = 32 * 2 ** 20  # the default is 4 GiB; the same bound, scaled down
    n, J = _largest_admitted(K, per, budget)
    L = max(n, J)
    item, expert = np.arange(L) % n, (np.arange(L) * 7) % J
    label = np.random.default_rng(0).integers(0, K, L)
    with cl.size_limits(max_memory=budget):
        crowd = cl.from_triples(item, expert, label, n_items=n, n_experts=J, n_classes=K)
        with pytest.raises(ValueError, match=r"GiB of working memory.*max_memory"):
            cl.from_triples(item, expert, label, n_items=n + (per == "items"),
                            n_experts=J + (per == "experts"), n_classes=K)
        for model, params in MODELS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tracemalloc.start()
                try:
                    model(**params).fit(crowd)
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
            # the documented bound: max_memory, plus at most ~200 bytes per label
            assert peak <= budget + 200 * L, (model.__name__, peak / 2 ** 20)


def test_default_memory_limit_refuses_what_needs_more_than_4_gib():
    assert cl.get_size_limits().max_memory == 2 ** 32
    # within max_cells (2**26 numbers per table) but ~16 GiB for a fit
    with pytest.raises(ValueError, match=r"16\.\d GiB of working memory.*4\.0 GiB"):
        cl.from_triples([0, 1], [0, 1], [0, 999], n_items=67_000, n_experts=67)
    assert fit_memory(67_000, 67, 1000) > 2 ** 33
    with cl.size_limits(max_memory=2 ** 35):
        assert cl.from_triples([0, 1], [0, 1], [0, 999], n_items=67_000,
                               n_experts=67).n_classes == 1000


# -- dask ------------------------------------------------------------------------------------
def test_dask_frame_given_to_an_in_memory_reader_is_a_clear_type_error():
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(frame(), npartitions=2)
    fitted = cl.DawidSkene().fit(frame())
    cases = [lambda: cl.GLAD().fit(ddf), lambda: cl.MACE().fit(ddf),
             lambda: cl.MajorityVote().fit(ddf), lambda: cl.Wawa().fit(ddf),
             lambda: cl.krippendorff_alpha(ddf), lambda: cl.as_crowd_labels(ddf),
             lambda: cl.from_dataframe(ddf), lambda: fitted.predict_proba(ddf)]
    for case in cases:
        with pytest.raises(TypeError, match=r"dask DataFrame.*\.compute\(\)"):
            case()
    # DawidSkene fits it where it lies
    assert cl.DawidSkene().fit(dd.from_pandas(frame(), npartitions=1)).predict().shape == (3,)


def test_dask_fit_refuses_ids_of_mixed_types_as_the_in_memory_fit_does():
    dd = pytest.importorskip("dask.dataframe")
    mixed = frame(worker=pd.Series(["1", 1, "1", 1, "1", 1], dtype=object))
    with pytest.raises(ValueError, match="worker identifiers mix types"):
        cl.DawidSkene().fit(mixed)
    # dd.from_pandas turns the object column into strings, '1' and 1 into one worker
    with pytest.raises(ValueError, match="worker identifiers mix types.*from_pandas"):
        cl.DawidSkene().fit(dd.from_pandas(mixed, npartitions=2))
    labels = frame(label=pd.Series([0.0, False, 1.0, True, 0.0, 1.0], dtype=object))
    with pytest.raises(ValueError, match="label identifiers mix types"):
        cl.OneCoinDawidSkene().fit(dd.from_pandas(labels, npartitions=1))
    # one type per column: as before
    ints = frame(worker=pd.Series([1, 2, 1, 2, 1, 2], dtype=object))
    np.testing.assert_allclose(cl.DawidSkene().fit(dd.from_pandas(ints, npartitions=1))
                               .posterior_, cl.DawidSkene().fit(ints).posterior_)


# -- select_penalty: one warning per kind, not one per fit -----------------------------------
def test_select_penalty_warns_once_per_kind():
    from crowdlearn.selection import select_penalty
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    truth = (X[:, 0] > 0).astype(int)
    labels = np.where(rng.random((40, 3)) < 0.55, truth[:, None], 1 - truth[:, None])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        select_penalty(labels, X, refit=False, random_state=0, n_lambdas=5)
    assert len(caught) == 1, [str(w.message)[:80] for w in caught]
    assert caught[0].category is cl.ConvergenceWarning
    assert "warnings from the fits of the penalty path" in str(caught[0].message)
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", cl.ConvergenceWarning)  # the user's filter holds
        select_penalty(labels, X, refit=False, random_state=0, n_lambdas=5)


# -- 'x' and 'x\x00': checked again on the column types not covered in test_fuzz.py -----------
def test_trailing_nul_in_categorical_arrow_and_dask_columns_is_refused():
    for dtype in ("category", "string[pyarrow]", object):
        labels = pd.Series(["x", "x\x00", "y", "x", "y", "x"], dtype=dtype)
        with pytest.raises(ValueError, match="NUL"):
            cl.as_crowd_labels(frame(label=labels))
    dd = pytest.importorskip("dask.dataframe")
    workers = frame(worker=["x", "x\x00", "x", "x\x00", "x", "x\x00"])
    with pytest.raises(ValueError, match="NUL"):
        cl.DawidSkene().fit(dd.from_pandas(workers, npartitions=1))


def test_set_valued_labels_are_refused_not_sorted_into_wrong_classes():
    """Sets have only a partial order, so np.unique would split equal sets into several
    classes (or fail with 'duplicates'): a model refuses them with a clear message, while
    krippendorff_alpha reads them itself."""
    pd = pytest.importorskip("pandas")
    from crowdlearn import DawidSkene, MajorityVote
    from crowdlearn.metrics import krippendorff_alpha

    sets = [frozenset("ab"), frozenset("b"), frozenset("a"), frozenset("ab"), frozenset("c"),
            frozenset("b"), frozenset("ab"), frozenset("a")]
    df = pd.DataFrame({"task": [0, 0, 1, 1, 2, 2, 3, 3], "worker": [0, 1] * 4,
                       "label": sets})
    for model in (DawidSkene(), MajorityVote()):
        with pytest.raises(ValueError, match="sets have no total order"):
            model.fit(df)
    alpha = krippendorff_alpha(df, distance="masi")
    assert np.isfinite(alpha) and alpha <= 1
