"""The Python package against NumPy: every function, every element type, sizes 0, 1 and 2^20 + 3,
NaN and inf, non-contiguous, read-only and buffer-protocol inputs, dtype=, out=, keepdims and
axis, and the exceptions for what it refuses. Runs on PoCL (CLREDUCE_TEST_DEVICE overrides).

The data are chosen so that every order of operations gives the same bits (small integers in
floats, products of powers of two), so results compare exactly; float sums of arbitrary values
are checked against the exact sum within a stated bound.
"""

import array
import math
import os
import threading

import numpy as np
import pytest

import clreduce

DEVICE = os.environ.get("CLREDUCE_TEST_DEVICE", "pocl")
NATIVE = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
# The reduction engine's types: read as they are by the reductions; scans widen the integers and
# bool (float16 scans are refused).
NARROW = [np.bool_, np.int8, np.int16, np.uint8, np.uint16]
HALF = [np.float16]
SIZES = [0, 1, 2, 2**20 + 3]
REDUCTIONS = ["sum", "prod", "min", "max", "argmin", "argmax"]
SCANS = ["cumsum", "cumprod"]


@pytest.fixture(scope="module", autouse=True)
def default_device():
    dev = clreduce.set_default_device(DEVICE)
    yield dev
    clreduce.set_default_device(None)


def data(dtype, n, op, seed=1):
    """n elements of dtype for op whose reduction and scan are exact in any order."""
    rng = np.random.default_rng(seed + n)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt == np.float16:
        # Few nonzero elements (-1, 1, 2): every partial sum and product is exact in float16,
        # whatever the order (NumPy rounds its float16 sums to float16 block by block).
        x = np.zeros(n, dtype=dt) if op != "prod" else np.ones(n, dtype=dt)
        k = min(n, 12 if op == "prod" else 1500)
        x[rng.integers(0, n, k)] = rng.choice(np.array([-1, 1, 2], dtype=dt), k)
        return x
    if op in ("prod", "cumprod"):
        if dt.kind == "f":
            # Mostly 1, with as many 2s as halves (and a few -1): every partial product is a power
            # of two within range, whatever the order.
            x = np.ones(n, dtype=dt)
            k = min(n // 4, 60)
            idx = rng.permutation(n)
            x[idx[:k]] = 2
            x[idx[k:2 * k]] = 0.5
            x[idx[2 * k:2 * k + 3]] = -1
            return x
        if dt.kind == "u":
            return rng.integers(0, 4, n).astype(dt)  # wraps as NumPy's
        return rng.integers(-3, 4, n).astype(dt)
    if dt.kind == "f":
        return rng.integers(-7, 8, n).astype(dt)  # float32 sums stay below 2^24: exact
    if dt.kind == "u":
        info = np.iinfo(dt)
        return rng.integers(0, int(info.max) + 1 if info.bits <= 32 else 2**63, n,
                            dtype=np.uint64 if info.bits > 32 else np.int64).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(int(info.min), int(info.max) + 1 if info.bits < 64 else 2**63 - 1, n,
                        dtype=np.int64).astype(dt)


def same(got, want):
    """Same value and same NumPy type (scalar or array)."""
    assert type(got) is type(want), (type(got), type(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype, (np.asarray(got).dtype,
                                                             np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", NATIVE + NARROW + HALF, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fname", REDUCTIONS)
def test_reduction_against_numpy(fname, dtype, n):
    x = data(dtype, n, fname)
    npf, clf = getattr(np, fname), getattr(clreduce, fname)
    if n == 0 and fname != "sum" and fname != "prod":
        with pytest.raises(ValueError) as want:
            npf(x)
        with pytest.raises(ValueError) as got:
            clf(x)
        assert str(got.value) == str(want.value)
        return
    same(clf(x), npf(x))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", NATIVE + NARROW, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fname", SCANS)
def test_scan_against_numpy(fname, dtype, n):
    x = data(dtype, n, fname)
    want = getattr(np, fname)(x)
    same(getattr(clreduce, fname)(x), want)
    # Exclusive: the identity first, then the inclusive scan without its last element.
    ident = want.dtype.type(0 if fname == "cumsum" else 1)
    excl = np.concatenate([np.array([ident], dtype=want.dtype), want[:-1]])[:n]
    same(getattr(clreduce, fname)(x, exclusive=True), excl)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_sum_within_bound(dtype):
    # Arbitrary values: the sum is within clreduce's bound of the exact one (a generous n*u*sum|x|
    # bound, far below what a lost or doubled element would change).
    x = (np.random.default_rng(5).standard_normal(2**20 + 3) * 1e3).astype(dtype)
    exact = math.fsum(x.astype(np.float64))
    u = np.finfo(dtype).eps / 2
    got = clreduce.sum(x)
    assert got.dtype == dtype
    assert abs(float(got) - exact) <= 64 * u * float(np.abs(x.astype(np.float64)).sum())
    # The scan: element i within the bound the library verifies against (docs/CLI.md, scans):
    # gamma_(i+1) * S_i + u * |ref_i|, S_i the sum of |x_j| up to i (the CPU path is sequential
    # within chunks of 2^20 elements, as NumPy's own cumsum is throughout).
    c = clreduce.cumsum(x)
    assert c.dtype == dtype
    ref = np.cumsum(x.astype(np.longdouble))
    k = np.arange(1, x.size + 1, dtype=np.float64) * u
    bound = k / (1 - k) * np.cumsum(np.abs(x.astype(np.float64))) + u * np.abs(ref).astype(np.float64)
    assert np.all(np.abs(c.astype(np.longdouble) - ref) <= bound)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # NumPy's own
def test_nan_and_inf(dtype):
    x = np.arange(100, dtype=dtype)
    x[[10, 40]] = np.nan
    for f in ["sum", "prod", "min", "max", "argmin", "argmax"]:
        same(getattr(clreduce, f)(x), getattr(np, f)(x))
    same(clreduce.argmax(x), np.int64(10))
    same(clreduce.cumsum(x), np.cumsum(x))
    y = np.zeros(50, dtype=dtype)
    y[[3, 7]] = np.inf
    y[20] = -np.inf
    for f in ["sum", "min", "max", "argmin", "argmax"]:
        same(getattr(clreduce, f)(y), getattr(np, f)(y))
    same(clreduce.argmax(y), np.int64(3))  # the first of two infinities
    same(clreduce.cumsum(y), np.cumsum(y))
    same(clreduce.sum(np.array([np.inf, 1], dtype=dtype)), dtype(np.inf))
    same(clreduce.prod(np.array([np.inf, 0], dtype=dtype)), np.prod(np.array([np.inf, 0], dtype=dtype)))


def test_ties_give_the_first_index():
    x = np.array([5, 1, 9, 1, 9, 0, 0], dtype=np.int64)
    assert clreduce.argmin(x) == 5 and clreduce.argmax(x) == 2
    big = np.zeros(2**20 + 3, dtype=np.float32)
    big[[7000, 300000, 900000]] = 3
    big[[5, 800000]] = -2
    same(clreduce.argmax(big), np.int64(7000))
    same(clreduce.argmin(big), np.int64(5))


def test_non_contiguous_read_only_and_buffer_inputs():
    base = data(np.int64, 3000, "sum").reshape(30, 100)
    for x in [base[::2, ::3], base.T, np.asfortranarray(base), base[:, 5], base[::-1]]:
        for f in REDUCTIONS + SCANS:
            same(getattr(clreduce, f)(x), getattr(np, f)(x))
    ro = data(np.float32, 1000, "sum")
    ro.setflags(write=False)
    for f in REDUCTIONS + SCANS:
        same(getattr(clreduce, f)(ro), getattr(np, f)(ro))
    same(clreduce.sum(array.array("i", [1, 2, 3])), np.int64(6))
    same(clreduce.max(memoryview(np.arange(5, dtype=np.uint32))), np.uint32(4))
    same(clreduce.sum([1.5, 2.5]), np.float64(4.0))
    same(clreduce.sum(7), np.int64(7))  # a 0-d array
    swapped = data(np.int32, 1000, "sum").astype(">i4")  # the other byte order
    for f in REDUCTIONS + SCANS:
        same(getattr(clreduce, f)(swapped), getattr(np, f)(swapped))


def test_dtype_and_out():
    x = np.array([2**31 - 1, 5], dtype=np.int32)
    same(clreduce.sum(x), np.sum(x))
    same(clreduce.sum(x, dtype=np.int32), np.sum(x, dtype=np.int32))  # wraps
    same(clreduce.cumsum(x, dtype=np.int32), np.cumsum(x, dtype=np.int32))
    y = np.array([1e8, 1, -1e8], dtype=np.float32)
    same(clreduce.sum(y, dtype=np.float64), np.sum(y, dtype=np.float64))
    same(clreduce.cumsum(y, dtype=np.float64), np.cumsum(y, dtype=np.float64))
    z = np.array([250, 10, 3], dtype=np.uint64)
    same(clreduce.sum(z, dtype=np.int8), np.sum(z, dtype=np.int8))
    same(clreduce.prod(z, dtype=np.uint16), np.prod(z, dtype=np.uint16))
    same(clreduce.cumsum(z, dtype=np.uint8), np.cumsum(z, dtype=np.uint8))
    same(clreduce.sum(np.arange(5, dtype=np.int64), dtype=np.float32),
         np.sum(np.arange(5, dtype=np.int64), dtype=np.float32))
    # out: NumPy works in out's type where the array casts to it safely, else casts into it.
    for a, odt in [(y, np.float64), (np.array([1e8, 1, -1e8]), np.float32),
                   (np.array([1.5, 2.5, 3.5]), np.int64), (x, np.int32), (x, np.float32)]:
        o1, o2 = np.empty((), dtype=odt), np.empty((), dtype=odt)
        r = clreduce.sum(a, out=o1)
        assert r is o1
        same(o1, np.sum(a, out=o2))
    o1 = np.empty((), dtype=np.int64)
    assert clreduce.max(np.array([1.0, 2.5]), out=o1) is o1 and o1 == 2
    o1 = np.empty((), dtype=np.int32)
    assert clreduce.argmax(np.array([1.0, 2.5]), out=o1) is o1 and o1 == 1
    with pytest.raises(TypeError):
        clreduce.argmax(np.array([1.0, 2.5]), out=np.empty((), dtype=np.float64))
    # A scan writes straight into a C-contiguous out of its result type.
    a = data(np.int32, 10000, "sum")
    o = np.empty(10000, dtype=np.int64)
    assert clreduce.cumsum(a, out=o) is o
    same(o, np.cumsum(a))
    o32 = np.empty(10000, dtype=np.int32)
    same(clreduce.cumsum(a, out=o32), np.cumsum(a, out=np.empty(10000, dtype=np.int32)))
    ostrided = np.empty(20000, dtype=np.int64)[::2]
    assert clreduce.cumsum(a, out=ostrided) is ostrided
    same(ostrided, np.cumsum(a))
    with pytest.raises(ValueError):
        clreduce.cumsum(a, out=np.empty(9999, dtype=np.int64))
    with pytest.raises(ValueError):
        clreduce.sum(a, out=np.empty(1, dtype=np.int64))
    ro = np.empty((), dtype=np.int64)
    ro.setflags(write=False)
    with pytest.raises(ValueError):
        clreduce.sum(a, out=ro)
    with pytest.raises(TypeError):
        clreduce.sum(a, out=[0])
    small = np.array([1, -3, 7, 2], dtype=np.int32)
    same(clreduce.sum(small, dtype=np.float16), np.sum(small, dtype=np.float16))
    same(clreduce.prod(small, dtype=np.float16), np.prod(small, dtype=np.float16))
    with pytest.raises(TypeError):
        clreduce.cumsum(small, dtype=np.float16)
    with pytest.raises(TypeError):
        clreduce.sum(a, dtype=np.complex64)


def test_axis_and_keepdims():
    x = data(np.int64, 24, "sum").reshape(2, 3, 4)
    for f in ["sum", "prod", "min", "max"]:
        for axis in [None, (0, 1, 2), (2, 0, 1), (-1, 0, 1), 1, -1, (0, 1), (0, 2), (2, -3)]:
            same(getattr(clreduce, f)(x, axis=axis), getattr(np, f)(x, axis=axis))
            same(getattr(clreduce, f)(x, axis=axis, keepdims=True),
                 getattr(np, f)(x, axis=axis, keepdims=True))
        with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError):
            getattr(clreduce, f)(x, axis=3)
        with pytest.raises(ValueError):
            getattr(clreduce, f)(x, axis=(0, 0))
    for f in ["argmin", "argmax"]:
        same(getattr(clreduce, f)(x), getattr(np, f)(x))
        same(getattr(clreduce, f)(x, keepdims=True), getattr(np, f)(x, keepdims=True))
        for axis in [0, 1, 2, -1]:
            same(getattr(clreduce, f)(x, axis=axis), getattr(np, f)(x, axis=axis))
            same(getattr(clreduce, f)(x, axis=axis, keepdims=True),
                 getattr(np, f)(x, axis=axis, keepdims=True))
        with pytest.raises(TypeError):
            getattr(clreduce, f)(x, axis=(0, 1))
    v = data(np.float64, 100, "sum")
    for f in REDUCTIONS:
        same(getattr(clreduce, f)(v, axis=0), getattr(np, f)(v, axis=0))
        same(getattr(clreduce, f)(v, axis=-1), getattr(np, f)(v, axis=-1))
    o = np.empty((1, 1, 1), dtype=np.int64)
    assert clreduce.sum(x, keepdims=True, out=o) is o and o[0, 0, 0] == np.sum(x)
    o = np.empty((2, 4), dtype=np.int64)
    assert clreduce.sum(x, axis=1, out=o) is o
    np.testing.assert_array_equal(o, np.sum(x, axis=1))


def test_scans_along_the_last_axis():
    for shape in [(7, 1000), (3, 4, 5), (1000, 1), (5, 0), (1, 2**17 + 3)]:
        x = data(np.int32, int(np.prod(shape)), "sum").reshape(shape)
        same(clreduce.cumsum(x, axis=-1), np.cumsum(x, axis=-1))
        same(clreduce.cumsum(x, axis=x.ndim - 1), np.cumsum(x, axis=-1))
        want = np.cumsum(x, axis=-1)
        excl = np.concatenate([np.zeros(shape[:-1] + (1,), dtype=want.dtype), want[..., :-1]],
                              axis=-1)[..., :shape[-1]]
        same(clreduce.cumsum(x, axis=-1, exclusive=True), excl)
        p = data(np.float64, int(np.prod(shape)), "cumprod").reshape(shape)
        same(clreduce.cumprod(p, axis=-1), np.cumprod(p, axis=-1))
        same(clreduce.cumsum(x), np.cumsum(x))
    xt = data(np.int64, 600, "sum").reshape(20, 30).T  # not C-contiguous
    same(clreduce.cumsum(xt, axis=1), np.cumsum(xt, axis=1))
    with pytest.raises(ValueError, match="not supported"):
        clreduce.cumsum(np.ones((3, 4)), axis=0)
    with pytest.raises(TypeError):
        clreduce.cumsum(np.ones(3), exclusive="yes")


def test_wrong_types():
    for bad in [np.ones(3, dtype=np.complex64), np.array(["a", "b"]), np.array([1, None]),
                np.array(["2020-01-01"], dtype="M8[D]")]:
        for f in REDUCTIONS + SCANS:
            with pytest.raises(TypeError, match="unsupported dtype"):
                getattr(clreduce, f)(bad)
    for f in SCANS:
        with pytest.raises(TypeError, match="unsupported dtype float16"):
            getattr(clreduce, f)(np.ones(3, dtype=np.float16))
    with pytest.raises(TypeError):
        clreduce.sum(np.ones(3), device=1.5)
    with pytest.raises(ValueError):
        clreduce.sum(np.ones(3), device=-1)
    with pytest.raises(clreduce.Error) as e:
        clreduce.sum(np.ones(3), device="no-such-device")
    assert e.value.category == "usage" and "no-such-device" in str(e.value)
    assert issubclass(clreduce.Error, RuntimeError)


def test_devices():
    ds = clreduce.devices()
    assert ds and [d.index for d in ds] == list(range(len(ds)))
    assert all(d.type and d.name and d.max_alloc > 0 for d in ds)
    d = clreduce.Device(DEVICE)
    assert d.info in ds and d.kernel_dir.endswith("cl")
    assert "clreduce.Device(" in repr(d)
    x = np.arange(1000, dtype=np.float64)
    for spec in [d, d.index, str(d.index), "cpu", DEVICE, DEVICE.upper()]:
        same(clreduce.sum(x, device=spec), np.sum(x))
    # device='cpu' keeps one Device (its built kernels) across calls.
    assert clreduce._open("cpu") is clreduce._open("cpu")
    prev = clreduce.get_default_device()
    try:
        assert clreduce.set_default_device(d) is d and clreduce.get_default_device() is d
        same(clreduce.max(x), np.max(x))
    finally:
        clreduce.set_default_device(prev)
    with pytest.raises(clreduce.Error) as e:
        clreduce.Device(DEVICE, kernel_dir=os.path.join(os.path.dirname(__file__), "no-such-dir"))
    assert e.value.category == "build"
    with pytest.raises(clreduce.Error) as e:
        clreduce.Device(DEVICE, tune={"fast-groups": "lots"})
    assert e.value.category == "usage"
    t = clreduce.Device(DEVICE, tune={"fast-groups": 3})
    same(clreduce.sum(x, device=t), np.sum(x))


def test_threads_share_a_device():
    d = clreduce.Device(DEVICE)
    xs = [data(np.int64, 50000 + i, "sum", seed=i) for i in range(8)]
    got = [None] * len(xs)

    def run(i):
        got[i] = clreduce.sum(xs[i], device=d)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, x in zip(got, xs):
        same(g, np.sum(x))


def test_docstrings():
    for f in REDUCTIONS + SCANS + ["mean", "var", "std", "dot"]:
        assert f"numpy.{f}" in getattr(clreduce, f).__doc__
    assert "clreduce" in clreduce.__doc__ and clreduce.Device.__doc__
    assert clreduce.__version__
