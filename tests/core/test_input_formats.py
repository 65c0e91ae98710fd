"""Input that must be read right or refused with a clear error, never misread: ids of
different types that compare equal (1, 1.0, True), categorical, pyarrow and dask columns,
ids ending in NUL, set-valued labels. (The hostile-input sweeps are in ``test_fuzz.py``.)"""

from __future__ import annotations

import numpy as np
import pytest

import crowdlearn as cl

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
