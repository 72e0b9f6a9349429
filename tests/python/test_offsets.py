"""offsets= on the reductions and segments= / offsets= on the scans, against a per-segment NumPy
loop (numpy.add.reduceat gives a[offsets[s]] for an empty segment, not the identity, so it is no
reference here). Integers and floats holding small integers: every order gives the same bits."""

import os

import numpy as np
import pytest

import clreduce

DEVICE = os.environ.get("CLREDUCE_TEST_DEVICE", "pocl")
# Segments of 0, 1, 5, 0, 3000 and 3 elements (empty ones first, between and last).
OFFSETS = np.array([0, 0, 1, 6, 6, 3006, 3009, 3009], dtype=np.int64)
N = int(OFFSETS[-1])


@pytest.fixture(scope="module", autouse=True)
def default_device():
    dev = clreduce.set_default_device(DEVICE)
    yield dev
    clreduce.set_default_device(None)


def values(dtype, n=N, seed=3):
    return np.random.default_rng(seed).integers(-9, 10, n).astype(dtype)


def per_segment(fn, x, offsets):
    return [fn(x[offsets[s]:offsets[s + 1]]) for s in range(len(offsets) - 1)]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.float32, np.float64, np.int8])
def test_sum_prod_offsets_with_empty_segments(dtype):
    x = values(dtype)
    for name in ("sum", "prod"):
        small = x if name == "sum" else np.sign(x).astype(dtype)  # products of +-1 and 0: exact
        got = getattr(clreduce, name)(small, offsets=OFFSETS)
        want = np.array(per_segment(getattr(np, name), small, OFFSETS))
        assert isinstance(got, np.ndarray) and got.shape == (len(OFFSETS) - 1,)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want)
    assert clreduce.sum(x, offsets=OFFSETS)[0] == 0  # an empty segment: the identity
    if np.dtype(dtype).kind != "f":
        assert np.add.reduceat(x, OFFSETS[:3])[0] == x[0]  # where NumPy's reduceat differs


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint64])
@pytest.mark.parametrize("name", ["min", "max", "argmin", "argmax"])
def test_extremes_offsets(dtype, name):
    offsets = np.array([0, 1, 6, 3006, 3009])
    x = values(dtype, 3009)
    got = getattr(clreduce, name)(x, offsets=offsets)
    want = np.array(per_segment(getattr(np, name), x, offsets))  # arg ops: within the segment
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="empty segment"):
        getattr(clreduce, name)(x, offsets=OFFSETS[:4])


def test_offsets_of_a_2d_array_and_out():
    x = values(np.int32, 3009 * 2).reshape(2, 3009)
    offsets = [0, 2000, 2000, 6018]
    out = np.zeros(3, dtype=np.int64)
    assert clreduce.sum(x, offsets=offsets, out=out) is out
    np.testing.assert_array_equal(out, per_segment(np.sum, x.reshape(-1), offsets))
    assert clreduce.sum(x, offsets=[0]).shape == (0,)


@pytest.mark.parametrize("bad", [[3, 1], [0, N + 1], [[0, 1]], [-1, 2], [0.0, 1.0]])
def test_bad_offsets(bad):
    with pytest.raises(ValueError, match="offsets"):
        clreduce.sum(values(np.int32), offsets=bad)


def test_offsets_refuse_axis():
    with pytest.raises(ValueError, match="offsets"):
        clreduce.sum(values(np.int32, 10).reshape(2, 5), axis=0, offsets=[0, 10])


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint32])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan_offsets_and_segments(dtype, exclusive):
    x = values(dtype)

    def ref(seg):
        c = np.cumsum(seg)
        return c - seg if exclusive else c

    want = np.concatenate(per_segment(ref, x, OFFSETS))
    got = clreduce.cumsum(x, offsets=OFFSETS, exclusive=exclusive)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    flags = np.zeros(N, dtype=np.int32)
    flags[OFFSETS[:-1][OFFSETS[:-1] < N]] = 7  # any nonzero starts a segment
    np.testing.assert_array_equal(clreduce.cumsum(x, segments=flags, exclusive=exclusive), want)
    s = np.sign(x).astype(dtype)
    np.testing.assert_array_equal(clreduce.cumprod(s, offsets=OFFSETS),
                                  np.concatenate(per_segment(np.cumprod, s, OFFSETS)))


def test_scan_bad_segments():
    x = values(np.int32, 10)
    with pytest.raises(ValueError, match="start at 0"):
        clreduce.cumsum(x, offsets=[1, 10])
    with pytest.raises(ValueError, match="one flag per element"):
        clreduce.cumsum(x, segments=np.ones(9))
    with pytest.raises(TypeError, match="not both"):
        clreduce.cumsum(x, segments=np.ones(10), offsets=[0, 10])
    with pytest.raises(ValueError, match="flattened"):
        clreduce.cumsum(x.reshape(2, 5), axis=1, offsets=[0, 10])
