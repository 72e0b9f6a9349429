"""Ctrl-C during a long call. The GIL is released while the device works (another Python thread
runs meanwhile), and a SIGINT stops the call between chunks: KeyboardInterrupt, or what the
program's own SIGINT handler raised, well before the call would have ended; the same Device then
gives the right answers. The long call: a sum of int32 in 64-element chunks (the max-chunk knob),
2^21 elements or more, as many as make it last 0.4 s; a cumsum and a user reduction of the same;
and a first call, whose kernel build PoCL's compiler fails on SIGINT.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

import clreduce

DEVICE = os.environ.get("CLREDUCE_TEST_DEVICE", "pocl")
CHUNK = 64


def user_sum(x, dev):
    return clreduce.reduce(x, map="x", reduce="a + b", identity="0", dtype=np.int64, device=dev)


@pytest.fixture(scope="module", autouse=True)
def ctrl_c_raises():
    """Python's own SIGINT handler for these tests: a shell starts a background job (`cmd &`) with
    SIGINT ignored, and Python then leaves it ignored, so no Ctrl-C would ever arrive."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="module")
def slow():
    """(device, array, its sum, seconds of the uninterrupted sum): the kernels of the sum, cumsum
    and user reduction built first (on three chunks), then arrays of 2^21, 2^22, 2^23 elements
    until the sum lasts 0.4 s."""
    dev = clreduce.Device(DEVICE, tune={"max-chunk": CHUNK * 4})
    x = (np.arange(2**23, dtype=np.int64) * 7919 % 201 - 100).astype(np.int32)
    part = x[:3 * CHUNK]
    assert clreduce.sum(part, device=dev) == part.sum()
    clreduce.cumsum(part, device=dev)
    user_sum(part, dev)
    for n in (2**21, 2**22, 2**23):
        want = int(x[:n].sum(dtype=np.int64))
        t0 = time.perf_counter()
        assert clreduce.sum(x[:n], device=dev) == want
        secs = time.perf_counter() - t0
        if secs >= 0.4:
            break
    return dev, x[:n], want, secs


def sigint_after(delay):
    """Sends SIGINT to the main thread after delay seconds, as Ctrl-C does."""
    main = threading.main_thread().ident
    timer = threading.Timer(delay, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    return timer


def interrupted(call, delay, expect=KeyboardInterrupt):
    """Runs call() with a SIGINT after delay seconds; the seconds until `expect` came."""
    timer = sigint_after(delay)
    t0 = time.perf_counter()
    try:
        with pytest.raises(expect):
            call()
        return time.perf_counter() - t0
    finally:
        timer.join()


def test_ctrl_c_stops_a_long_sum_early(slow):
    dev, x, want, secs = slow
    # The SIGINT comes a fifth into the call; the check is asked every 20 ms and the stop waits
    # for the 4 chunks in flight: far less than the rest of the call.
    delay = secs / 5
    took = interrupted(lambda: clreduce.sum(x, device=dev), delay)
    assert delay <= took < delay + 0.5 * (secs - delay), (took, secs)
    # The Device goes on, the GIL released while it works: another thread runs meanwhile.
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        time.sleep(0.01)
        t0 = time.perf_counter()
        assert clreduce.sum(x, device=dev) == want
        t1 = time.perf_counter()
    finally:
        done.set()
        t.join()
    # Held by the call, the GIL would have let the thread tick once at most during it.
    during = [s for s in ticks if t0 < s < t1]
    assert len(during) >= 5, (len(during), t1 - t0)


def test_ctrl_c_stops_a_scan(slow):
    dev, x, want, secs = slow
    out = np.full(x.size, -7, dtype=np.int64)
    interrupted(lambda: clreduce.cumsum(x, out=out, device=dev), secs / 5)
    assert out[-1] == -7  # its last chunk never ran
    # The Device goes on (a part: the whole scan takes several times the sum's time).
    part = x[:100003]
    np.testing.assert_array_equal(clreduce.cumsum(part, device=dev),
                                  np.cumsum(part, dtype=np.int64))


def test_ctrl_c_stops_a_user_reduction_of_long_chunks(slow):
    # 64 chunks that take milliseconds each (an expensive map): enqueued at once, every one of
    # them would run before the stop; a few chunks in flight, the stop comes well before the end.
    dev = clreduce.Device(DEVICE, tune={"max-chunk": 2**16 * 4})
    x = (np.arange(2**22) % 201 - 100).astype(np.float32)

    def heavy(a):
        return clreduce.reduce(a, map="sin(sin(sin(sin(sin(sin(x))))))", reduce="a + b",
                               identity="0", device=dev)

    heavy(x[:3 * 2**16])  # builds
    t0 = time.perf_counter()
    heavy(x)
    secs = time.perf_counter() - t0
    delay = secs / 5
    took = interrupted(lambda: heavy(x), delay)
    assert delay <= took < delay + 0.5 * (secs - delay), (took, secs)
    part = slow[1][:100003]
    assert user_sum(part, dev) == part.sum(dtype=np.int64)


def test_ctrl_c_during_a_kernel_build(slow):
    dev, x, want, secs = slow
    # A map never built before: the call compiles it (a second or so on PoCL). A SIGINT there
    # makes PoCL's compiler fail the build (it removes its temporary files); KeyboardInterrupt is
    # raised all the same, and the next call builds it.
    part = x[:1000]
    k = 1 + time.time_ns() % 1000003

    def call():
        return clreduce.reduce(part, map=f"x * {k}", reduce="a + b", identity="0",
                               dtype=np.int64, device=dev)

    interrupted(call, 0.01)
    assert call() == k * int(part.sum(dtype=np.int64))


def test_a_sigint_handler_s_own_exception_is_raised(slow):
    dev, x, want, secs = slow

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop(signum)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        interrupted(lambda: clreduce.sum(x, device=dev), secs / 5, Stop)
    finally:
        signal.signal(signal.SIGINT, previous)
    part = x[:100003]
    assert clreduce.sum(part, device=dev) == part.sum(dtype=np.int64)


def test_a_sigint_handler_that_returns_lets_the_call_finish(slow):
    dev, x, want, secs = slow
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        timer = sigint_after(secs / 5)
        try:
            got = clreduce.sum(x, device=dev)
        finally:
            timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert got == want
    assert seen == [signal.SIGINT]
