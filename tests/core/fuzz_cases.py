"""Hostile inputs for every public entry point, and the contract they must keep.

Used by ``tests/core/test_fuzz.py`` in two ways: the input validators and label
constructors are fuzzed in the test process; every model's ``fit`` and
``predict_proba`` (which reach scipy's sparse products and numpy's index
arithmetic) are fuzzed in a child process run as ``python tests/core/fuzz_cases.py``
under a memory limit, so that a crash or a runaway allocation -- should one ever
come back -- fails one test instead of killing the test runner.

The contract (:func:`check_call`): an entry point either returns, and then its
probabilities are finite rows that sum to one, or raises ``ValueError`` or
``TypeError`` (``NotFittedError`` is a ``ValueError``) with a message in our
words -- not numpy's or scipy's -- and no ``RuntimeWarning`` fires on the way.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crowdlearn as cl
from crowdlearn.exceptions import ConvergenceWarning, DegenerateFitWarning

# What numpy, scipy or Python say when an input reached them unchecked.
FOREIGN_WORDING = (
    "setting an array element", "could not convert", "invalid literal", "ufunc",
    "out of bounds for axis", "unhashable", "operands could not be broadcast",
    "cannot reshape", "inhomogeneous", "object of type", "index out of range",
    "too many indices", "only integers, slices", "Python int too large", "overflow encountered",
    "not supported between instances", "object arrays are not supported",
    "zero-size array to reduction", "dtype('", "numpy.", "np.core",
)

HUGE_INTS = [2 ** 31 - 1, 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 64 - 1, -2 ** 63, 10 ** 7,
             10 ** 12, 10 ** 30]
SPECIAL_FLOATS = [0.0, 1.0, 0.5, -1.0, float("nan"), float("inf"), -float("inf"), 1e300,
                  2.0 ** 63, 1e7, 1.5]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]

small_int = st.integers(-2, 4)
any_int = st.one_of(small_int, small_int, small_int, st.sampled_from(HUGE_INTS))
any_scalar = st.one_of(any_int, st.sampled_from(SPECIAL_FLOATS), st.booleans(),
                       st.sampled_from(["a", "1", "", None, b"x", 1 + 2j, (1, 2)]))


@st.composite
def int_array(draw, ndim=1, max_side=5, hostile=True):
    """An integer-ish array: a list or a numpy array of any integer dtype (values
    wrapped by the cast, as a user's own cast would), floats, bools or objects."""
    shape = tuple(draw(st.integers(0 if hostile else 1, max_side)) for _ in range(ndim))
    size = int(np.prod(shape)) if shape else 1
    kind = draw(st.sampled_from(["list", "int", "float", "bool", "object"]
                                if hostile else ["list", "int"]))
    values = draw(st.lists(any_int if hostile else st.integers(-1, 3), min_size=size,
                           max_size=size))
    if kind == "list":
        return np.array(values, dtype=object).reshape(shape).tolist()
    if kind == "int":
        dtype = draw(st.sampled_from(INT_DTYPES))
        with np.errstate(over="ignore"):
            return np.array([v % (2 ** 64) for v in values], dtype=np.uint64).astype(
                dtype).reshape(shape)
    if kind == "float":
        extra = draw(st.lists(st.sampled_from(SPECIAL_FLOATS), min_size=size, max_size=size))
        use = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        return np.array([float(e) if u else float(v) for v, e, u in zip(values, extra, use)]
                        ).reshape(shape)
    if kind == "bool":
        return np.array([bool(v % 2) for v in values], dtype=bool).reshape(shape)
    objs = draw(st.lists(any_scalar, min_size=size, max_size=size))
    arr = np.empty(size, dtype=object)
    for i, v in enumerate(objs):
        arr[i] = v
    return arr.reshape(shape)


garbage = st.sampled_from([None, "labels", 3, 2.5, {"a": 1}, {1, 2}, b"xy", [], (), [[]],
                           [[0, 1], [1]], np.float64(1.0), object()])


@st.composite
def label_data(draw, targets=False):
    """Anything a user might pass as crowd labels."""
    form = draw(st.sampled_from(["dense", "dense", "list", "triples", "triples", "tuple2",
                                 "tuple4", "crowd", "garbage", "degenerate", "masked"]))
    if form == "masked":  # issue 28: a masked entry is a missing label, never its hidden value
        arr = np.asarray(draw(int_array(ndim=3 if targets else 2, hostile=draw(st.booleans()))))
        mask = np.array(draw(st.lists(st.booleans(), min_size=arr.size, max_size=arr.size)),
                        dtype=bool).reshape(arr.shape)
        return np.ma.masked_array(arr, mask=mask)
    if form in ("dense", "list"):
        arr = draw(int_array(ndim=3 if targets else 2, hostile=draw(st.booleans())))
        return np.asarray(arr).tolist() if form == "list" and isinstance(arr, np.ndarray) \
            else arr
    if form == "triples":
        n = draw(st.integers(0, 6))
        parts = [draw(int_array(ndim=1, hostile=draw(st.booleans()))) for _ in range(3)]
        if draw(st.booleans()):  # same length, plausible values
            parts = [draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
                     for _ in range(3)]
        if targets:
            parts.append(draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n)))
        return tuple(parts)
    if form == "tuple2":
        return (draw(int_array()), draw(int_array()))
    if form == "tuple4":
        return tuple(draw(int_array()) for _ in range(4))
    if form == "crowd":
        return draw(hand_made_crowd())
    if form == "degenerate":
        n_items = draw(st.integers(1, 4))
        n_experts = draw(st.integers(1, 4))
        kind = draw(st.sampled_from(["same", "missing", "one", "unlabelled"]))
        dense = np.full((n_items, n_experts), 0)
        if kind == "missing":
            dense[:] = -1
        elif kind == "one":
            dense[:] = -1
            dense[0, 0] = 1
        elif kind == "unlabelled":
            dense[-1] = -1
            dense[0, 0] = 1
        return dense[..., None] if targets else dense
    return draw(garbage)


@st.composite
def hand_made_crowd(draw):
    """A CrowdLabels built by hand: any arrays, any sizes, possibly out of range."""
    n = draw(st.integers(0, 5))
    parts = [np.array(draw(st.lists(any_int, min_size=n, max_size=n)), dtype=object)
             for _ in range(3)]
    sizes = [draw(st.one_of(st.integers(-1, 4), st.sampled_from([10 ** 7, 2 ** 40, 2.5, True])))
             for _ in range(3)]
    try:
        return cl.CrowdLabels(*parts, *sizes)
    except (ValueError, TypeError):
        return (parts[0], parts[1], parts[2])  # fit then sees them as triples


@st.composite
def features(draw, n_rows=None, binary=False):
    rows = n_rows if n_rows is not None else draw(st.integers(0, 5))
    if draw(st.integers(0, 9)) == 0:
        rows = draw(st.integers(0, 6))  # a mismatched number of rows
    cols = draw(st.integers(0, 3))
    if binary:
        values = st.one_of(st.sampled_from([0, 1, 0, 1, 2, -1, 0.5, float("nan")]))
    else:
        values = st.one_of(st.floats(-3, 3), st.sampled_from(SPECIAL_FLOATS))
    if draw(st.integers(0, 14)) == 0:
        return draw(garbage)
    return np.array(draw(st.lists(values, min_size=rows * cols, max_size=rows * cols)),
                    dtype=float).reshape(rows, cols)


# -- the contract -----------------------------------------------------------------------------
class ContractViolation(AssertionError):
    pass


def _check_message(exc: BaseException, where: str) -> None:
    if not isinstance(exc, (ValueError, TypeError)):
        raise ContractViolation(f"{where} raised {type(exc).__name__}: {exc}") from exc
    text = str(exc)
    if not text.strip():
        raise ContractViolation(f"{where} raised {type(exc).__name__} without a message") \
            from exc
    lowered = text.lower()
    for phrase in FOREIGN_WORDING:
        if phrase.lower() in lowered:
            raise ContractViolation(f"{where} raised a message in numpy/scipy/Python words "
                                    f"({phrase!r}): {text}") from exc


def check_probabilities(P, where: str) -> None:
    P = np.asarray(P, dtype=float)
    if not np.isfinite(P).all():
        raise ContractViolation(f"{where} returned NaN or inf probabilities")
    if P.size and (np.abs(P.sum(axis=-1) - 1) > 1e-8).any():
        raise ContractViolation(f"{where} returned rows that do not sum to one")
    if (P < 0).any():
        raise ContractViolation(f"{where} returned negative probabilities")


def check_call(where: str, fn, *args, **kwargs):
    """Run ``fn``; return its result, or None when it raised an allowed error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DegenerateFitWarning)
        try:
            return fn(*args, **kwargs)
        except ContractViolation:
            raise
        except BaseException as exc:  # noqa: BLE001 - the point is to classify everything
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            _check_message(exc, where)
            return None


def check_crowd(crowd, where: str) -> None:
    """A CrowdLabels that was returned must be valid and immutable."""
    if crowd is None:
        return
    for name, size in (("item", crowd.n_items), ("expert", crowd.n_experts),
                       ("label", crowd.n_classes)):
        arr = getattr(crowd, name)
        if arr.size and (arr.min() < 0 or arr.max() >= size):
            raise ContractViolation(f"{where} returned a CrowdLabels with {name} out of range")
        if arr.flags.writeable:
            raise ContractViolation(f"{where} returned a CrowdLabels with a writeable {name}")
    if crowd.n_classes < 2:
        raise ContractViolation(f"{where} returned a CrowdLabels with < 2 classes")


# -- the model sweep (run in a child process) -----------------------------------------------
FAST = settings(max_examples=120, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def _fitted(model, data, *args, where):
    model = check_call(f"{where}.fit", model.fit, data, *args)
    if model is None:
        return None
    check_probabilities(check_call(f"{where}.predict_proba", model.predict_proba)
                        if not isinstance(model, cl.MajorityVoteLogistic) else [[1.0]], where)
    return model


def _n_rows(data):
    try:
        return cl.as_crowd_labels(data).n_items
    except (ValueError, TypeError):
        return 3


def make_model_tests(derandomize: bool):
    cfg = settings(FAST, derandomize=derandomize)

    @cfg
    @given(label_data())
    def label_models(data):
        check_call("MajorityVote.fit", cl.MajorityVote(unlabelled="uniform").fit, data)
        for model in (cl.DawidSkene(max_iter=15), cl.DawidSkene(alpha=1.0, max_iter=15),
                      cl.OneCoinDawidSkene(max_iter=15)):
            fitted = _fitted(model, data, where=type(model).__name__)
            if fitted is not None:
                check_probabilities(fitted.posterior_, "posterior_")
                got = fitted.predict_proba()
                got[...] = -1  # must be a copy: the model's own posterior is unchanged
                check_probabilities(fitted.posterior_, "posterior_ after mutating a copy")

    @cfg
    @given(label_data(), st.data())
    def feature_models(data, draw):
        X = draw.draw(features(n_rows=_n_rows(data)))
        for model in (cl.LogisticAnnotators(max_iter=4), cl.SparseExpertsEM(max_iter=4),
                      cl.MajorityVoteLogistic()):
            _fitted(model, data, X, where=type(model).__name__)
        Xb = draw.draw(features(n_rows=_n_rows(data), binary=True))
        _fitted(cl.DawidSkene(max_iter=10, alpha=1.0), data, Xb, where="DawidSkene(X)")

    @cfg
    @given(label_data(), label_data())
    def predict_on_new_labels(train, new):
        for model in (cl.DawidSkene(alpha=1.0, max_iter=10), cl.OneCoinDawidSkene(max_iter=10),
                      cl.MajorityVote(unlabelled="uniform")):
            fitted = check_call("fit", model.fit, train)
            if fitted is None:
                continue
            P = check_call(f"{type(model).__name__}.predict_proba(new)", fitted.predict_proba,
                           new)
            if P is not None:
                check_probabilities(P, f"{type(model).__name__}.predict_proba(new)")

    @cfg
    @given(label_data(targets=True))
    def multilabel(data):
        _fitted(cl.MultiLabelDawidSkene(max_iter=10), data, where="MultiLabelDawidSkene")

    @cfg
    @given(st.data())
    def tampered(draw):
        """A valid crowd whose fields are swapped behind the frozen dataclass's back, or
        whose source arrays are changed after construction (aliasing)."""
        item = np.array([0, 0, 1, 1, 2]); expert = np.array([0, 1, 0, 1, 1])
        label = np.array([0, 1, 1, 1, 0])
        crowd = cl.from_triples(item, expert, label)
        item[:] = draw.draw(st.sampled_from([10 ** 7, -1, 2 ** 40]))  # aliasing: no effect
        field = draw.draw(st.sampled_from(["item", "expert", "label", "n_items", "n_experts",
                                           "n_classes"]))
        value = draw.draw(st.one_of(st.sampled_from([50, -5, 0, 1, 2 ** 62]),
                                    st.just(np.array([0, 10 ** 7, 0, 0, 0]))))
        object.__setattr__(crowd, field, value)
        for model in (cl.MajorityVote(), cl.DawidSkene(max_iter=5),
                      cl.OneCoinDawidSkene(max_iter=5)):
            _fitted(model, crowd, where=f"{type(model).__name__} on a tampered crowd")

    @cfg
    @given(st.data())
    def other_entry_points(draw):
        """Naive Bayes, the latent class model and the surrogate risk on hostile input."""
        X = draw.draw(features(binary=True))
        y = draw.draw(st.one_of(fc_int_1d(), garbage))
        nb = check_call("BernoulliNaiveBayes.fit", cl.BernoulliNaiveBayes(alpha=1.0).fit, X, y)
        if nb is not None:
            check_probabilities(check_call("predict_proba", nb.predict_proba, X),
                                "BernoulliNaiveBayes.predict_proba")
        states = draw.draw(st.one_of(int_array(ndim=2), garbage))
        lcm = check_call("LatentClassModel.fit", cl.LatentClassModel(max_iter=10).fit, states)
        if lcm is not None:
            check_probabilities(lcm.posterior_, "LatentClassModel.posterior_")
        data = draw.draw(label_data())
        pred = draw.draw(st.one_of(fc_int_1d(), garbage))
        risk = check_call("surrogate_risk", cl.surrogate_risk, pred, data)
        if risk is not None and not (0.0 <= risk <= 1.0):
            raise ContractViolation(f"surrogate_risk returned {risk}")

    return [label_models, feature_models, predict_on_new_labels, multilabel, tampered,
            other_entry_points]


def fc_int_1d():
    return int_array(ndim=1)


def main(argv) -> int:
    derandomize = "--derandomize" in argv
    results = {}
    for test in make_model_tests(derandomize):
        try:
            test()
            results[test.__name__] = "ok"
        except Exception:  # report every failing sweep, not just the first
            results[test.__name__] = traceback.format_exc()
    print(json.dumps(results))
    return 0 if all(v == "ok" for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
