"""The size limits (crowdlearn._limits): a crowd the limits admit fits in the memory they
allow, and in threads a ``with size_limits`` block holds in its own context (contextvars),
set_size_limits for the whole session."""

import threading
import tracemalloc
import warnings

import numpy as np
import pytest

import crowdlearn as cl
from crowdlearn._limits import fit_memory


def _in_a_thread(fn):
    out = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


def test_a_with_block_does_not_leak_into_another_thread():
    with cl.size_limits(max_classes=5000):
        assert cl.get_size_limits().max_classes == 5000
        assert _in_a_thread(lambda: cl.get_size_limits().max_classes) == 1000
    assert cl.get_size_limits().max_classes == 1000


def test_blocks_in_two_threads_keep_their_own_limits():
    inside, go = threading.Event(), threading.Event()
    seen = []

    def other():
        with cl.size_limits(max_classes=3000):
            inside.set()
            go.wait(10)
            seen.append(cl.get_size_limits().max_classes)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    with cl.size_limits(max_classes=2000):
        go.set()
        thread.join()
        assert cl.get_size_limits().max_classes == 2000
    assert seen == [3000]
    assert cl.get_size_limits().max_classes == 1000


def test_set_size_limits_holds_for_the_session_in_every_thread():
    old = cl.set_size_limits(max_classes=4000)
    try:
        assert _in_a_thread(lambda: cl.get_size_limits().max_classes) == 4000
        with cl.size_limits(max_cells=2 ** 20):   # a block starts from the session's limits
            assert cl.get_size_limits() == (4000, 2 ** 20, 10, 100_000, 2 ** 32)
    finally:
        cl.set_size_limits(**old._asdict())
    assert cl.get_size_limits() == cl.SizeLimits()


# -- sizes that pass the limits fit in the memory they imply -----------------------------------
def _largest_admitted(K: int, per: str, budget: int) -> tuple[int, int]:
    lo, hi = 1, 10 ** 9
    while lo < hi:
        mid = (lo + hi + 1) // 2
        n, J = (mid, 3) if per == "items" else (3, mid)
        lo, hi = (mid, hi) if fit_memory(n, J, K) <= budget else (lo, mid - 1)
    return (lo, 3) if per == "items" else (3, lo)


LIMITED_MODELS = [(cl.DawidSkene, dict(accelerate=True, n_init=5, max_iter=20, random_state=1)),
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
        for model, params in LIMITED_MODELS:
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
