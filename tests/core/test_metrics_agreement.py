"""Tests of the agreement metrics added for issue 28: Krippendorff's alpha with interval,
ordinal, MASI, Jaccard and callable distances; crowd-kit's consistency and accuracy on
aggregates; Raykar and Yu's spammer score.

Every number is checked against a hand computation, a brute-force loop written from the
definition, or crowd-kit's own test values (crowd-kit's tests/metrics/test_metrics.py and
its toy crowd in tests/conftest.py)."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdlearn import (GLAD, MACE, DawidSkene, MajorityVote, MultiLabelDawidSkene,
                        OneCoinDawidSkene, accuracy_on_aggregates, consistency,
                        krippendorff_alpha, spammer_score)
from crowdlearn.aggregation.multilabel import from_quadruples
from crowdlearn.exceptions import NotFittedError
from crowdlearn.labels import from_triples
from crowdlearn.simulate import one_coin_confusion, simulate_crowd


def quiet_fit(model, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(*args)


# -- brute force from the definitions ----------------------------------------------------------
def masi(a, b):
    """Passonneau (2006), written out."""
    a, b = set(a), set(b)
    if a == b:
        return 0.0
    jac = len(a & b) / len(a | b)
    m = 2 / 3 if (a <= b or b <= a) else (1 / 3 if a & b else 0.0)
    return 1.0 - jac * m


def nltk_masi(a, b):
    """nltk.metrics.distance.masi_distance (crowd-kit's), with its rounded weights."""
    li, lu = len(a & b), len(a | b)
    if len(a) == len(b) == li:
        m = 1
    elif li == min(len(a), len(b)):
        m = 0.67
    elif li > 0:
        m = 0.33
    else:
        m = 0
    return 1 - li / float(lu) * m


def brute_alpha(units, distance):
    """Alpha from its definition: loops over the ordered pairs of values within each unit
    (observed) and over all ordered pairs of pairable values (expected). ``distance`` is a
    name or a function of two values; the ordinal distance reads the counts n_g of the
    pairable values."""
    pairable = [u for u in units if len(u) >= 2]
    values = [v for u in pairable for v in u]
    n = len(values)
    counts = {v: values.count(v) for v in set(values)}

    def delta(a, b):
        if a == b:
            return 0.0
        if distance == "nominal":
            return 1.0
        if distance == "interval":
            return float(a - b) ** 2
        if distance == "ordinal":
            lo, hi = min(a, b), max(a, b)
            between = sum(c for g, c in counts.items() if lo <= g <= hi)
            return (between - (counts[a] + counts[b]) / 2) ** 2
        if distance == "masi":
            return masi(a, b)
        if distance == "jaccard":
            return 1 - len(a & b) / len(a | b)
        return distance(a, b)

    d_o = sum(delta(u[i], u[j]) / (len(u) - 1)
              for u in pairable for i, j in itertools.permutations(range(len(u)), 2)) / n
    d_e = sum(delta(values[i], values[j])
              for i, j in itertools.permutations(range(n), 2)) / (n * (n - 1))
    return 1 - d_o / d_e


# -- Krippendorff's worked example -------------------------------------------------------------
# K. Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
# observers, twelve units, values 1..5, "." where an observer gave no value.
KRIPPENDORFF_2011 = """
A  1 2 3 3 2 1 4 1 2 . . .
B  1 2 3 3 2 2 4 1 2 5 . 3
C  . 3 3 3 2 3 4 2 2 5 1 .
D  1 2 3 3 2 4 4 1 2 5 1 .
"""


def worked_example():
    rows = [line.split()[1:] for line in KRIPPENDORFF_2011.strip().splitlines()]
    dense = np.array([[-1 if v == "." else int(v) for v in r] for r in rows]).T  # units x obs
    units = [[int(v) for v in unit if v >= 0] for unit in dense]
    return dense, units


@pytest.mark.parametrize("distance, published", [("nominal", 0.743), ("interval", 0.849),
                                                 ("ordinal", 0.815)])
def test_worked_example_every_distance(distance, published):
    dense, units = worked_example()
    expected = brute_alpha(units, distance)
    assert round(expected, 3) == published           # the brute force gives the paper's value
    # index-coded (values 0..4: a shift, which no distance sees), and the values in a table
    index_coded = np.where(dense >= 0, dense - 1, -1)
    assert krippendorff_alpha(index_coded, distance=distance) == pytest.approx(expected,
                                                                              abs=1e-12)
    rows = [(f"u{u}", f"obs{o}", int(v)) for (u, o), v in np.ndenumerate(dense) if v >= 0]
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    assert krippendorff_alpha(df, distance=distance) == pytest.approx(expected, abs=1e-12)


def test_ordinal_distance_by_hand():
    # two units: (1, 2) and (2, 3): n_1 = 1, n_2 = 2, n_3 = 1, n = 4
    # d(1,2) = (1 + 2 - 3/2)^2 = 2.25, d(2,3) = 2.25, d(1,3) = (4 - 1)^2 = 9
    # observed: each unit adds its two ordered pairs, weight 1/(2-1): 2 * 2.25 * 2 = 9
    # expected: sum_{c,k} n_c n_k d = 2 * (1*2*2.25 + 2*1*2.25 + 1*1*9) = 36
    # alpha = 1 - (n - 1) * 9 / 36 = 0.25
    dense = np.array([[0, 1], [1, 2]])
    assert krippendorff_alpha(dense, distance="ordinal") == pytest.approx(0.25, abs=1e-12)
    # interval on the same: observed 2 * 1 * 2 = 4; expected 2 * (2 + 2 + 4) = 16
    assert krippendorff_alpha(dense, distance="interval") == pytest.approx(1 - 3 * 4 / 16,
                                                                           abs=1e-12)


def test_nominal_unchanged_and_equal_to_a_callable():
    dense, _ = worked_example()
    dense = np.where(dense >= 0, dense - 1, -1)
    assert krippendorff_alpha(dense, distance="nominal") == krippendorff_alpha(dense)
    assert krippendorff_alpha(dense) == pytest.approx(0.743421052631579, abs=1e-12)
    binary = krippendorff_alpha(dense, distance=lambda a, b: float(a != b))
    assert binary == pytest.approx(krippendorff_alpha(dense), abs=1e-12)


# -- set-valued labels (MASI, Jaccard) ---------------------------------------------------------
def pictures():
    """crowd-kit's test_alpha_krippendorff_with_distance."""
    return pd.DataFrame.from_records([
        {"task": "X", "worker": "A", "label": frozenset(["dog"])},
        {"task": "X", "worker": "B", "label": frozenset(["dog"])},
        {"task": "Y", "worker": "A", "label": frozenset(["cat"])},
        {"task": "Y", "worker": "B", "label": frozenset(["cat"])},
        {"task": "Z", "worker": "A", "label": frozenset(["cat"])},
        {"task": "Z", "worker": "B", "label": frozenset(["cat", "mouse"])},
    ])


def test_masi_by_hand_and_crowd_kits_numbers():
    df = pictures()
    # crowd-kit: 0.5454545454545454 nominal, 0.6673336668334168 with nltk's masi_distance
    assert krippendorff_alpha(df) == pytest.approx(0.5454545454545454, abs=1e-12)
    assert krippendorff_alpha(df, distance=nltk_masi) == pytest.approx(0.6673336668334168,
                                                                       abs=1e-12)
    # by hand: n_dog = 2, n_cat = 3, n_cat,mouse = 1, n = 6; d(cat, {cat, mouse}) =
    # 1 - 1/2 * 2/3 = 2/3, the other distinct pairs 1. Observed 2 * 2/3 = 4/3; expected
    # 2 * (2*3 + 2*1 + 3*1*2/3) = 20; alpha = 1 - 5 * (4/3) / 20 = 2/3
    assert krippendorff_alpha(df, distance="masi") == pytest.approx(2 / 3, abs=1e-12)
    # Jaccard: d = 1/2, observed 1, expected 2 * (6 + 2 + 1.5) = 19; alpha = 1 - 5/19
    assert krippendorff_alpha(df, distance="jaccard") == pytest.approx(1 - 5 / 19, abs=1e-12)


def test_distance_by_position_is_the_distance_by_keyword():
    # crowd-kit's alpha_krippendorff(answers, distance) takes the distance positionally
    df = pictures()
    assert krippendorff_alpha(df, "masi") == pytest.approx(2 / 3, abs=1e-12)
    assert krippendorff_alpha(df, nltk_masi) == pytest.approx(0.6673336668334168, abs=1e-12)
    assert krippendorff_alpha(df, "jaccard") == krippendorff_alpha(df, distance="jaccard")
    dense = np.array([[0, 1, -1], [2, 2, 2], [0, 1, 1]])
    assert krippendorff_alpha(dense, "interval") == krippendorff_alpha(dense,
                                                                      distance="interval")
    # n_classes stays keyword only: an integer in the distance's place says so
    with pytest.raises(TypeError, match=r"did you mean n_classes=3\?"):
        krippendorff_alpha(dense, 3)
    with pytest.raises(TypeError):
        krippendorff_alpha(dense, "masi", 3)


def random_set_units(rng, n_units, n_workers, tags=4):
    units, rows = [], []
    for u in range(n_units):
        truth = frozenset(np.flatnonzero(rng.random(tags) < 0.4).tolist())
        unit = []
        for w in range(n_workers):
            if rng.random() < 0.25:
                continue
            flip = rng.random(tags) < 0.15
            mine = frozenset(t for t in range(tags) if (t in truth) != flip[t])
            unit.append(mine)
            rows.append((u, w, mine))
        units.append(unit)
    return units, rows


@pytest.mark.parametrize("seed", range(4))
def test_sets_match_brute_force_in_every_form(seed):
    rng = np.random.default_rng(seed)
    units, rows = random_set_units(rng, int(rng.integers(4, 12)), 4)
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    for distance in ("masi", "jaccard", "nominal", nltk_masi):
        expected = brute_alpha(units, distance)
        assert krippendorff_alpha(df, distance=distance) == pytest.approx(expected, abs=1e-12)
    # the same answers as MultiCrowdLabels of four binary targets (every target answered)
    quads = [(u, w, t, int(t in s)) for u, w, s in rows for t in range(4)]
    item, expert, target, label = map(np.array, zip(*quads))
    multi = from_quadruples(item, expert, target, label, n_classes=[2] * 4)
    for distance in ("masi", "jaccard", "nominal"):
        assert krippendorff_alpha(multi, distance=distance) == pytest.approx(
            brute_alpha(units, distance), abs=1e-12)


def test_empty_sets():
    df = pd.DataFrame([("x", "a", frozenset()), ("x", "b", frozenset()),
                       ("y", "a", frozenset({1})), ("y", "b", frozenset({1}))],
                      columns=["task", "worker", "label"])
    assert krippendorff_alpha(df, distance="masi") == 1.0    # two empty sets agree
    df.loc[3, "label"] = frozenset()
    assert krippendorff_alpha(df, distance="masi") == pytest.approx(
        brute_alpha([[frozenset(), frozenset()], [frozenset({1}), frozenset()]], "masi"))


# -- brute force on random crowds, invariances, bounds -----------------------------------------
def random_crowd(seed):
    rng = np.random.default_rng(seed)
    n_items, n_experts, K = int(rng.integers(3, 15)), int(rng.integers(2, 5)), \
        int(rng.integers(2, 6))
    n_labels = int(rng.integers(n_items, 3 * n_items))
    item = rng.integers(0, n_items, n_labels)
    expert = rng.integers(0, n_experts, n_labels)
    truth = rng.integers(0, K, n_items)
    label = np.where(rng.random(n_labels) < 0.6, truth[item], rng.integers(0, K, n_labels))
    crowd = from_triples(item, expert, label, n_items=n_items, n_experts=n_experts, n_classes=K)
    units = [label[item == u].tolist() for u in range(n_items)]
    return crowd, units


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("distance", ["nominal", "interval", "ordinal", "callable"])
def test_alpha_matches_brute_force(seed, distance):
    crowd, units = random_crowd(seed)
    fn = (lambda a, b: abs(a - b) ** 1.5) if distance == "callable" else distance
    try:
        expected = brute_alpha(units, fn)
    except ZeroDivisionError:           # nothing pairable, or D_e = 0
        with pytest.raises(ValueError):
            krippendorff_alpha(crowd, distance=fn)
        return
    assert krippendorff_alpha(crowd, distance=fn) == pytest.approx(expected, abs=1e-10)
    assert krippendorff_alpha(crowd, distance=fn) <= 1.0


@pytest.mark.parametrize("distance", ["nominal", "interval", "ordinal", "masi", "jaccard"])
def test_alpha_is_one_for_perfect_agreement(distance):
    if distance in ("masi", "jaccard"):
        vals = [frozenset({1}), frozenset({1, 2}), frozenset()]
    else:
        vals = [0, 3, 7]
    rows = [(u, w, vals[u % 3]) for u in range(6) for w in range(3) if (u + w) % 4]
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    assert krippendorff_alpha(df, distance=distance) == pytest.approx(1.0, abs=1e-12)


def test_invariances():
    sim = simulate_crowd(150, one_coin_confusion([0.9, 0.7, 0.6, 0.5], 4), missing=0.4,
                         random_state=3)
    crowd = sim.labels
    values = np.array([1.0, 2.5, 3.0, 7.0])
    table = pd.DataFrame({"task": crowd.item, "worker": crowd.expert,
                          "label": values[crowd.label]})
    base = {d: krippendorff_alpha(table, distance=d) for d in ("interval", "ordinal")}
    # interval: an affine change of the values; ordinal: any increasing map of them
    affine = table.assign(label=3 * table.label - 11)
    assert krippendorff_alpha(affine, distance="interval") == pytest.approx(base["interval"],
                                                                            abs=1e-12)
    monotone = table.assign(label=np.exp(table.label))
    assert krippendorff_alpha(monotone, distance="ordinal") == pytest.approx(base["ordinal"],
                                                                             abs=1e-12)
    # relabelling workers and items, shuffling the rows: nothing changes
    rng = np.random.default_rng(0)
    perm_w, perm_i = rng.permutation(4), rng.permutation(150)
    moved = table.assign(worker=perm_w[table.worker], task=perm_i[table.task])
    moved = moved.iloc[rng.permutation(len(moved))]
    for d, alpha in base.items():
        assert krippendorff_alpha(moved, distance=d) == pytest.approx(alpha, abs=1e-12)
    # ordinal sees the order only: unused classes between used ones change nothing
    assert krippendorff_alpha(crowd, distance="ordinal") == pytest.approx(
        base["ordinal"], abs=1e-12)
    assert krippendorff_alpha(crowd, n_classes=9, distance="ordinal") == pytest.approx(
        base["ordinal"], abs=1e-12)


def test_alpha_bad_input():
    dense = np.array([[0, 1], [1, 1], [2, 2]])
    with pytest.raises(ValueError, match="distance must be one of"):
        krippendorff_alpha(dense, distance="euclid")
    with pytest.raises(TypeError, match="distance must be one of"):
        krippendorff_alpha(dense, distance=2)
    words = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                          "label": ["low", "high", "low", "low"]})
    for d in ("interval", "ordinal"):
        with pytest.raises(TypeError, match="numbers"):
            krippendorff_alpha(words, distance=d)
    with pytest.raises(TypeError, match="set-valued"):
        krippendorff_alpha(dense, distance="masi")
    with pytest.raises(TypeError, match="not a number"):
        krippendorff_alpha(dense, distance=lambda a, b: "1")
    with pytest.raises(ValueError, match="finite and >= 0"):
        krippendorff_alpha(dense, distance=lambda a, b: -1.0)
    with pytest.raises(ValueError, match="finite and >= 0"):
        krippendorff_alpha(dense, distance=lambda a, b: float("nan"))
    with pytest.raises(ValueError, match="D_e"):
        krippendorff_alpha(dense, distance=lambda a, b: 0.0)
    with pytest.raises(ValueError, match="pairable"):
        krippendorff_alpha(np.array([[0, -1], [-1, 1]]), distance="interval")
    three = from_quadruples([0, 0], [0, 1], [0, 0], [2, 1], n_classes=[3])
    with pytest.raises(ValueError, match="binary targets"):
        krippendorff_alpha(three, distance="masi")
    partial = from_quadruples([0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 1], n_classes=[2, 2])
    with pytest.raises(ValueError, match="every target"):
        krippendorff_alpha(partial, distance="masi")
    twice = from_quadruples([0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1], [1, 0, 1, 1],
                            n_classes=[2, 2])
    with pytest.raises(ValueError, match="twice"):
        krippendorff_alpha(twice, distance="masi")
    with pytest.raises(ValueError, match="n_classes"):
        krippendorff_alpha(partial, n_classes=2, distance="masi")


# -- consistency -------------------------------------------------------------------------------
def toy_answers():
    """crowd-kit's toy_answers_df (tests/conftest.py)."""
    rows = [["w1", "t1", "no"], ["w1", "t2", "yes"], ["w1", "t3", "yes"], ["w1", "t4", "yes"],
            ["w1", "t5", "yes"], ["w2", "t1", "yes"], ["w2", "t2", "yes"], ["w2", "t3", "no"],
            ["w2", "t4", "yes"], ["w2", "t5", "no"], ["w3", "t2", "yes"], ["w3", "t3", "no"],
            ["w3", "t4", "yes"], ["w3", "t5", "no"], ["w4", "t1", "yes"], ["w4", "t2", "no"],
            ["w4", "t3", "yes"], ["w4", "t4", "yes"], ["w4", "t5", "no"], ["w5", "t1", "no"],
            ["w5", "t2", "no"], ["w5", "t3", "no"], ["w5", "t4", "yes"], ["w5", "t5", "no"]]
    return pd.DataFrame(rows, columns=["worker", "task", "label"])


def test_consistency_gives_crowd_kits_number():
    df = toy_answers()
    # crowd-kit's MajorityVote breaks the tie on t1 for the first label ('no'), as "lowest"
    mv = MajorityVote(tie_break="lowest").fit(df)
    assert consistency(mv, df) == pytest.approx(0.9384615384615385, abs=1e-12)
    by_task = consistency(mv, df, by_task=True)
    assert list(by_task.index) == ["t1", "t2", "t3", "t4", "t5"]
    assert by_task.mean() == pytest.approx(consistency(mv, df), abs=1e-15)
    # t1: labels no (w1, 0.6), yes (w2, 0.8), yes (w4, 0.4), no (w5, 0.8); aggregate 'no'
    no, yes = 0.6 * 0.2 * 0.6 * 0.8, 0.4 * 0.8 * 0.4 * 0.2
    assert by_task["t1"] == pytest.approx(no / (no + yes), abs=1e-12)


def brute_consistency(crowd, conf, aggregated):
    out = []
    for i in range(crowd.n_items):
        mine = np.flatnonzero(crowd.item == i)
        if mine.size == 0:
            out.append(np.nan)
            continue
        like = [np.prod([conf[crowd.expert[t], k, crowd.label[t]] for t in mine])
                for k in range(crowd.n_classes)]
        out.append(like[aggregated[i]] / sum(like) if sum(like) > 0 else 0.0)
    return np.array(out)


@pytest.mark.parametrize("seed", range(4))
def test_consistency_matches_brute_force(seed):
    crowd, _ = random_crowd(seed)
    rng = np.random.default_rng(seed)
    J, K, n = crowd.n_experts, crowd.n_classes, crowd.n_items
    conf = rng.dirichlet(np.ones(K), size=(J, K))
    posterior = rng.dirichlet(np.ones(K), size=n)
    aggregated = posterior.argmax(axis=1)
    expected = brute_consistency(crowd, conf, aggregated)
    got = consistency(posterior, crowd, skills=conf, by_task=True)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert consistency(posterior, crowd, skills=conf) == pytest.approx(
        np.nanmean(expected), abs=1e-12)
    # one accuracy per worker: the one-coin matrices
    acc = rng.uniform(0.3, 1.0, J)
    got = consistency(posterior, crowd, skills=acc, by_task=True)
    np.testing.assert_allclose(got, brute_consistency(crowd, one_coin_confusion(acc, K),
                                                      aggregated), atol=1e-12)
    finite = got[~np.isnan(got)]
    assert ((finite >= 0) & (finite <= 1)).all()


def test_consistency_of_fitted_models_and_invariance():
    sim = simulate_crowd(120, one_coin_confusion([0.9, 0.8, 0.7, 0.55], 3), missing=0.3,
                         random_state=5)
    crowd = sim.labels
    oc = quiet_fit(OneCoinDawidSkene(), crowd)
    # a one-coin model: its confusion matrices are its accuracies'
    assert consistency(oc, crowd) == pytest.approx(
        consistency(oc.posterior_, crowd, skills=oc.accuracy_), abs=1e-12)
    ds = quiet_fit(DawidSkene(), crowd)
    value = consistency(ds, crowd)
    assert 0.0 <= value <= 1.0
    # the same model on a DataFrame of the same labels with string ids
    df = pd.DataFrame({"task": [f"t{i:03d}" for i in crowd.item],
                       "worker": [f"w{j}" for j in crowd.expert], "label": crowd.label})
    ds_df = quiet_fit(DawidSkene(), df)
    assert consistency(ds_df, df) == pytest.approx(
        consistency(ds_df.posterior_, df, skills=ds_df.confusion_), abs=1e-12)
    assert consistency(ds_df, df) == pytest.approx(value, abs=1e-5)   # EM's tolerance
    # workers relabelled, their skills with them: nothing changes
    perm = np.array([2, 0, 3, 1])
    moved = from_triples(crowd.item, perm[crowd.expert], crowd.label, n_items=120,
                         n_experts=4, n_classes=3)
    skills = np.empty(4)
    skills[perm] = oc.accuracy_
    assert consistency(oc.posterior_, moved, skills=skills) == pytest.approx(
        consistency(oc.posterior_, crowd, skills=oc.accuracy_), abs=1e-12)
    # skills as a Series by worker id
    series = pd.Series(oc.accuracy_, index=[f"w{j}" for j in range(4)])[::-1]
    assert consistency(ds_df.posterior_, df, skills=series) == pytest.approx(
        consistency(ds_df.posterior_, df, skills=oc.accuracy_), abs=1e-12)


def test_consistency_edge_cases():
    # two workers of skill 1 who disagree: probability 0 under every class -> 0
    dense = np.array([[0, 1], [1, 1], [-1, -1]])
    post = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    by_task = consistency(post, dense, skills=[1.0, 1.0], by_task=True)
    assert by_task[0] == 0.0 and by_task[1] == 1.0 and np.isnan(by_task[2])
    assert consistency(post, dense, skills=[1.0, 1.0]) == 0.5   # the unlabelled item left out
    # skill 1/2 with two classes: no information, 1/2 everywhere
    np.testing.assert_allclose(consistency(post, dense, skills=[0.5, 0.5], by_task=True)[:2],
                               0.5)


def test_consistency_bad_input():
    df = toy_answers()
    mv = MajorityVote(tie_break="lowest").fit(df)
    post = np.array([[0.9, 0.1], [0.2, 0.8]])
    dense = np.array([[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="skills="):
        consistency(post, dense)
    with pytest.raises(ValueError, match="real numbers|numeric|strings"):
        consistency(post, dense, skills=["0.9", "0.8"])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        consistency(post, dense, skills=[1.2, 0.8])
    with pytest.raises(ValueError, match="one accuracy per worker"):
        consistency(post, dense, skills=[0.9, 0.8, 0.7])
    with pytest.raises(ValueError, match="shape"):
        consistency(post, dense, skills=np.ones((2, 3, 3)) / 3)
    with pytest.raises(ValueError, match="sum to 1"):
        consistency(post, dense, skills=np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="by_task"):
        consistency(post, dense, skills=[0.9, 0.8], by_task="yes")
    with pytest.raises(ValueError, match="fitted on"):
        consistency(mv, df[df.task != "t3"])
    with pytest.raises(ValueError, match="posterior has shape"):
        consistency(post, np.array([[0, 0], [1, 1], [0, 1]]), skills=[0.9, 0.8])
    with pytest.raises(ValueError, match="Series by worker id"):
        consistency(post, dense, skills=pd.Series([0.9, 0.8]))
    glad = quiet_fit(GLAD(), df)
    with pytest.raises(ValueError, match="GLAD"):
        consistency(glad, df)
    with pytest.raises(NotFittedError):
        consistency(DawidSkene(), df)
    multi = from_quadruples([0, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 0], [1, 1, 0, 1],
                            n_classes=[2])
    with pytest.raises(ValueError, match="one label per item"):
        consistency(quiet_fit(MultiLabelDawidSkene(), multi), multi)


# -- accuracy on aggregates --------------------------------------------------------------------
def test_accuracy_on_aggregates_gives_crowd_kits_numbers():
    df = toy_answers()
    mv = MajorityVote(tie_break="lowest").fit(df)
    expected = pd.Series([0.6, 0.8, 1.0, 0.4, 0.8],
                         index=pd.Index(["w1", "w2", "w3", "w4", "w5"], name="worker"))
    for aggregated in (mv, mv.labels_):
        assert accuracy_on_aggregates(df, aggregated) == pytest.approx(0.7083333333333334,
                                                                       abs=1e-12)
        got = accuracy_on_aggregates(df, aggregated, by="worker")
        pd.testing.assert_series_equal(got, expected, check_names=False)
    # crowd-kit's get_accuracy against the gold of t1 and t2: 5/9 (by worker .5 1 1 .5 0)
    gold = pd.Series({"t1": "yes", "t2": "yes"})
    assert accuracy_on_aggregates(df, gold) == pytest.approx(5 / 9, abs=1e-12)
    np.testing.assert_allclose(accuracy_on_aggregates(df, gold, by="worker").to_numpy(),
                               [0.5, 1.0, 1.0, 0.5, 0.0])


@pytest.mark.parametrize("seed", range(4))
def test_accuracy_on_aggregates_matches_brute_force(seed):
    crowd, _ = random_crowd(seed)
    rng = np.random.default_rng(seed)
    agg = rng.integers(-1, crowd.n_classes, crowd.n_items)
    agg[0] = 0
    scored = [(e, i, l == agg[i]) for i, e, l in zip(crowd.item, crowd.expert, crowd.label)
              if agg[i] >= 0]
    if not scored:
        return
    overall = sum(h for _, _, h in scored) / len(scored)
    assert accuracy_on_aggregates(crowd, agg) == pytest.approx(overall, abs=1e-12)
    per_worker = accuracy_on_aggregates(crowd, agg, by="worker")
    per_item = accuracy_on_aggregates(crowd, agg, by="task")
    for j in range(crowd.n_experts):
        mine = [h for e, _, h in scored if e == j]
        assert (per_worker.mask[j] if not mine   # no label scored: masked, never NaN
                else per_worker[j] == pytest.approx(np.mean(mine), abs=1e-12))
    for i in range(crowd.n_items):
        mine = [h for _, u, h in scored if u == i]
        assert (per_item.mask[i] if not mine
                else per_item[i] == pytest.approx(np.mean(mine), abs=1e-12))
    assert not np.isnan(per_worker.data).any() and not np.isnan(per_item.data).any()
    # relabelling the workers permutes their scores
    perm = rng.permutation(crowd.n_experts)
    moved = from_triples(crowd.item, perm[crowd.expert], crowd.label, n_items=crowd.n_items,
                         n_experts=crowd.n_experts, n_classes=crowd.n_classes)
    np.testing.assert_array_equal(accuracy_on_aggregates(moved, agg, by="worker")[perm],
                                  per_worker)


def test_accuracy_on_aggregates_bad_input():
    df = toy_answers()
    dense = np.array([[0, 0], [1, 0]])
    with pytest.raises(ValueError, match="by must be"):
        accuracy_on_aggregates(dense, [0, 1], by="label")
    with pytest.raises(ValueError, match="string"):
        accuracy_on_aggregates(dense, "01")
    with pytest.raises(ValueError, match="one class index per item"):
        accuracy_on_aggregates(dense, [0, 1, 1])
    with pytest.raises(ValueError):
        accuracy_on_aggregates(dense, ["0", "1"])
    with pytest.raises(ValueError, match="out of range|n_classes"):
        accuracy_on_aggregates(dense, [0, 2])
    with pytest.raises(ValueError, match="no label"):
        accuracy_on_aggregates(dense, [-1, -1])
    with pytest.raises(ValueError, match="not a class"):
        accuracy_on_aggregates(df, pd.Series({"t1": "maybe"}))
    with pytest.raises(ValueError, match="task ids"):
        accuracy_on_aggregates(dense, pd.Series([0, 1]))


# -- spammer score -----------------------------------------------------------------------------
def brute_spam(A):
    K = A.shape[0]
    return sum(((A[c] - A[d]) ** 2).sum() for c in range(K) for d in range(c + 1, K)) \
        / (K * (K - 1))


def test_spammer_score_bounds_and_hand_values():
    spammer = np.tile([0.7, 0.2, 0.1], (3, 1))
    assert spammer_score(spammer) == pytest.approx(0.0, abs=1e-15)
    assert spammer_score(np.eye(3)) == 1.0
    assert spammer_score(np.eye(3)[[2, 0, 1]]) == 1.0     # a permutation: informative
    # binary one-coin p: rows (p, 1-p), (1-p, p): 2 (2p - 1)^2 / 2
    for p in (0.5, 0.6, 0.9):
        A = np.array([[p, 1 - p], [1 - p, p]])
        assert spammer_score(A) == pytest.approx((2 * p - 1) ** 2, abs=1e-12)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_spammer_score_matches_brute_force_and_ignores_order(K):
    rng = np.random.default_rng(K)
    conf = rng.dirichlet(np.ones(K) * 0.7, size=(6, K))
    scores = spammer_score(conf)
    np.testing.assert_allclose(scores, [brute_spam(A) for A in conf], atol=1e-12)
    assert ((scores >= 0) & (scores <= 1)).all()
    rows, cols = rng.permutation(K), rng.permutation(K)
    np.testing.assert_allclose(spammer_score(conf[:, rows]), scores, atol=1e-12)
    np.testing.assert_allclose(spammer_score(conf[:, rows][:, :, cols]), scores, atol=1e-12)
    order = rng.permutation(6)
    np.testing.assert_allclose(spammer_score(conf[order]), scores[order], atol=1e-12)


def test_spammer_score_of_fitted_models():
    conf = one_coin_confusion([0.9, 0.85, 0.8, 0.75], 3)
    conf = np.concatenate([conf, np.tile([0.6, 0.3, 0.1], (1, 3, 1))])  # worker 4 spams
    sim = simulate_crowd(400, conf, random_state=2)
    ds = quiet_fit(DawidSkene(), sim.labels)
    scores = spammer_score(ds)
    np.testing.assert_allclose(scores, [brute_spam(A) for A in ds.confusion_], atol=1e-12)
    assert scores.argmin() == 4 and scores[4] < 0.05 and scores[:4].min() > 0.3
    df = pd.DataFrame({"task": sim.labels.item, "worker": [f"w{j}" for j in sim.labels.expert],
                       "label": sim.labels.label})
    by_worker = spammer_score(quiet_fit(DawidSkene(), df))
    assert list(by_worker.index) == [f"w{j}" for j in range(5)]
    assert by_worker.name == "spam_score"
    assert spammer_score(quiet_fit(MACE(), sim.labels)).shape == (5,)


def test_spammer_score_bad_input():
    with pytest.raises(ValueError, match="sum to 1"):
        spammer_score(np.ones((2, 2)))
    with pytest.raises(ValueError, match="real numbers|strings|numeric"):
        spammer_score(np.array([["1", "0"], ["0", "1"]]))
    with pytest.raises(ValueError, match="shape"):
        spammer_score(np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="square"):
        spammer_score(np.ones((3, 2)) / 2)
    with pytest.raises(ValueError, match="negative"):
        spammer_score(np.array([[1.5, -0.5], [0, 1]]))
    with pytest.raises(ValueError, match="confusion_"):
        spammer_score(quiet_fit(GLAD(), np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0]])))
    with pytest.raises(NotFittedError):
        spammer_score(DawidSkene())
