"""Tests of Krippendorff's alpha (``crowdlearn.metrics.agreement``): the coincidence matrix,
nominal, interval, ordinal, MASI, Jaccard and callable distances, every input form.

Every number is checked against a hand computation, a brute-force loop written from the
definition, the published worked example (Krippendorff 2011) or crowd-kit's own test values
(crowd-kit's tests/metrics/test_metrics.py)."""

import itertools

import numpy as np
import pandas as pd
import pytest

from crowdlearn import krippendorff_alpha
from crowdlearn.aggregation.multilabel import from_quadruples
from crowdlearn.labels import from_triples
from crowdlearn.metrics import coincidence_matrix
from crowdlearn.simulate import one_coin_confusion, simulate_crowd

from metrics_crowds import random_crowd


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


def test_coincidence_matrix_of_the_worked_example():
    dense, _ = worked_example()
    index_coded = np.where(dense >= 0, dense - 1, -1)
    # the paper's coincidence matrix (values 1..5), its row sums n_c and n = 40
    o = coincidence_matrix(index_coded)
    expected = np.array([[7, 4 / 3, 1 / 3, 1 / 3, 0],
                         [4 / 3, 10, 4 / 3, 1 / 3, 0],
                         [1 / 3, 4 / 3, 8, 1 / 3, 0],
                         [1 / 3, 1 / 3, 1 / 3, 4, 0],
                         [0, 0, 0, 0, 3]])
    np.testing.assert_allclose(o, expected, atol=1e-12)
    np.testing.assert_allclose(o.sum(axis=1), [9, 13, 10, 5, 3], atol=1e-12)
    assert o.sum() == pytest.approx(40)
    # nominal alpha of every input form: string ids in a DataFrame, CrowdLabels, triples
    rows = [(f"unit{u:02d}", f"obs{o}", f"v{v}") for (u, o), v in np.ndenumerate(dense)
            if v >= 0]
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    alpha = krippendorff_alpha(index_coded)
    assert krippendorff_alpha(df) == pytest.approx(alpha, abs=1e-14)
    item, expert = np.nonzero(index_coded >= 0)
    crowd = from_triples(item, expert, index_coded[item, expert])
    assert krippendorff_alpha(crowd) == pytest.approx(0.743421052631579, abs=1e-12)
    assert krippendorff_alpha((item, expert, index_coded[item, expert])) == \
        pytest.approx(alpha, abs=1e-14)


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


def test_alpha_is_one_for_perfect_agreement_and_near_zero_at_chance():
    dense = np.array([[0, 0, -1], [1, 1, 1], [2, -1, 2], [1, -1, -1], [0, 0, 0]])
    assert krippendorff_alpha(dense) == 1.0
    noise = np.random.default_rng(1).integers(0, 3, size=(3000, 3))
    assert abs(krippendorff_alpha(noise)) < 0.03


def test_invariances():
    sim = simulate_crowd(150, one_coin_confusion([0.9, 0.7, 0.6, 0.5], 4), missing=0.4,
                         random_state=3)
    crowd = sim.labels
    values = np.array([1.0, 2.5, 3.0, 7.0])
    table = pd.DataFrame({"task": crowd.item, "worker": crowd.expert,
                          "label": values[crowd.label]})
    base = {d: krippendorff_alpha(table, distance=d) for d in ("nominal", "interval", "ordinal")}
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
    # nominal: any relabelling of the classes, unused classes, the dense form
    rng_c = np.random.default_rng(1)
    for _ in range(3):
        perm_c = rng_c.permutation(4)
        moved = from_triples(crowd.item, crowd.expert, perm_c[crowd.label], n_items=150,
                             n_experts=4, n_classes=4)
        assert krippendorff_alpha(moved) == pytest.approx(base["nominal"], abs=1e-12)
    assert krippendorff_alpha(crowd, n_classes=7) == pytest.approx(base["nominal"], abs=1e-12)
    assert krippendorff_alpha(crowd.to_dense()) == pytest.approx(base["nominal"], abs=1e-12)
    # ordinal sees the order only: unused classes between used ones change nothing
    assert krippendorff_alpha(crowd, distance="ordinal") == pytest.approx(
        base["ordinal"], abs=1e-12)
    assert krippendorff_alpha(crowd, n_classes=9, distance="ordinal") == pytest.approx(
        base["ordinal"], abs=1e-12)


def test_alpha_bad_input():
    # undefined: nothing pairable, or one pairable class (D_e = 0); no labels at all
    with pytest.raises(ValueError, match="pairable"):
        krippendorff_alpha(np.array([[0, -1], [-1, 1], [1, -1]]))
    with pytest.raises(ValueError, match="D_e"):
        krippendorff_alpha(np.array([[1, 1], [1, 1], [0, -1]]))  # only class 1 is pairable
    with pytest.raises(ValueError):
        krippendorff_alpha(None)
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
