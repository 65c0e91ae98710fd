"""Tests for the command line (crowdlearn.cli): ``python -m crowdlearn aggregate`` end to end
in a subprocess, and ``main([...])`` in process for every model, output and error."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from crowdlearn.cli import MODELS, main  # noqa: E402 - after the pandas check
from crowdlearn.simulate import random_confusion, simulate_crowd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# a child Python imports this checkout's crowdlearn, wherever the installed one lives
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
NAMES = np.array(["cat", "dog", "emu"])
N_ITEMS = 40


def _crowd(seed=0):
    """A small simulated crowd with string task, worker and label ids (and its truth)."""
    sim = simulate_crowd(N_ITEMS, random_confusion(6, 3, accuracy=(0.7, 0.9), random_state=seed),
                         random_state=seed + 1)
    c = sim.labels
    answers = pd.DataFrame({"task": [f"t{i:03d}" for i in c.item],
                            "worker": [f"w{r:02d}" for r in c.expert],
                            "label": NAMES[c.label]})
    truth = pd.DataFrame({"task": [f"t{i:03d}" for i in range(N_ITEMS)],
                          "label": NAMES[sim.truth]})
    return answers, truth


@pytest.fixture
def files(tmp_path):
    answers, truth = _crowd()
    answers.to_csv(tmp_path / "answers.csv", index=False)
    truth.iloc[:15].to_csv(tmp_path / "gold.csv", index=False)
    return tmp_path, answers, truth


def _run(args, capsys):
    """``main(args)``: exit status, stdout, stderr."""
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def _fails(args, capsys, *fragments):
    status, out, err = _run(args, capsys)
    assert status == 2, (out, err)
    assert err.startswith("crowdlearn: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
    return err


# -- end to end -------------------------------------------------------------------------------
def test_python_m_crowdlearn_aggregate_end_to_end(files):
    tmp, answers, _ = files
    done = subprocess.run([sys.executable, "-m", "crowdlearn", "aggregate", "answers.csv",
                           "--model", "ds", "--gold", "gold.csv", "--out", "labels.csv",
                           "--probas", "probas.csv", "--score-only"],
                          cwd=tmp, env=ENV, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("accuracy on 15 gold tasks: ")
    labels = pd.read_csv(tmp / "labels.csv")
    assert list(labels.columns) == ["task", "label"]
    assert sorted(labels.task) == sorted(set(answers.task))
    probas = pd.read_csv(tmp / "probas.csv")
    assert list(probas.columns) == ["task", "cat", "dog", "emu"]


def test_python_m_crowdlearn_error_is_one_line_and_status_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "crowdlearn", "aggregate", "missing.csv"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2
    assert done.stderr == "crowdlearn: error: missing.csv: no such file\n"


def test_the_console_script_is_declared():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"crowdlearn": "crowdlearn.cli:main"}


# -- every model -------------------------------------------------------------------------------
@pytest.mark.parametrize("model", sorted(set(MODELS) - {"gmv"}))
def test_every_model_gives_labels_and_probabilities_by_original_id(model, files, capsys):
    tmp, answers, truth = files
    status, out, err = _run(["aggregate", tmp / "answers.csv", "--model", model,
                             "--probas", tmp / "p.csv", "--random-state", 0], capsys)
    assert status == 0, err
    labels = pd.read_csv(pd.io.common.StringIO(out))
    assert list(labels.columns) == ["task", "label"]
    assert sorted(labels.task) == sorted(set(answers.task))  # every task once, ids kept
    assert set(labels.label) <= set(NAMES)                    # labels as given, not indices
    merged = labels.merge(truth, on="task", suffixes=("", "_true"))
    assert (merged.label == merged.label_true).mean() > 0.7   # a crowd of 70-90% workers
    probas = pd.read_csv(tmp / "p.csv").set_index("task")
    assert list(probas.columns) == list(NAMES)
    np.testing.assert_allclose(probas.sum(axis=1), 1.0, rtol=1e-9)
    # the hard label is a most probable class (of the same task: rows matched by id)
    rows = probas.loc[labels.task].to_numpy()
    chosen = rows[np.arange(len(labels)), [list(NAMES).index(v) for v in labels.label]]
    np.testing.assert_allclose(chosen, rows.max(axis=1), rtol=1e-12)


def test_gold_majority_vote_needs_gold_and_uses_it(files, capsys):
    tmp, _, _ = files
    _fails(["aggregate", tmp / "answers.csv", "--model", "gmv"], capsys, "needs --gold")
    status, out, err = _run(["aggregate", tmp / "answers.csv", "--model", "gmv",
                             "--gold", tmp / "gold.csv", "--skills", tmp / "s.csv"], capsys)
    assert status == 0, err
    assert "used in the fit" in err
    skills = pd.read_csv(tmp / "s.csv")
    assert list(skills.columns) == ["worker", "skill"]
    assert ((skills.skill >= 0) & (skills.skill <= 1)).all()


def test_ids_that_look_like_numbers_keep_their_text(tmp_path, capsys):
    answers = pd.DataFrame({"task": ["007", "007", "7", "7", "NA", "NA"],
                            "worker": ["01", "1", "01", "1", "01", "1"],
                            "label": [1, 1, 2, 2, 1, 1]})
    answers.to_csv(tmp_path / "a.csv", index=False)
    status, out, err = _run(["aggregate", tmp_path / "a.csv", "--model", "mv",
                             "--skills", tmp_path / "s.csv"], capsys)
    assert status == 0, err
    rows = out.splitlines()
    assert rows[0] == "task,label"
    assert sorted(rows[1:]) == ["007,1", "7,2", "NA,1"]
    assert sorted(pd.read_csv(tmp_path / "s.csv", dtype=str).worker) == ["01", "1"]


# -- skills, columns, formats ------------------------------------------------------------------
def test_skills_file_by_worker_id(files, capsys):
    tmp, answers, _ = files
    status, _, err = _run(["aggregate", tmp / "answers.csv", "--model", "onecoin",
                           "--skills", tmp / "s.csv", "--out", tmp / "l.csv"], capsys)
    assert status == 0, err
    skills = pd.read_csv(tmp / "s.csv")
    assert list(skills.columns) == ["worker", "skill"]
    assert sorted(skills.worker) == sorted(set(answers.worker))
    assert skills.skill.between(0, 1).all()


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_model_writes_skills(model, files, capsys):
    tmp, answers, _ = files
    gold = ["--gold", tmp / "gold.csv"] if model == "gmv" else []
    status, _, err = _run(["aggregate", tmp / "answers.csv", "--model", model, *gold,
                           "--skills", tmp / "s.csv", "--out", tmp / "l.csv"], capsys)
    assert status == 0, err
    skills = pd.read_csv(tmp / "s.csv")
    assert list(skills.columns) == ["worker", "skill"]
    assert sorted(skills.worker) == sorted(set(answers.worker))
    assert skills.skill.between(0, 1).all()


def test_dawid_skene_skill_is_the_accuracy_under_prior_and_confusions(files, capsys):
    import crowdlearn as cl

    tmp, answers, _ = files
    status, _, err = _run(["aggregate", tmp / "answers.csv", "--model", "ds", "--skills",
                           tmp / "s.csv", "--confusions", tmp / "c.csv"], capsys)
    assert status == 0, err
    conf = pd.read_csv(tmp / "c.csv")
    assert list(conf.columns) == ["worker", "true_label", "given_label", "probability"]
    workers, classes = sorted(set(answers.worker)), list(NAMES)
    assert len(conf) == len(workers) * len(classes) ** 2
    assert set(conf.worker) == set(workers) and set(conf.given_label) == set(classes)
    # every (worker, true label) row of the matrix sums to one
    np.testing.assert_allclose(conf.groupby(["worker", "true_label"]).probability.sum(), 1.0)
    # the same model as the API's, read by original id
    model = cl.DawidSkene().fit(answers)
    by_id = conf.set_index(["worker", "true_label", "given_label"]).probability
    for (w, t, g), prob in by_id.items():
        r, n, k = workers.index(w), classes.index(t), classes.index(g)
        assert prob == pytest.approx(model.confusion_[r, n, k], rel=1e-6, abs=1e-12)
    # skill: the chance of giving the true label, sum_n prior_n * P(given n | true n)
    right = conf[conf.true_label == conf.given_label].pivot(
        index="worker", columns="true_label", values="probability")[classes]
    expected = right.to_numpy() @ model.class_prior_
    skills = pd.read_csv(tmp / "s.csv").set_index("worker").skill
    np.testing.assert_allclose(skills[right.index].to_numpy(), expected, rtol=1e-6)


def test_one_coin_confusions_and_other_models_refuse_them(files, capsys):
    tmp, _, _ = files
    status, _, err = _run(["aggregate", tmp / "answers.csv", "--model", "onecoin",
                           "--confusions", tmp / "c.csv"], capsys)
    assert status == 0, err
    conf = pd.read_csv(tmp / "c.csv")
    right = conf[conf.true_label == conf.given_label]
    # one coin: a worker is as likely to be right whatever the true label
    spread = right.groupby("worker").probability.agg(lambda v: v.max() - v.min())
    np.testing.assert_allclose(spread, 0.0, atol=1e-9)
    for model in ("mv", "glad", "mace"):
        _fails(["aggregate", tmp / "answers.csv", "--model", model, "--confusions",
                tmp / "c2.csv", "--out", tmp / "l.csv"], capsys, "no confusion matrices")
        assert not (tmp / "c2.csv").exists() and not (tmp / "l.csv").exists()
    _fails(["aggregate", tmp / "answers.csv", "--confusions", tmp / "answers.csv"], capsys,
           "same file")


def test_custom_column_names_and_tsv(tmp_path, capsys):
    answers, _ = _crowd(seed=3)
    renamed = answers.rename(columns={"task": "item", "worker": "annotator", "label": "answer"})
    renamed[["answer", "annotator", "item"]].to_csv(tmp_path / "a.tsv", sep="\t", index=False)
    status, out, err = _run(["aggregate", tmp_path / "a.tsv", "--model", "wawa",
                             "--task-col", "item", "--worker-col", "annotator",
                             "--label-col", "answer", "--out", tmp_path / "l.tsv"], capsys)
    assert status == 0, err
    labels = pd.read_csv(tmp_path / "l.tsv", sep="\t")
    assert list(labels.columns) == ["item", "answer"]
    assert sorted(labels["item"]) == sorted(set(answers.task))


def test_parquet_in_and_out(files, capsys):
    pytest.importorskip("pyarrow")
    tmp, answers, _ = files
    answers.to_parquet(tmp / "a.parquet", index=False)
    status, _, err = _run(["aggregate", tmp / "a.parquet", "--out", tmp / "l.parquet"], capsys)
    assert status == 0, err
    from_parquet = pd.read_parquet(tmp / "l.parquet")
    status, out, _ = _run(["aggregate", tmp / "answers.csv"], capsys)
    from_csv = pd.read_csv(pd.io.common.StringIO(out))
    assert from_parquet.to_dict("list") == from_csv.to_dict("list")


def test_integer_labels_and_listed_classes(tmp_path, capsys):
    answers, _ = _crowd(seed=5)
    answers["label"] = answers.label.map({"cat": 0, "dog": 1, "emu": 2})
    answers.to_csv(tmp_path / "a.csv", index=False)
    status, _, err = _run(["aggregate", tmp_path / "a.csv", "--classes", "0,1,2,3",
                           "--probas", tmp_path / "p.csv", "--out", tmp_path / "l.csv"], capsys)
    assert status == 0, err
    assert list(pd.read_csv(tmp_path / "p.csv").columns) == ["task", "0", "1", "2", "3"]
    assert set(pd.read_csv(tmp_path / "l.csv").label) <= {0, 1, 2}
    _fails(["aggregate", tmp_path / "a.csv", "--classes", "0,1,x"], capsys,
           "--classes", "'x'")


# -- gold ----------------------------------------------------------------------------------
def test_gold_accuracy_line(files, capsys):
    tmp, _, truth = files
    status, out, err = _run(["aggregate", tmp / "answers.csv", "--model", "mv",
                             "--gold", tmp / "gold.csv"], capsys)
    assert status == 0, err
    labels = pd.read_csv(pd.io.common.StringIO(out)).set_index("task").label
    gold = truth.iloc[:15].set_index("task").label
    right = int((labels[gold.index] == gold).sum())
    assert err == f"accuracy on 15 gold tasks: {right / 15:.4f} ({right}/15)\n"


def test_gold_goes_into_the_fit_unless_score_only(files, capsys):
    tmp, _, _ = files
    base = ["aggregate", tmp / "answers.csv", "--model", "ds", "--gold", tmp / "gold.csv"]
    status, _, err = _run(base, capsys)
    assert status == 0 and "used in the fit" in err
    assert "(15/15)" in err  # a gold item's class is imposed in Dawid-Skene's fit
    status, _, err = _run(base + ["--score-only"], capsys)
    assert status == 0 and "used in the fit" not in err


def test_gold_with_other_column_names_and_unknown_tasks(files, capsys):
    tmp, _, truth = files
    extra = pd.concat([truth.iloc[:5], pd.DataFrame({"task": ["nowhere"], "label": ["cat"]})])
    extra.rename(columns={"task": "id", "label": "truth"}).to_csv(tmp / "g2.csv", index=False)
    status, _, err = _run(["aggregate", tmp / "answers.csv", "--model", "mv",
                           "--gold", tmp / "g2.csv", "--gold-task-col", "id",
                           "--gold-label-col", "truth"], capsys)
    assert status == 0, err
    assert err.startswith("accuracy on 5 gold tasks")  # the unknown task is left out
    pd.DataFrame({"task": ["nowhere"], "label": ["cat"]}).to_csv(tmp / "g3.csv", index=False)
    _fails(["aggregate", tmp / "answers.csv", "--gold", tmp / "g3.csv"], capsys,
           "none of its 1 tasks")


def test_several_gold_labels_per_task_for_gold_majority_vote(tmp_path, capsys):
    answers = pd.DataFrame({"task": ["t1", "t1", "t2", "t2", "t3", "t3"],
                            "worker": ["a", "b", "a", "b", "a", "b"],
                            "label": ["cat", "dog", "dog", "dog", "emu", "cat"]})
    answers.to_csv(tmp_path / "a.csv", index=False)
    # t1 accepts cat and dog: both workers are right on both gold tasks
    pd.DataFrame({"task": ["t1", "t1", "t2"], "label": ["cat", "dog", "dog"]}).to_csv(
        tmp_path / "g.csv", index=False)
    status, out, err = _run(["aggregate", tmp_path / "a.csv", "--model", "gmv", "--gold",
                             tmp_path / "g.csv", "--skills", tmp_path / "s.csv"], capsys)
    assert status == 0, err
    assert pd.read_csv(tmp_path / "s.csv").skill.tolist() == [1.0, 1.0]
    assert err.startswith("accuracy on 2 gold tasks: 1.0000 (2/2)")
    _fails(["aggregate", tmp_path / "a.csv", "--model", "ds", "--gold", tmp_path / "g.csv"],
           capsys, "task 't1' is given more than once", "--model gmv only")


def test_gold_columns_default_to_the_answers_names(tmp_path, capsys):
    answers, truth = _crowd(seed=3)
    names = {"task": "item", "worker": "annotator", "label": "answer"}
    answers.rename(columns=names).to_csv(tmp_path / "a.csv", index=False)
    cols = ["--task-col", "item", "--worker-col", "annotator", "--label-col", "answer"]
    # a gold file named like the answers needs no --gold-*-col
    truth.iloc[:8].rename(columns=names).to_csv(tmp_path / "g.csv", index=False)
    status, out, err = _run(["aggregate", tmp_path / "a.csv", *cols, "--model", "mv",
                             "--gold", tmp_path / "g.csv"], capsys)
    assert status == 0, err
    assert err.startswith("accuracy on 8 gold tasks")
    labels = pd.read_csv(pd.io.common.StringIO(out))
    assert list(labels.columns) == ["item", "answer"]
    # a gold file with task and label columns is still read by those names
    truth.iloc[:8].to_csv(tmp_path / "g_old.csv", index=False)
    status, _, err2 = _run(["aggregate", tmp_path / "a.csv", *cols, "--model", "mv",
                            "--gold", tmp_path / "g_old.csv"], capsys)
    assert status == 0 and err2 == err
    # a given option still wins, and a column found nowhere is named
    _fails(["aggregate", tmp_path / "a.csv", *cols, "--gold", tmp_path / "g.csv",
            "--gold-label-col", "truth"], capsys, "no column 'truth'")
    truth.iloc[:8].rename(columns={"task": "id", "label": "y"}).to_csv(tmp_path / "g_x.csv",
                                                                      index=False)
    _fails(["aggregate", tmp_path / "a.csv", *cols, "--gold", tmp_path / "g_x.csv"], capsys,
           "no column 'item', 'answer'")


# -- errors: one line, status 2 -----------------------------------------------------------
def test_missing_file(tmp_path, capsys):
    _fails(["aggregate", tmp_path / "nope.csv"], capsys, "nope.csv: no such file")


def test_missing_column_lists_the_columns_found(files, capsys):
    tmp, _, _ = files
    _fails(["aggregate", tmp / "answers.csv", "--task-col", "item"], capsys,
           "no column 'item'", "columns found: task, worker, label")


def test_empty_file_and_header_only(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("")
    _fails(["aggregate", tmp_path / "e.csv"], capsys, "the file is empty")
    (tmp_path / "h.csv").write_text("task,worker,label\n")
    _fails(["aggregate", tmp_path / "h.csv"], capsys, "the file has no rows")


def test_a_missing_label_names_its_line(tmp_path, capsys):
    (tmp_path / "n.csv").write_text("task,worker,label\na,x,1\nb,x,\nb,y,0\n")
    _fails(["aggregate", tmp_path / "n.csv"], capsys, "column 'label' has a missing value",
           "line 3")


def test_unknown_model_and_missing_command(files, capsys):
    tmp, _, _ = files
    _fails(["aggregate", tmp / "answers.csv", "--model", "zzz"], capsys, "invalid choice")
    _fails([], capsys, "required")


def test_an_option_the_model_does_not_take(files, capsys):
    tmp, _, _ = files
    _fails(["aggregate", tmp / "answers.csv", "--model", "mv", "--max-iter", "5"], capsys,
           "MajorityVote", "takes no --max-iter")


def test_bad_values_from_the_package_are_one_line(files, capsys):
    tmp, _, _ = files
    _fails(["aggregate", tmp / "answers.csv", "--model", "ds", "--tol", "-1"], capsys, "tol")
    _fails(["aggregate", tmp / "answers.csv", "--task-col", "worker"], capsys,
           "three different columns")
    (tmp / "one.csv").write_text("task,worker,label\na,x,cat\nb,x,cat\n")
    _fails(["aggregate", tmp / "one.csv"], capsys, "at least 2 classes")


def test_max_iter_and_progress_reach_the_model(files, capsys):
    tmp, _, _ = files
    status, _, err = _run(["aggregate", tmp / "answers.csv", "--model", "ds", "--max-iter", "2",
                           "--tol", "0", "--progress", "--out", tmp / "l.csv"], capsys)
    assert status == 0
    assert "ConvergenceWarning" in err  # two iterations do not converge: one warning line


def test_import_crowdlearn_cli_loads_neither_pandas_nor_a_model():
    code = ("import sys, crowdlearn.cli\n"
            "assert 'pandas' not in sys.modules\n"
            "assert 'crowdlearn.aggregation' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], env=ENV, check=True)


def test_gold_labels_that_look_like_numbers_match_text_labels(tmp_path, capsys):
    (tmp_path / "a.csv").write_text("task,worker,label\na,x,1\na,y,1\nb,x,x\nb,y,x\n")
    (tmp_path / "g.csv").write_text("task,label\na,1\n")
    status, _, err = _run(["aggregate", tmp_path / "a.csv", "--model", "mv",
                           "--gold", tmp_path / "g.csv"], capsys)
    assert status == 0, err
    assert err.startswith("accuracy on 1 gold tasks: 1.0000 (1/1)")


def test_gold_label_that_is_no_class(files, capsys):
    tmp, _, _ = files
    (tmp / "g.csv").write_text("task,label\nt000,yak\n")
    _fails(["aggregate", tmp / "answers.csv", "--model", "ds", "--gold", tmp / "g.csv"],
           capsys, "'yak'")


def test_n_classes_without_the_classes_asks_for_them(files, capsys):
    tmp, _, _ = files
    _fails(["aggregate", tmp / "answers.csv", "--n-classes", "4"], capsys,
           "--n-classes 4, but the answers hold 3 classes", "--classes")
    status, _, err = _run(["aggregate", tmp / "answers.csv", "--n-classes", "3",
                           "--out", tmp / "l.csv"], capsys)
    assert status == 0, err


def test_without_pandas_or_pyarrow_the_error_says_what_to_install(files, capsys, monkeypatch):
    tmp, _, _ = files
    (tmp / "a.parquet").write_bytes(b"PAR1")  # pyarrow is looked for before the file is read
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    _fails(["aggregate", tmp / "a.parquet"], capsys, "parquet files need pyarrow",
           "pip install pyarrow")
    monkeypatch.setitem(sys.modules, "pandas", None)
    _fails(["aggregate", tmp / "answers.csv"], capsys, "needs pandas",
           "pip install 'crowdlearn[pandas]'")


def test_version_and_an_output_that_cannot_be_written(files, capsys):
    tmp, _, _ = files
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == "crowdlearn 0.2.0\n"
    _fails(["aggregate", tmp / "answers.csv", "--out", tmp / "no" / "such" / "dir.csv"],
           capsys, "--out", "does not exist")


def test_numeric_task_ids_from_parquet_match_gold_from_csv(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    answers = pd.DataFrame({"task": [10, 10, 20, 20], "worker": ["x", "y", "x", "y"],
                            "label": ["a", "a", "b", "b"]})
    answers.to_parquet(tmp_path / "a.parquet", index=False)
    (tmp_path / "g.csv").write_text("task,label\n10,a\n20,a\n")
    status, out, err = _run(["aggregate", tmp_path / "a.parquet", "--model", "mv",
                             "--gold", tmp_path / "g.csv", "--score-only"], capsys)
    assert status == 0, err
    assert out.splitlines() == ["task,label", "10,a", "20,b"]
    assert err.startswith("accuracy on 2 gold tasks: 0.5000 (1/2)")


def test_the_readme_commands_run_as_written(tmp_path, capsys, monkeypatch):
    import re
    import shlex

    pytest.importorskip("pyarrow")
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("### Command line", 1)[1]
    commands = re.search(r"```bash\n(.*?)```", section, re.S).group(1).splitlines()
    answers, truth = _crowd(seed=7)
    answers.to_csv(tmp_path / "answers.csv", index=False)
    answers.to_parquet(tmp_path / "answers.parquet", index=False)
    answers.rename(columns={"task": "item", "worker": "annotator", "label": "answer"}).to_csv(
        tmp_path / "answers.tsv", sep="\t", index=False)
    truth.iloc[:10].to_csv(tmp_path / "gold.csv", index=False)
    monkeypatch.chdir(tmp_path)
    assert len(commands) == 4
    for line in commands:
        argv = shlex.split(line.split("#")[0])
        assert argv[0] == "crowdlearn"
        status, _, err = _run(argv[1:], capsys)
        assert status == 0, (line, err)
    assert {"labels.csv", "probas.csv", "skills.csv"} <= {p.name for p in tmp_path.iterdir()}
