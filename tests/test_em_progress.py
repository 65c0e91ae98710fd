"""The progress bar of an EM fit (crowdlearn._progress.EMProgress, a callback of the engine
crowdlearn.em.fit_em, which knows nothing of it) and the models that show it (DawidSkene,
OneCoinDawidSkene: progress=...)."""


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


# -- a text line on stderr in a terminal --------------------------------------------------------
def test_text_bar_on_stderr_when_asked(capsys):
    result = toy_fit(n_init=3, max_iter=20, progress=True, estimator_name="Toy")
    err = capsys.readouterr().err
    assert err.startswith("\rToy [") and err.endswith("\n") and err.count("\n") == 1
    last = err.rstrip("\n").split("\r")[-1]
    # the bar covers the whole budget, 3 runs x 21 E-steps; each run that converged early
    # jumps to the end of its share
    assert last == "Toy [" + "#" * 30 + "] 63/63 best of 3 runs: obj 5"
    assert "run 3/3 it 6 obj 5" in err
    assert result.objective == 5.0


@pytest.mark.parametrize("model", [DawidSkene, OneCoinDawidSkene])
def test_models_pass_progress_through_and_results_do_not_change(capsys, crowd, model):
    quiet = model(n_init=3, random_state=0).fit(crowd)
    loud = model(n_init=3, random_state=0, progress=True).fit(crowd)
    err = capsys.readouterr().err
    assert err.startswith(f"\r{model.__name__} [") and err.endswith("\n")
    assert f"{3 * 201}/{3 * 201}" in err and "run 3/3" in err
    np.testing.assert_allclose(quiet.posterior_, loud.posterior_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(quiet.log_likelihood_history_, loud.log_likelihood_history_,
                               rtol=1e-12)


def test_redraws_are_throttled_but_every_run_end_is_drawn(capsys, monkeypatch):
    monkeypatch.setattr(progress_module, "PROGRESS_INTERVAL", 1e9)   # no redraw inside a run
    toy_fit(n_init=2, max_iter=10, progress=True)
    err = capsys.readouterr().err
    assert err.count("\r") == 4   # the empty bar, the end of each of the 2 runs, the best run
    monkeypatch.setattr(progress_module, "PROGRESS_INTERVAL", 0.0)
    toy_fit(n_init=2, max_iter=10, progress=True)
    err = capsys.readouterr().err
    # every E-step too: 2 runs of 7 E-steps (5 rises, then one flat step that converges)
    assert err.count("\r") == 1 + 2 * 7 + 2 + 1
    counts = [int(part.split("] ")[1].split("/")[0]) for part in err.strip().split("\r")]
    assert counts == sorted(counts) and counts[-1] == 22


def test_user_callback_still_called_and_can_stop(capsys):
    seen = []

    def stop_at_two(state):
        seen.append(state.iteration)
        return state.iteration >= 2

    result = toy_fit(n_init=1, max_iter=10, progress=True, callback=stop_at_two)
    assert seen == [0, 1, 2] and result.stopped and result.n_iter == 2
    assert capsys.readouterr().err.rstrip("\n").split("\r")[-1].split("] ")[1].startswith("11/11")


def test_bar_is_closed_when_the_fit_fails(capsys):
    def e_step(t):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        progress_fit(lambda r: 0, e_step, lambda q: 0, progress=True)
    assert capsys.readouterr().err.endswith("\n")


def test_convergence_warning_still_issued_with_progress(capsys):
    def e_step(t):
        return np.array([[t]]), float(t)

    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=3"):
        result = progress_fit(lambda r: 0, e_step, lambda q: q[0, 0] + 1, max_iter=3,
                              progress=True)
    assert result.n_iter == 3 and not result.converged
    assert capsys.readouterr().err.rstrip("\n").split("\r")[-1].startswith("EM [" + "#" * 30)


def test_bad_progress_value():
    with pytest.raises(ValueError, match="progress must be None, True or False"):
        toy_fit(progress="yes")
    with pytest.raises(ValueError, match="progress must be None, True or False"):
        DawidSkene(progress=2).fit([[0, 1], [1, 1]])


# -- a widget, not stderr, in a Jupyter kernel ---------------------------------------------------
def test_widget_in_a_kernel_writes_nothing_to_stderr(capsys, monkeypatch, crowd):
    ipywidgets = pytest.importorskip("ipywidgets")
    display_mod = pytest.importorskip("IPython.display")
    shown = []
    monkeypatch.setattr(progress_module, "_in_notebook", lambda: True)
    monkeypatch.setattr(display_mod, "display", lambda *objs, **kw: shown.extend(objs))
    OneCoinDawidSkene(n_init=2, random_state=0, progress=True).fit(crowd)
    out = capsys.readouterr()
    assert out.err == "" and out.out == ""
    assert len(shown) == 1 and isinstance(shown[0], ipywidgets.IntProgress)
    assert shown[0].value == shown[0].max == 2 * 201
    assert shown[0].description.startswith("OneCoinDawidSkene: 402 of 402 done, best of 2 runs")


# -- a widget in a notebook: finished bars say so ---------------------------------------------
def test_widget_bar_reads_finished_when_closed(monkeypatch):
    """In a kernel the bar is an ipywidgets.IntProgress; once closed it must not look stuck
    in a saved or rendered notebook: full, green, and its whole text says it is done."""
    shown = []
    monkeypatch.setattr(progress_module, "_in_notebook", lambda: True)
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda w: shown.append(w))
    bar = progress_module.ProgressBar(4, "replications", enabled=True)
    for k in range(4):
        bar.update(info=f"seed {k}")
    bar.close()
    (widget,) = shown
    assert widget.value == widget.max == 4
    assert widget.description == "replications: 4 of 4 done, seed 3"
    assert widget.bar_style == "success"
    assert widget.style.description_width == "initial"  # never cut to "replicatio..."
    stopped = progress_module.ProgressBar(4, "fits", enabled=True)
    stopped.update()
    stopped.close()  # no info given: none shown
    assert shown[-1].description == "fits: 1 of 4 done" and shown[-1].bar_style == "warning"


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
