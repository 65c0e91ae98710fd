"""Hostile input at every public entry point: no crash, only documented errors, no NaN.

The reported cases come first, each as a plain test; then hypothesis sweeps:
the validators and label constructors in this process, every model's ``fit`` and
``predict_proba`` in a child process under a memory limit (``fuzz_cases.py``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crowdlearn as cl
from crowdlearn import CrowdLabels, DegenerateFitWarning
from crowdlearn._validation import check_int_array

import fuzz_cases as fc  # noqa: E402

ON_CI = os.environ.get("CI", "").lower() == "true"


# -- 1. nothing reaches the sparse products unchecked ---------------------------------------
def test_hand_made_crowd_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"label has values out of range: 10000000.*n_classes=2"):
        CrowdLabels(np.array([0, 1]), np.array([0, 1]), np.array([0, 10 ** 7]), 2, 2, 2)
    with pytest.raises(ValueError, match="expert has negative values"):
        CrowdLabels(np.array([0, 1]), np.array([0, -1]), np.array([0, 1]), 2, 2, 2)
    with pytest.raises(ValueError, match="same length"):
        CrowdLabels(np.array([0, 1]), np.array([0]), np.array([0, 1]), 2, 2, 2)
    with pytest.raises(ValueError, match="n_classes must be"):
        CrowdLabels(np.array([0]), np.array([0]), np.array([0]), 1, 1, 1)


def test_crowd_keeps_its_own_read_only_copies():
    item, expert, label = np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([1, 0, 1])
    crowd = cl.from_triples(item, expert, label)
    item[:] = 10 ** 7  # the caller's arrays change ...
    label[:] = -1
    assert crowd.item.tolist() == [0, 1, 1] and crowd.label.tolist() == [1, 0, 1]  # ... not ours
    with pytest.raises(ValueError):
        crowd.item[0] = 5
    with pytest.raises(ValueError):
        crowd.item.flags.writeable = True
    direct = CrowdLabels(item * 0, expert, label * 0, 2, 2, 2)
    assert not direct.item.flags.writeable


def test_tampered_crowd_is_checked_again_by_every_model():
    crowd = cl.from_triples([0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1])
    object.__setattr__(crowd, "label", np.array([0, 10 ** 7, 0, 0]))
    for model in (cl.MajorityVote(), cl.DawidSkene(), cl.OneCoinDawidSkene()):
        with pytest.raises(ValueError, match="out of range"):
            model.fit(crowd)


def test_predict_proba_hands_out_copies():
    crowd = cl.from_dense(np.array([[0, 0, 1], [1, 1, 1], [0, 0, -1]]))
    for model in (cl.DawidSkene(alpha=1.0), cl.MajorityVote(), cl.OneCoinDawidSkene()):
        model.fit(crowd)
        before = model.posterior_.copy()
        model.predict_proba()[:] = np.nan
        np.testing.assert_array_equal(model.posterior_, before)


# -- 2. sizes are bounded and explained ---------------------------------------------------
def test_triples_passed_as_a_dense_matrix():
    rng = np.random.default_rng(0)
    triples = np.column_stack([np.arange(100_000) + 1, rng.integers(0, 5, 100_000),
                               rng.integers(0, 2, 100_000)])
    with pytest.raises(ValueError, match=r"100,001 classes .* triples as a dense matrix"):
        cl.DawidSkene().fit(triples)


def test_one_stray_label_or_id():
    with pytest.raises(ValueError, match=r"10,000,001 classes.*size_limits"):
        cl.from_triples([0, 1], [0, 0], [1, 10 ** 7])
    with pytest.raises(ValueError, match=r"10,000,001 items.*only 2 labels.*from_table"):
        cl.from_triples([0, 10 ** 7], [0, 0], [1, 0])
    with pytest.raises(ValueError, match=r"1.*GiB|numbers"):
        cl.from_triples([0, 1], [0, 10 ** 7], [1, 999], n_experts=10 ** 7 + 1)


def test_the_limits_can_be_raised_on_purpose():
    with pytest.raises(ValueError, match="2,001 classes"):
        cl.from_triples([0, 1], [0, 0], [0, 2000])
    with cl.size_limits(max_classes=5000):
        assert cl.from_triples([0, 1], [0, 0], [0, 2000]).n_classes == 2001
    assert cl.get_size_limits().max_classes == 1000  # restored
    old = cl.set_size_limits(min_inferred=10)
    try:
        with pytest.raises(ValueError, match="items"):
            cl.from_triples([0, 500], [0, 0], [0, 1])
    finally:
        cl.set_size_limits(**old._asdict())
    with pytest.raises(ValueError, match="positive integer"):
        cl.set_size_limits(max_classes=0)
    with pytest.raises(ValueError, match="unknown size limit"):
        cl.set_size_limits(max_clases=10)


# -- 3. no silent misreads -----------------------------------------------------------------
def test_two_tuple_is_not_a_dense_matrix():
    with pytest.raises(ValueError, match="tuple of 2"):
        cl.DawidSkene().fit(([0, 1, 2], [0, 1, 1]))


def test_python_list_of_triples_is_ambiguous():
    rows = [[0, 0, 1], [0, 1, 1], [1, 0, 0], [1, 1, 0]]
    with pytest.raises(ValueError, match="ambiguous"):
        cl.DawidSkene().fit(rows)
    # with a missing marker a list of rows can only be a dense matrix
    assert cl.as_crowd_labels([[0, 1, -1], [1, 1, 1]]).n_labels == 5
    # and a numpy array is the documented dense form; a tuple is triples
    assert cl.as_crowd_labels(np.array(rows)).n_experts == 3
    assert cl.as_crowd_labels(tuple(np.array(rows).T)).n_labels == 4


def test_uint64_max_is_not_the_missing_marker():
    with pytest.raises(ValueError, match="too large to be an index: 18446744073709551615"):
        cl.from_dense(np.array([[0, 2 ** 64 - 1], [1, 1]], dtype=np.uint64))
    with pytest.raises(ValueError, match="too large"):
        cl.from_triples(np.array([0], dtype=np.uint64), [0], np.array([2 ** 64 - 1],
                                                                      dtype=np.uint64))
    with pytest.raises(ValueError, match="too large"):
        check_int_array([2 ** 70], "x")


def test_from_table_never_merges_ids_of_different_types():
    with pytest.raises(ValueError, match="mix types"):
        cl.from_table(["a", "b", "c"], ["1", 1, True], [0, 1, 1])
    with pytest.raises(ValueError, match="mix types"):
        cl.from_table([1, True, 2], ["w", "w", "w"], [0, 1, 1])
    crowd = cl.from_table(["a", "b"], ["1", "2"], ["x", "y"])
    assert crowd.expert_ids.tolist() == ["1", "2"]
    with pytest.raises(ValueError, match="unknown worker"):
        cl.from_table(["a"], [1], ["x"], expert_ids=crowd.expert_ids, classes=["x", "y"])


def test_unknown_worker_id_on_a_model_fitted_without_ids():
    ds = cl.DawidSkene(alpha=1.0).fit(np.array([[0, 0, 1], [1, 1, 1], [0, 0, 0], [1, 0, 1]]))
    new = cl.from_table(["t1", "t1"], ["w99", "w7"], [0, 1])
    with pytest.raises(ValueError, match="without identifiers"):
        ds.predict_proba(new)
    # integer worker ids are read as the model's expert indices, and checked
    with pytest.raises(ValueError, match="unknown expert 9"):
        ds.predict_proba(cl.from_table(["t1", "t1"], [9, 2], [0, 1]))
    ok = ds.predict_proba(cl.from_table(["t1", "t1"], [0, 2], [0, 1]))
    np.testing.assert_allclose(ok, ds.predict_proba(([0, 0], [0, 2], [0, 1])))


def test_dataframe_is_read_as_a_table_not_a_matrix():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"task": [10, 10, 11, 11], "worker": [5, 6, 5, 6],
                       "label": [1, 1, 0, 1]})
    crowd = cl.as_crowd_labels(df)
    assert (crowd.n_items, crowd.n_experts, crowd.n_labels) == (2, 2, 4)
    with pytest.raises(ValueError, match="columns"):
        cl.as_crowd_labels(pd.DataFrame({"a": [1], "b": [2], "c": [0]}))


def test_only_value_and_type_errors_in_our_words():
    cases = [lambda: cl.from_dense([[0, 1], [1]]),
             lambda: cl.from_dense([["a", "b"]]),
             lambda: cl.from_dense(np.array([[0, 1 + 2j]])),
             lambda: cl.from_triples({1, 2}, [0], [0]),
             lambda: cl.from_triples([None], [0], [0]),
             lambda: cl.DawidSkene().fit("labels"),
             lambda: cl.DawidSkene().fit(np.array([[0, 1]]), X=[["a", "b"]]),
             lambda: cl.LogisticAnnotators().fit(np.array([[0, 1], [1, 1]]),
                                                 np.array([[1j], [2]]))]
    for case in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert fc.check_call("case", case) is None


# -- 3b. issue 28: one case per cause of a silent misread -----------------------------------
def test_masked_dense_matrix_reads_masked_entries_as_missing():
    m = np.ma.masked_array([[0, 1, 1], [1, 0, 1]], mask=[[0, 0, 1], [0, 0, 0]])
    crowd = cl.from_dense(m)
    assert crowd.n_labels == 5
    np.testing.assert_array_equal(crowd.to_dense(), [[0, 1, -1], [1, 0, 1]])
    assert cl.as_crowd_labels(m).n_labels == 5
    # a float masked matrix whose hidden entries are NaN is fine too
    mf = np.ma.masked_invalid(np.array([[0.0, np.nan], [1.0, 1.0]]))
    assert cl.from_dense(mf).n_labels == 3
    assert cl.DawidSkene().fit(mf).predict().shape == (2,)


def test_masked_arrays_elsewhere_are_refused_not_unmasked():
    masked = np.ma.masked_array([0, 1], mask=[0, 1])
    with pytest.raises(ValueError, match="masked array with 1 masked entry"):
        cl.from_triples(masked, [0, 0], [1, 1])
    with pytest.raises(ValueError, match="masked array"):
        cl.from_table(np.ma.masked_array(["a", "b"], mask=[0, 1]), ["w", "w"], [1, 0])
    with pytest.raises(ValueError, match="masked array"):
        check_int_array(masked, "x")
    # nothing masked: the data is read as it is
    assert check_int_array(np.ma.masked_array([0, 1]), "x").tolist() == [0, 1]


def test_hand_made_crowd_ids_duplicate_nan_or_mixed_are_refused():
    parts = (np.array([0, 1]), np.array([0, 0]), np.array([0, 1]), 2, 1, 2)
    with pytest.raises(ValueError, match="duplicates"):
        CrowdLabels(*parts, item_ids=np.array(["a", "a"]))
    with pytest.raises(ValueError, match="NaN"):
        CrowdLabels(*parts, item_ids=np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="mix types"):
        CrowdLabels(*parts, item_ids=np.array(["1", 1], dtype=object))
    with pytest.raises(ValueError, match="duplicates"):
        CrowdLabels(*parts, class_ids=[3, 3])
    ok = CrowdLabels(*parts, item_ids=["b", "a"], class_ids=[True, False])
    assert ok.item_ids.tolist() == ["b", "a"] and not ok.item_ids.flags.writeable


def test_trailing_nul_is_not_dropped_into_another_id():
    with pytest.raises(ValueError, match="NUL"):
        cl.from_table(["a", "b", "c"], ["w", "w", "w"], ["x", "x\x00", "y"])
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"task": ["a", "b", "c"], "worker": ["w", "w", "w"],
                       "label": pd.array(["x", "x\x00", "y"], dtype="string")})
    with pytest.raises(ValueError, match="NUL"):
        cl.as_crowd_labels(df)


def test_to_dense_missing_marker_never_collides_with_a_label():
    crowd = cl.from_triples([0, 1], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="integer marker"):
        crowd.to_dense(missing=1.5)
    with pytest.raises(ValueError, match="also a class"):
        crowd.to_dense(missing=1)
    np.testing.assert_array_equal(crowd.to_dense(missing=7), [[0, 7], [7, 1]])


def test_strings_are_not_read_as_numbers_or_flags():
    from crowdlearn import selection
    from crowdlearn.experiments import compare_on_simulated_crowd
    with pytest.raises(ValueError, match="risk must be a number"):
        selection.expected_surrogate_risk("0.1", [0.1, 0.2])
    with pytest.raises(ValueError, match="error_rates"):
        selection.expected_surrogate_risk(0.1, "0.1")
    with pytest.raises(ValueError, match="error_rates"):
        selection.expected_surrogate_risk(0.1, np.array(["0.1", "0.2"]))
    with pytest.raises(ValueError, match="predictions must be an array of 0/1"):
        selection.surrogate_risk(np.array(["0", "1"]), np.array([[0, 1], [1, 1]]))
    with pytest.raises(ValueError, match="soft must be True or False"):
        cl.MajorityVoteLogistic(soft="y").fit(np.array([[0, 1], [1, 1]]), np.array([[0.], [1.]]))
    labels, X = np.array([[0, 1, 0], [1, 1, 1]] * 5), np.arange(10.0)[:, None]
    with pytest.raises(ValueError, match="refit must be True or False"):
        selection.select_by_surrogate({"mv": cl.MajorityVoteLogistic()}, labels, X, refit="no")
    with pytest.raises(ValueError, match="refit must be True or False"):
        selection.select_penalty(labels, X, refit="no")
    with pytest.raises(ValueError, match="error_rates"):
        compare_on_simulated_crowd("0.1")
    # numbers still work, numpy scalars included
    assert selection.expected_surrogate_risk(np.float64(0.2), [0.5, 0.15, 0.47]) == \
        pytest.approx(0.424)


def test_dataset_accuracy_of_nan_predictions_is_refused_not_zero():
    birds = cl.datasets.load_bluebirds()
    with pytest.raises(ValueError, match="NaN"):
        birds.accuracy(np.full(birds.n_items, np.nan))
    assert 0 < birds.accuracy(np.zeros(birds.n_items)) < 1


def test_confusion_prior_complex_or_overflowing_is_refused():
    from crowdlearn.aggregation.dawid_skene import m_step
    labels = np.array([[0, 1, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]])
    with pytest.raises(ValueError, match="confusion_prior .*complex"):
        cl.DawidSkene(confusion_prior=np.eye(2) * (1 + 1j)).fit(labels)
    with pytest.raises(ValueError, match="complex"):
        m_step(np.ones((3, 2, 2)), np.ones(2), confusion_prior=np.eye(2) * 1j)
    for huge in (1e307, 1e308):
        with pytest.raises(ValueError, match="at most 1e\\+12"):
            cl.DawidSkene(confusion_prior=np.eye(2) * huge).fit(labels)
    with pytest.raises(ValueError, match="at most"):
        cl.OneCoinDawidSkene(confusion_prior=np.eye(2) * 1e300).fit(labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert np.isfinite(cl.DawidSkene(confusion_prior=np.eye(2) * 1e12).fit(labels)
                           .objective_)


def test_nat_task_ids_are_refused():
    pd = pytest.importorskip("pandas")
    ds = cl.DawidSkene().fit(pd.DataFrame({"task": ["a", "a", "b", "b"],
                                           "worker": ["x", "y", "x", "y"],
                                           "label": [0, 1, 1, 1]}))
    times = np.array(["NaT", "2020-01-01"], dtype="M8[D]")
    with pytest.raises(ValueError, match="NaT"):
        ds.predict_proba(pd.DataFrame({"task": times, "worker": ["x", "y"], "label": [0, 1]}))
    with pytest.raises(ValueError, match="NaT"):
        cl.from_table(times, ["x", "y"], [0, 1])
    ok = cl.from_table(times[[1, 1]], ["x", "y"], [0, 1])
    assert ok.n_items == 1


def test_posterior_entropy_of_one_class_is_zero_not_nan():
    from crowdlearn.metrics import posterior_entropy
    np.testing.assert_array_equal(posterior_entropy(np.ones((2, 1)), normalized=True), [0, 0])
    np.testing.assert_array_equal(posterior_entropy(np.ones((2, 1))), [0, 0])


def test_getters_hand_out_copies_or_locked_arrays():
    labels = np.array([[0, 0, 1], [1, 1, 0], [0, 1, 1], [1, 0, 0]])
    for model, own in ((cl.GLAD(max_iter=5), "ability_"),
                       (cl.OneCoinDawidSkene(max_iter=5), "accuracy_")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.ConvergenceWarning)
            model.fit(labels)
        before = getattr(model, own).copy()
        skills = model.skills_
        assert skills is not getattr(model, own)
        skills[:] = 99.0
        np.testing.assert_array_equal(getattr(model, own), before)
    mv = cl.MajorityVote().fit(labels)
    with pytest.raises(ValueError):
        mv.labels_[:] = 7


def test_read_only_crowd_arrays_cannot_be_unlocked_through_base():
    crowd = cl.from_table(["a", "b"], ["x", "y"], [0, 1])
    for arr in (crowd.item, crowd.expert, crowd.label, crowd.item_ids, crowd.class_ids):
        with pytest.raises(ValueError):
            arr.flags.writeable = True
        if isinstance(arr.base, np.ndarray):
            with pytest.raises(ValueError):
                arr.base.flags.writeable = True


def test_bootstrap_replicates_are_bounded_by_the_size_limits():
    from crowdlearn.metrics import worker_quality_intervals
    labels = np.array([[0, 1, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]])
    ds = cl.DawidSkene(alpha=1.0).fit(labels)
    with pytest.raises(ValueError, match=r"n_boot=1,000,000,000 .*max_cells"):
        worker_quality_intervals(ds, labels, n_boot=10 ** 9)
    with cl.size_limits(max_cells=100):
        with pytest.raises(ValueError, match="size_limits"):
            worker_quality_intervals(ds, labels, n_boot=20)
    assert worker_quality_intervals(ds, labels, n_boot=20, random_state=0).n_boot == 20


def test_dataframe_features_with_array_labels_are_not_read_by_position():
    pd = pytest.importorskip("pandas")
    labels = np.array([[0, 1, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]])
    X = pd.DataFrame({"f": [0, 1, 1, 0]}, index=[3, 2, 1, 0])
    for model in (cl.DawidSkene(alpha=1.0), cl.LogisticAnnotators(max_iter=3)):
        with pytest.raises(ValueError, match="read by position"):
            model.fit(labels, X)
    with pytest.raises(ValueError, match="read by position"):
        cl.DawidSkene(alpha=1.0).fit(labels, X.set_index(pd.Index(list("abcd"))))
    fitted = cl.DawidSkene(alpha=1.0).fit(labels, X.reset_index(drop=True))
    np.testing.assert_allclose(fitted.posterior_, cl.DawidSkene(alpha=1.0).fit(
        labels, X.reset_index(drop=True).to_numpy()).posterior_)


# -- 4. degenerate fits say so -------------------------------------------------------------
def test_one_label_experts_with_alpha_zero_warn():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 300)
    item = np.repeat(np.arange(300), 3)
    crowd = cl.from_triples(item, np.arange(900), truth[item])
    with pytest.warns(DegenerateFitWarning, match=r"900 experts gave a single label.*alpha") \
            as caught:
        cl.DawidSkene(alpha=0).fit(crowd)
    # it points at the line that called fit, however deep in the package it is issued
    assert [w.filename for w in caught if w.category is DegenerateFitWarning] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)
        assert (cl.OneCoinDawidSkene().fit(crowd).predict() == truth).mean() == 1.0


def test_healthy_fit_does_not_warn():
    sim = cl.simulate.simulate_crowd(400, cl.simulate.random_confusion(5, 3, random_state=0),
                                     random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)
        cl.DawidSkene().fit(sim.labels)


def test_huge_features_are_refused_not_returned_unmoved():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)) * 1e300
    labels = rng.integers(0, 2, size=(40, 3))
    for model in (cl.LogisticAnnotators(), cl.SparseExpertsEM(), cl.MajorityVoteLogistic()):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="Standardise"):
                model.fit(labels, X)


# -- 5. issue 40: hostile input is normal input, one case per cause ------------------------
def _cli(args, capsys):
    """``crowdlearn.cli.main(args)`` in process: exit status and stderr."""
    from crowdlearn.cli import main

    status = main([str(a) for a in args])
    return status, capsys.readouterr().err


def _answers(folder):
    pd = pytest.importorskip("pandas")
    path = folder / "answers.csv"
    pd.DataFrame({"task": list("aabbcc"), "worker": list("xyxyxy"),
                  "label": [0, 1, 1, 1, 0, 0]}).to_csv(path, index=False)
    return path


def test_cli_refuses_two_outputs_in_one_file_or_an_output_on_an_input(tmp_path, capsys):
    answers, out = _answers(tmp_path), tmp_path / "o.csv"
    for second in (["--probas", out], ["--skills", tmp_path / "." / "o.csv"]):
        status, err = _cli(["aggregate", answers, "--model", "mv", "--out", out, *second],
                           capsys)
        assert status == 2 and "is the same file as --out" in err, err
        assert not out.exists()  # nothing written
    status, err = _cli(["aggregate", answers, "--out", answers], capsys)
    assert status == 2 and "same file as the answers file" in err
    assert answers.read_text().startswith("task,worker,label")
    # devices may repeat: /dev/null twice discards both
    assert _cli(["aggregate", answers, "--model", "mv", "--out", os.devnull,
                 "--probas", os.devnull], capsys)[0] == 0


def test_cli_checks_every_output_before_writing_any(tmp_path, capsys):
    answers, out = _answers(tmp_path), tmp_path / "labels.csv"
    (tmp_path / "folder").mkdir()
    status, err = _cli(["aggregate", answers, "--out", out, "--probas", tmp_path / "folder"],
                       capsys)
    assert status == 2 and "--probas" in err and "is a directory" in err
    assert not out.exists()
    status, err = _cli(["aggregate", answers, "--out", out, "--skills",
                        tmp_path / "nowhere" / "s.csv", "--model", "mv"], capsys)
    assert status == 2 and "does not exist" in err and not out.exists()


def test_cli_refuses_a_column_named_twice(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("task,worker,label,label\na,x,1,0\nb,x,0,1\nb,y,0,0\n")
    status, err = _cli(["aggregate", path], capsys)
    assert status == 2 and "names the column(s) 'label' more than once" in err


def test_cli_refuses_a_million_columns_from_the_header_alone(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(10 ** 6)) + "\n" + "1," * 10 + "\n")
    status, err = _cli(["aggregate", path], capsys)
    assert status == 2 and "more than 10,000 columns" in err


def test_cli_refuses_labels_that_are_lists(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "lists.parquet"
    pd.DataFrame({"task": ["a", "a", "b"], "worker": ["x", "y", "x"],
                  "label": [[1, 2], [2], [1]]}).to_parquet(path)
    status, err = _cli(["aggregate", path], capsys)
    assert status == 2 and "must be scalars" in err and "ambiguous" not in err
    with pytest.raises(ValueError, match="must be scalars"):
        cl.as_crowd_labels(pd.DataFrame({"task": [0, 1], "worker": [0, 0],
                                         "label": [[0], [1]]}))


def test_cli_names_a_folder_a_device_and_an_empty_file(tmp_path, capsys):
    pytest.importorskip("pandas")
    (tmp_path / "empty.csv").write_text("")
    for path, says in ((tmp_path, "is a directory"), (os.devnull, "is not a regular file"),
                       (tmp_path / "empty.csv", "the file is empty"),
                       (tmp_path / "nope.csv", "no such file")):
        status, err = _cli(["aggregate", path], capsys)
        assert status == 2 and says in err, err


def test_cli_closed_stdout_exits_quietly_with_141(tmp_path):
    pytest.importorskip("pandas")
    answers = _answers(tmp_path)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    proc = subprocess.Popen([sys.executable, "-m", "crowdlearn", "aggregate", str(answers),
                             "--model", "mv"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the reader is gone before a line is written, as `| head -0`
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141
    assert err == b""


def test_a_dataframe_with_a_column_twice_is_refused_by_every_reader():
    pd = pytest.importorskip("pandas")
    from crowdlearn.metrics import krippendorff_alpha

    df = pd.DataFrame([[0, 0, 1, 1], [0, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 1]],
                      columns=["task", "worker", "label", "label"])
    for read in (cl.as_crowd_labels, krippendorff_alpha, cl.MajorityVote().fit,
                 lambda d: cl.DawidSkene().fit(d, np.ones((2, 1)))):
        with pytest.raises(ValueError, match=r"more than one column named 'label' \(2 times\)"):
            read(df)


def test_vote_counts_refuses_nan_negative_or_misshapen_weights():
    crowd = cl.from_triples([0, 0, 1], [0, 1, 0], [0, 1, 1])
    for weights, says in ((np.nan, "shape"), ([1.0, np.nan, 1.0], "finite"),
                          ([1.0, -1.0, 1.0], ">= 0"), ([1.0, 1.0], "shape"),
                          (["1", "1", "1"], "real numbers"), ([1.0, np.inf, 1.0], "finite")):
        with pytest.raises(ValueError, match=says):
            crowd.vote_counts(weights=weights)
    np.testing.assert_array_equal(crowd.vote_counts(weights=[0.5, 2.0, 0.0]),
                                  [[0.5, 2.0], [0.0, 0.0]])


def test_interval_alpha_of_huge_labels_is_the_alpha_of_the_same_labels_scaled_down():
    pd = pytest.importorskip("pandas")
    from crowdlearn.metrics import krippendorff_alpha

    labels = [1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 0.5, 1.0]
    frame = pd.DataFrame({"task": [0, 0, 1, 1, 2, 2, 3, 3], "worker": [0, 1] * 4})
    small = krippendorff_alpha(frame.assign(label=labels), distance="interval")
    for scale in (1e200, 1e-200, 1e307):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            big = krippendorff_alpha(frame.assign(label=[v * scale for v in labels]),
                                     distance="interval")
        assert big == pytest.approx(small, rel=1e-12) and np.isfinite(big)


def test_masi_alpha_reads_list_labels_as_sets():
    pd = pytest.importorskip("pandas")
    from crowdlearn.metrics import krippendorff_alpha

    frame = pd.DataFrame({"task": [0, 0, 1, 1, 2, 2], "worker": [0, 1] * 3})
    lists = [[1, 2], [2, 1], ["a"], ["a", 1], [], [2]]
    as_sets = [frozenset(v) for v in lists]
    for distance in ("masi", "jaccard"):
        assert krippendorff_alpha(frame.assign(label=lists), distance=distance) == \
            krippendorff_alpha(frame.assign(label=as_sets), distance=distance)
    with pytest.raises(TypeError, match="cannot be set members"):
        krippendorff_alpha(frame.assign(label=[[[1]], [2]] * 3), distance="masi")


def test_accuracy_on_aggregates_per_worker_never_nan():
    pd = pytest.importorskip("pandas")
    from crowdlearn.metrics import accuracy_on_aggregates

    crowd = cl.from_triples([0, 1, 1], [0, 0, 1], [0, 1, 1], n_experts=3)
    per_worker = accuracy_on_aggregates(crowd, np.array([0, 1]), by="worker")
    assert isinstance(per_worker, np.ma.MaskedArray)
    assert per_worker.mask.tolist() == [False, False, True]  # worker 2 gave no label
    assert per_worker.tolist() == [1.0, 1.0, None] and per_worker.mean() == 1.0
    per_task = accuracy_on_aggregates(crowd, np.array([-1, 1]), by="task")
    assert per_task.mask.tolist() == [True, False] and not np.isnan(per_task.data).any()
    df = pd.DataFrame({"task": ["a", "b", "b"], "worker": ["x", "x", "y"], "label": [0, 1, 1]})
    series = accuracy_on_aggregates(df, pd.Series({"b": 1}), by="worker")
    assert series.to_dict() == {"x": 1.0, "y": 1.0}
    assert accuracy_on_aggregates(df, pd.Series({"b": 1}), by="task").to_dict() == {"b": 1.0}


def test_gold_majority_vote_default_skill_is_an_accuracy():
    labels, gold = np.array([[0, 0, 1], [1, 1, -1], [0, 1, 1]]), np.array([0, -1, -1])
    for bad in (2.0, -0.1, np.nan, np.inf):
        for weights in ("linear", "log-odds"):
            with pytest.raises(ValueError, match=r"default_skill must be an accuracy in \[0, 1\]"):
                cl.GoldMajorityVote(default_skill=bad, weights=weights).fit(labels, gold)
    ok = cl.GoldMajorityVote(default_skill=1.0).fit(np.array([[0, 0, -1], [1, -1, 1]]),
                                                   np.array([0, -1]))
    assert ok.skills_.tolist() == [1.0, 1.0, 1.0]


def test_spammer_score_reads_a_2d_array_as_one_workers_matrix():
    from crowdlearn.metrics import spammer_score

    one = spammer_score(np.eye(3))
    assert isinstance(one, float) and one == 1.0       # one perfect worker, not 3 rows
    stack = spammer_score(np.eye(3)[None])
    assert isinstance(stack, np.ndarray) and stack.tolist() == [1.0]
    with pytest.raises(ValueError, match=r"\(n_experts, K, K\) or \(K, K\)"):
        spammer_score(np.ones(3) / 3)
    with pytest.raises(ValueError, match="square"):
        spammer_score(np.full((4, 2), 0.5))     # four workers' rows are not a matrix


def test_replay_policies_sizes_are_bounded_and_policies_any_iterable():
    from crowdlearn.active import MAX_REPLAYS, replay_policies

    sim = cl.simulate.simulate_crowd(30, cl.simulate.random_confusion(4, 2, random_state=0),
                                     labels_per_item=3, random_state=1)
    buyable = 30 * 2  # three distinct workers per item, the first label is the start
    with pytest.raises(ValueError, match=r"n_replays=1,000,000,000 .*at most 10,000"):
        replay_policies(sim.labels, sim.truth, n_replays=10 ** 9)
    assert MAX_REPLAYS == 10_000
    with pytest.raises(ValueError, match=rf"n_rounds=1,000,000,000 .*only {buyable} label.*"
                                         rf"at most {buyable}"):
        replay_policies(sim.labels, sim.truth, n_rounds=10 ** 9)
    result = replay_policies(sim.labels, sim.truth, policies=(p for p in ("random", "model")),
                             n_replays=1, n_rounds=2)
    assert result.policies == ("random", "model")
    for bad in ((p for p in ("random", 7)), iter(["random", "random"]), 5, "random"):
        with pytest.raises(ValueError, match="policies must be distinct names"):
            replay_policies(sim.labels, sim.truth, policies=bad, n_replays=1, n_rounds=1)


def test_run_em_with_a_nan_objective_is_the_callers_value_error():
    from crowdlearn.em import fit_em, run_em

    def e_step(theta):
        return np.array([[1.0]]), (np.nan if theta >= 2 else -1.0 / (1 + theta))

    for run in (lambda: run_em(0.0, e_step, lambda q: 2.0),
                lambda: run_em(0.0, e_step, lambda q: 2.0, accelerate=(np.atleast_1d, float)),
                lambda: fit_em(lambda r: 0.0, e_step, lambda q: 2.0)):
        with pytest.raises(ValueError, match="objective returned by e_step is NaN at "
                                             "iteration 1") as caught:
            run()
        assert "bug" not in str(caught.value)
    with pytest.raises(TypeError, match="objective a number"):
        run_em(0.0, lambda p: (np.array([[1.0]]), "high"), lambda q: 0.0)


def test_multi_label_sizes_are_bounded_before_anything_is_built():
    from crowdlearn.aggregation.multilabel import MultiCrowdLabels, from_quadruples

    quads = ([0, 1, 1, 0], [0, 0, 1, 1], [0, 0, 1, 1], [1, 0, 1, 0])
    with pytest.raises(ValueError, match=r"10,000,001 classes"):
        cl.MultiLabelDawidSkene().fit((*quads[:3], [1, 0, 10 ** 7, 0]))
    with pytest.raises(ValueError, match=r"10,000,001 targets .*n_targets="):
        cl.MultiLabelDawidSkene().fit((quads[0], [0, 0, 0, 0], [0, 0, 1, 10 ** 7], quads[3]))
    with pytest.raises(ValueError, match=r"max_memory|max_cells"):
        from_quadruples(*quads, n_targets=10 ** 7)
    with pytest.raises(ValueError, match=r"max_memory|max_cells|at most"):
        MultiCrowdLabels(*(np.array(a) for a in quads), 2, 2, 10 ** 7, (2,) * 10 ** 7)
    with cl.size_limits(max_cells=2 ** 30, max_memory=2 ** 40):  # the limits, not the data
        assert from_quadruples(*quads, n_targets=10 ** 3).n_targets == 1000


def test_simulate_crowd_refuses_sizes_beyond_the_limits_before_drawing():
    conf = cl.simulate.random_confusion(5, 3, random_state=0)
    with pytest.raises(ValueError, match=r"simulate_crowd\(n_items=10,000,000,000\).*max_cells"):
        cl.simulate.simulate_crowd(10 ** 10, conf)
    with cl.size_limits(max_memory=2 ** 20):
        with pytest.raises(ValueError, match="max_memory"):
            cl.simulate.simulate_crowd(100_000, conf)
    assert cl.simulate.simulate_crowd(10, conf, random_state=0).labels.n_items == 10


def test_sparse_experts_path_flags_must_be_booleans():
    rng = np.random.default_rng(0)
    labels, X = rng.integers(0, 2, size=(20, 3)), rng.normal(size=(20, 2))
    for bad in ("x", "no", 1, 0, None, 2.0):
        with pytest.raises(ValueError, match="restart_from_vote must be True or False"):
            cl.sparse_experts_path(labels, X, lambdas=[1.0], restart_from_vote=bad)
    path = cl.sparse_experts_path(labels, X, lambdas=[1.0], restart_from_vote=np.False_)
    assert path.lambdas.tolist() == [1.0]


def test_explorer_sizes_are_bounded():
    pytest.importorskip("anywidget")
    from crowdlearn.widgets import VoteExplorer
    from crowdlearn.widgets import em_steps

    with pytest.raises(ValueError, match="n_items must be <= 20000"):
        VoteExplorer(n_items=10 ** 9)
    assert VoteExplorer(n_items=20_000).settings["nItems"] == 20_000
    with pytest.raises(ValueError, match="n_grid must be <= 101"):
        em_steps.basin_map(n_grid=10 ** 5)
    with pytest.raises(ValueError, match="max_iter must be <= 10000"):
        em_steps.fixed_point(max_iter=10 ** 9)
    with pytest.raises(ValueError, match="n_half must be <= 10000"):
        em_steps.half_steps(n_half=10 ** 9)


def _renumbered(seed, per, K):
    """A crowd with many ties, and the same crowd with its items, workers and rows
    renumbered: ``(crowd, renumbered, item permutation, worker permutation)``."""
    rng = np.random.default_rng(seed)
    n, J = 40, 8
    item = np.repeat(np.arange(n), per)
    expert = np.concatenate([rng.choice(J, per, replace=False) for _ in range(n)])
    label = rng.integers(0, K, item.size)
    pi, pw, rows = rng.permutation(n), rng.permutation(J), rng.permutation(item.size)
    return (cl.from_triples(item, expert, label, n_items=n, n_experts=J, n_classes=K),
            cl.from_triples(pi[item][rows], pw[expert][rows], label[rows], n_items=n,
                            n_experts=J, n_classes=K), pi, pw)


def test_votes_do_not_depend_on_how_items_and_workers_are_numbered():
    skills = np.array([0.6, 0.7, 0.6, 0.7, 0.8, 0.9, 0.65, 0.75])  # equal skills: exact ties
    votes = {
        "MajorityVote-lowest": lambda c, pw, X, g: cl.MajorityVote(tie_break="lowest").fit(c),
        "Wawa": lambda c, pw, X, g: cl.Wawa().fit(c),
        "ZeroBasedSkill": lambda c, pw, X, g: cl.ZeroBasedSkill().fit(c),
        "ZeroBasedSkill-log-odds": lambda c, pw, X, g: cl.ZeroBasedSkill(
            weights="log-odds").fit(c),
        "GoldMajorityVote": lambda c, pw, X, g: cl.GoldMajorityVote(default_skill=0.6).fit(
            c, g),
        "WeightedMajorityVote": lambda c, pw, X, g: cl.WeightedMajorityVote(
            skills=dict(zip(pw.tolist(), skills.tolist()))).fit(c),
        "WeightedMajorityVote-log-odds": lambda c, pw, X, g: cl.WeightedMajorityVote(
            skills=dict(zip(pw.tolist(), skills.tolist())), weights="log-odds").fit(c),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        for seed in range(15):
            for per, K in ((2, 2), (4, 3), (5, 2)):
                a, b, pi, pw = _renumbered(seed, per, K)
                gold = np.where(np.arange(40) < 8, np.arange(40) % K, -1)
                moved_gold = np.empty_like(gold)
                moved_gold[pi] = gold
                for name, fit in votes.items():
                    got = fit(a, np.arange(8), None, gold).predict()
                    again = fit(b, pw, None, moved_gold).predict()
                    np.testing.assert_array_equal(got, again[pi], err_msg=f"{name} {seed}")


def _tied_table(seed, n=60, prefix="t"):
    """A binary crowd of ``n`` tasks with two labels each (about half of them 1-1 ties),
    as a DataFrame of string ids, and the tasks' features by id."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    tasks = [f"{prefix}{k}" for k in range(n)]
    frame = pd.DataFrame({"task": np.repeat(tasks, 2), "worker": np.tile(["x", "y"], n),
                          "label": rng.integers(0, 2, 2 * n)})
    return frame, pd.DataFrame(rng.normal(size=(n, 2)), index=tasks)


@pytest.mark.parametrize("which", ["MajorityVote", "MajorityVoteLogistic"])
def test_random_ties_follow_the_item_not_its_position(which):
    """Reported: MajorityVoteLogistic changed its answer on 19 of 30 crowds when the ids
    were permuted: a draw per item in the items' order gave an item another coin when it
    moved. A tie now follows the item's id: shuffled rows and other items whose ids sort
    first (every position moves) change no item's answer."""
    import pandas as pd

    def votes(frame, X):
        if which == "MajorityVote":
            return cl.MajorityVote(random_state=0).fit(frame).labels_
        fitted = cl.MajorityVoteLogistic(lam=0.1, random_state=0).fit(frame, X)
        return pd.Series(fitted.vote_, index=sorted(frame["task"].unique()))

    for seed in range(10):
        frame, X = _tied_table(seed)
        before, after = _tied_table(seed + 100, n=25, prefix="a")  # ids sorting first
        moved = pd.concat([frame, before]).sample(frac=1.0, random_state=seed)
        first = votes(frame, X)
        again = votes(moved, pd.concat([X, after]))
        pd.testing.assert_series_equal(first, again.loc[first.index], check_names=False)
    # index-coded labels: the rows' order changes nothing either
    c = cl.from_triples(np.repeat(np.arange(40), 2), np.tile([0, 1], 40),
                        np.random.default_rng(1).integers(0, 2, 80))
    rows = np.random.default_rng(2).permutation(80)
    shuffled = cl.from_triples(c.item[rows], c.expert[rows], c.label[rows])
    assert (cl.MajorityVote().fit(c).predict() == cl.MajorityVote().fit(shuffled).predict()).all()


def test_identical_ties_still_split_evenly():
    """Keyed on the item, not on its votes: 1000 identical 1-1 ties (chapter 1's exercise)
    go about half each way under one seed, and each tie follows the seed."""
    tied = np.array([[0, 1]] * 1000)
    for seed in range(3):
        share = (cl.MajorityVote(random_state=seed).fit_predict(tied) == 0).mean()
        assert 0.45 < share < 0.55
    X = np.random.default_rng(0).normal(size=(1000, 2))
    vote = cl.MajorityVoteLogistic(random_state=0).fit(tied, X).vote_
    assert 0.45 < vote.mean() < 0.55
    one = cl.MajorityVote(random_state=0).fit_predict(tied)
    other = cl.MajorityVote(random_state=1).fit_predict(tied)
    assert 0.3 < (one == other).mean() < 0.7


# -- 7. sweeps -------------------------------------------------------------------------------
SWEEP = settings(max_examples=200, deadline=None, database=None,
                 derandomize=ON_CI)


@SWEEP
@given(st.one_of(fc.int_array(ndim=1), fc.int_array(ndim=2), fc.garbage, fc.any_scalar))
def test_fuzz_check_int_array(values):
    out = fc.check_call("check_int_array", check_int_array, values, "x", allow_empty=True)
    if out is not None:
        assert out.dtype == np.intp and out.ndim == 1
        if isinstance(values, np.ndarray):  # a copy, never a view of the caller's array
            assert not np.shares_memory(out, values)


@SWEEP
@given(fc.label_data())
def test_fuzz_as_crowd_labels(data):
    fc.check_crowd(fc.check_call("as_crowd_labels", cl.as_crowd_labels, data),
                   "as_crowd_labels")


@SWEEP
@given(fc.int_array(ndim=2), st.one_of(st.none(), st.integers(-1, 5), st.just(2.5)))
def test_fuzz_from_dense(matrix, n_classes):
    fc.check_crowd(fc.check_call("from_dense", cl.from_dense, matrix, n_classes=n_classes),
                   "from_dense")


@SWEEP
@given(st.tuples(fc.int_array(), fc.int_array(), fc.int_array()),
       st.lists(st.one_of(st.none(), st.integers(-1, 6), st.sampled_from([10 ** 9, 2 ** 63])),
                min_size=3, max_size=3))
def test_fuzz_from_triples(triples, sizes):
    out = fc.check_call("from_triples", cl.from_triples, *triples, n_items=sizes[0],
                        n_experts=sizes[1], n_classes=sizes[2])
    fc.check_crowd(out, "from_triples")


ids = st.one_of(st.integers(-3, 3), st.sampled_from(["1", "a", "", "b"]), st.booleans(),
                st.sampled_from([1.0, 2.5, float("nan"), None, b"x"]))


@SWEEP
@given(st.integers(0, 6).flatmap(lambda n: st.tuples(*(st.lists(ids, min_size=n, max_size=n)
                                                       for _ in range(3)))))
def test_fuzz_from_table(table):
    crowd = fc.check_call("from_table", cl.from_table, *table)
    fc.check_crowd(crowd, "from_table")
    if crowd is not None:  # a table read back gives the same identifiers, never merged ones
        for got, want in zip(crowd.to_table(), table):
            assert [type(g) for g in got.tolist()] == [type(w) for w in
                                                       np.asarray(got).tolist()]
            assert len(set(map(type, want))) == 1
            assert got.tolist() == list(want)


def test_fuzz_every_model_in_a_child_process():
    """fit / predict_proba of every label model on hostile input, in a child process
    limited to 4 GiB of address space: a crash or a runaway allocation fails here."""
    def limit():  # pragma: no cover - runs in the child
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2 ** 30, 4 * 2 ** 30))

    args = [sys.executable, str(Path(__file__).with_name("fuzz_cases.py"))]
    if ON_CI:
        args.append("--derandomize")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600,
                          preexec_fn=limit, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode in (0, 1), (f"the fuzz child died with code {proc.returncode} "
                                       f"(a crash?)\n{proc.stderr[-3000:]}")
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert len(results) == 6


def test_binary_feature_models_map_table_ids_at_predict_time():
    rng = np.random.default_rng(0)
    n = 60
    X = rng.normal(size=(n, 2))
    truth = (X[:, 0] > 0).astype(int)
    items = np.repeat([f"t{i}" for i in range(n)], 3)
    workers = np.tile(["a", "b", "c"], n)
    labels = np.where(rng.random(3 * n) < 0.8, np.repeat(truth, 3), 1 - np.repeat(truth, 3))
    crowd = cl.from_table(items, workers, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.ConvergenceWarning)
        for model in (cl.LogisticAnnotators(max_iter=20), cl.SparseExpertsEM(max_iter=20)):
            model.fit(crowd, X)
            # only workers b and c: their own codes in this table are 0 and 1
            new = cl.from_table(["x", "x"], ["b", "c"], [1, 1], classes=model.class_ids_)
            np.testing.assert_allclose(model.predict_proba(new, X=X[:1]),
                                       model.predict_proba(([0, 0], [1, 2], [1, 1]), X=X[:1]))
            with pytest.raises(ValueError, match=r"unknown expert\(s\) \['zz'\]"):
                model.predict_proba(cl.from_table(["x", "x"], ["zz", "b"], [1, 0]), X=X[:1])
            index_coded = type(model)(max_iter=20).fit(crowd.to_dense(), X)
            with pytest.raises(ValueError, match="without identifiers"):
                index_coded.predict_proba(cl.from_table(["x", "x"], ["c", "b"], [1, 0]),
                                          X=X[:1])
