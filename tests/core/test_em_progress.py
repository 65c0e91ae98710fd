"""The progress bar of an EM fit (crowdlearn._progress.EMProgress, a callback of the engine
crowdlearn.em.fit_em, which knows nothing of it) and the models that show it (DawidSkene,
OneCoinDawidSkene: progress=...)."""

import re

import numpy as np
import pytest

import crowdlearn._progress as progress_module
from crowdlearn import ConvergenceWarning, DawidSkene, fit_em
from crowdlearn._base import warn_if_not_converged
from crowdlearn._progress import EMProgress
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.simulate import one_coin_confusion, simulate_crowd


def counting_em(target=5):
    """A toy EM whose objective rises by 1 per step until ``target``, then stays."""
    def e_step(t):
        return np.array([[1.0]]), float(min(t, target))

    return (lambda restart: 0), e_step, (lambda q: None)


def progress_fit(init, e_step, m_step, *, progress=False, estimator_name="EM", callback=None,
                 n_init=1, max_iter=100, **kwargs):
    """``fit_em`` with the progress bar passed as its callback, as the estimators do it
    (crowdlearn._base.EMFitter), and their ConvergenceWarning."""
    with EMProgress(progress, n_init, max_iter, estimator_name, callback) as cb:
        result = fit_em(init, e_step, m_step, n_init=n_init, max_iter=max_iter, callback=cb,
                        **kwargs)
    warn_if_not_converged(result, estimator_name, max_iter, kwargs.get("tol", 1e-6))
    return result


def toy_fit(**kwargs):
    init, e_step, _ = counting_em()
    steps = []

    def m_step(q):
        steps.append(1)
        return len(steps)

    def init_(restart):
        steps.clear()
        return init(restart)

    return progress_fit(init_, e_step, m_step, **kwargs)


@pytest.fixture(scope="module")
def crowd():
    return simulate_crowd(300, one_coin_confusion([0.9, 0.7, 0.6, 0.8], 3),
                          missing=0.2, random_state=0).labels


# -- off by default -------------------------------------------------------------------------
def test_off_by_default_prints_nothing(capsys, crowd):
    toy_fit(n_init=3, max_iter=20)
    DawidSkene(n_init=3, random_state=0).fit(crowd)
    OneCoinDawidSkene(n_init=3, random_state=0).fit(crowd)
    DawidSkene(progress=None).fit(crowd)
    out = capsys.readouterr()
    assert out.err == "" and out.out == ""


# -- a text line on stderr in a terminal (tqdm) --------------------------------------------------
def _draws(err):
    """The successive states of a text bar written to stderr."""
    return [part for part in err.rstrip("\n").split("\r") if part]


def _count(draw):
    """The ``n`` of ``"name:  33%|###   | n/total, ..."``."""
    return int(re.search(r"(\d+)/\d+(?:,|$)", draw).group(1))


def test_text_bar_on_stderr_when_asked(capsys):
    pytest.importorskip("tqdm")
    result = toy_fit(n_init=3, max_iter=20, progress=True, estimator_name="Toy")
    err = capsys.readouterr().err
    assert err.startswith("\rToy: ") and err.endswith("\n") and err.count("\n") == 1
    last = _draws(err)[-1]
    # the bar covers the whole budget, 3 runs x 21 E-steps; each run that converged early
    # jumps to the end of its share
    assert last.startswith("Toy: 100%|") and "| 63/63" in last
    assert "it/s" not in err and "<" not in err  # no times: a built page is the same every build
    assert last.endswith(", best of 3 runs: obj 5")
    assert "run 3/3 it 6 obj 5" in err
    assert result.objective == 5.0


@pytest.mark.parametrize("model", [DawidSkene, OneCoinDawidSkene])
def test_models_pass_progress_through_and_results_do_not_change(capsys, crowd, model):
    pytest.importorskip("tqdm")
    quiet = model(n_init=3, random_state=0).fit(crowd)
    loud = model(n_init=3, random_state=0, progress=True).fit(crowd)
    err = capsys.readouterr().err
    assert err.startswith(f"\r{model.__name__}: ") and err.endswith("\n")
    steps = 3 * (model().max_iter + 1)  # the whole budget: 3 runs of max_iter + 1 E-steps
    assert f"{steps}/{steps}" in err and "run 3/3" in err
    np.testing.assert_allclose(quiet.posterior_, loud.posterior_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(quiet.log_likelihood_history_, loud.log_likelihood_history_,
                               rtol=1e-12)


def test_redraws_are_throttled_but_every_run_end_is_drawn(capsys, monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(progress_module, "PROGRESS_INTERVAL", 1e9)   # no redraw inside a run
    toy_fit(n_init=2, max_iter=10, progress=True)
    counts = [_count(d) for d in _draws(capsys.readouterr().err)]
    # the empty bar, the end of each of the 2 runs, the closed bar: nothing else
    assert set(counts) == {0, 11, 22} and len(counts) <= 5 and counts[-1] == 22
    monkeypatch.setattr(progress_module, "PROGRESS_INTERVAL", 0.0)
    toy_fit(n_init=2, max_iter=10, progress=True)
    counts = [_count(d) for d in _draws(capsys.readouterr().err)]
    # 2 runs of 7 E-steps (5 rises, then one flat step that converges): drawn as they come
    assert counts == sorted(counts) and counts[-1] == 22 and len(set(counts)) > 5


def test_user_callback_still_called_and_can_stop(capsys):
    pytest.importorskip("tqdm")
    seen = []

    def stop_at_two(state):
        seen.append(state.iteration)
        return state.iteration >= 2

    result = toy_fit(n_init=1, max_iter=10, progress=True, callback=stop_at_two)
    assert seen == [0, 1, 2] and result.stopped and result.n_iter == 2
    assert _count(_draws(capsys.readouterr().err)[-1]) == 11


def test_bar_is_closed_when_the_fit_fails(capsys):
    pytest.importorskip("tqdm")

    def e_step(t):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        progress_fit(lambda r: 0, e_step, lambda q: 0, progress=True)
    assert capsys.readouterr().err.endswith("\n")


def test_convergence_warning_still_issued_with_progress(capsys):
    pytest.importorskip("tqdm")

    def e_step(t):
        return np.array([[t]]), float(t)

    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=3"):
        result = progress_fit(lambda r: 0, e_step, lambda q: q[0, 0] + 1, max_iter=3,
                              progress=True)
    assert result.n_iter == 3 and not result.converged
    last = _draws(capsys.readouterr().err)[-1]
    assert last.startswith("EM: 100%|") and _count(last) == 4


def test_bad_progress_value():
    with pytest.raises(ValueError, match="progress must be None, True or False"):
        toy_fit(progress="yes")
    with pytest.raises(ValueError, match="progress must be None, True or False"):
        DawidSkene(progress=2).fit([[0, 1], [1, 1]])
    with pytest.raises(ValueError, match="progress must be None, True or False"):
        progress_module.ProgressBar(3, "x", enabled="on")


def test_without_tqdm_nothing_is_shown_and_results_are_the_same(capsys, monkeypatch, crowd):
    """tqdm is optional (the lean core needs NumPy and SciPy only): without it a bar asked
    for is silently off."""
    monkeypatch.setattr(progress_module, "_tqdm_class", lambda: None)
    quiet = DawidSkene(n_init=2, random_state=0).fit(crowd)
    asked = DawidSkene(n_init=2, random_state=0, progress=True).fit(crowd)
    bar = progress_module.ProgressBar(2, "loop", enabled=True)
    bar.update(info="x")
    bar.close()
    out = capsys.readouterr()
    assert out.err == "" and out.out == "" and bar.bar is None
    np.testing.assert_array_equal(quiet.posterior_, asked.posterior_)


# -- a widget, not stderr, in a Jupyter kernel (tqdm.notebook, as tqdm.auto picks there) -------
@pytest.fixture
def in_a_kernel(monkeypatch):
    """Bars made as tqdm.auto makes them in a Jupyter kernel; the widgets displayed."""
    pytest.importorskip("ipywidgets")
    notebook = pytest.importorskip("tqdm.notebook")
    shown = []
    monkeypatch.setattr(progress_module, "_tqdm_class", lambda: notebook.tqdm)
    monkeypatch.setattr(notebook, "display", lambda *objs, **kw: shown.extend(objs))
    return shown


def _parts(container):
    """(left text, the bar, right text) of a tqdm notebook widget (its figure spaces read
    as spaces)."""
    left, bar, right = container.children
    return left.value.replace("\u2007", " "), bar, right.value.replace("\u2007", " ")


def test_widget_in_a_kernel_writes_nothing_to_stderr(capsys, crowd, in_a_kernel):
    OneCoinDawidSkene(n_init=2, random_state=0, progress=True).fit(crowd)
    out = capsys.readouterr()
    assert out.err == "" and out.out == ""
    (container,) = in_a_kernel
    left, bar, right = _parts(container)
    steps = 2 * (OneCoinDawidSkene().max_iter + 1)
    assert bar.value == bar.max == steps and bar.bar_style == "success"
    assert left.startswith("OneCoinDawidSkene: 100%")
    assert f"{steps}/{steps}" in right and "best of 2 runs" in right
    assert container.layout.width == "100%" and container.layout.flex_flow == "row wrap"


# -- a widget in a notebook: finished bars say so ---------------------------------------------
def test_widget_bar_reads_finished_when_closed(in_a_kernel):
    """In a kernel the bar is a widget; once closed it must not look stuck in a saved or
    rendered notebook: full and green, its text says all steps ran; one stopped short is red."""
    bar = progress_module.ProgressBar(4, "replications", enabled=True)
    for k in range(4):
        bar.update(info=f"seed {k}")
    bar.close()
    left, widget, right = _parts(in_a_kernel[-1])
    assert widget.value == widget.max == 4 and widget.bar_style == "success"
    assert left.startswith("replications: 100%") and "4/4" in right and "seed 3" in right
    stopped = progress_module.ProgressBar(4, "fits", enabled=True)
    stopped.update()
    stopped.close()
    left, widget, right = _parts(in_a_kernel[-1])
    assert widget.value == 1 and widget.bar_style == "danger" and "1/4" in right


# -- the engine knows nothing of the user interface -----------------------------------------
def test_engine_takes_no_interface_arguments():
    """Progress is a callback the estimators pass, the warning theirs: ``fit_em`` has no
    ``progress``/``estimator_name``/``warn``/``stacklevel`` and imports no progress bar."""
    import inspect
    from pathlib import Path

    import crowdlearn.em as em

    assert not {"progress", "estimator_name", "warn", "stacklevel"} & set(
        inspect.signature(fit_em).parameters)
    source = Path(em.__file__).read_text()
    assert "_progress" not in source and "warnings" not in source


def test_model_convergence_warning_points_at_the_callers_line(crowd):
    with pytest.warns(ConvergenceWarning) as caught:
        OneCoinDawidSkene(max_iter=1, tol=0.0).fit(crowd)  # through DawidSkene.fit
    assert caught[0].filename == __file__
