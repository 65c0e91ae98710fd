"""The size limits (crowdlearn._limits) in threads: a ``with size_limits`` block holds in its
own context (contextvars), set_size_limits for the whole session."""

import threading

import crowdlearn as cl


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
