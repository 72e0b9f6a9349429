"""mean, var, std, dot, clreduce.reduce and reductions along axes, against NumPy: every element
type the package takes, sizes 0, 1 and 2^20 + 3, NaN and inf, ties, axes (int, tuple, negative,
keepdims), and the exceptions. Runs on PoCL (CLREDUCE_TEST_DEVICE overrides).

Bounds: integer results, min, max and the arg ops equal NumPy's exactly. mean, var, std and float
dot are computed in double on the device (every device these tests run on has fp64) and rounded
to the result type once, so they are checked against a long double reference within 4 units of
roundoff of the result type relative to the reference (float64 results: 1e-12 relative, which
covers the one-pass combination's depth at 2^20 elements).
"""

import os
import warnings

import numpy as np
import pytest

import clreduce

DEVICE = os.environ.get("CLREDUCE_TEST_DEVICE", "pocl")
NATIVE = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
NARROW = [np.bool_, np.int8, np.int16, np.uint8, np.uint16]  # read as they are by the engine
HALF = [np.float16]
SIZES = [0, 1, 2, 2**20 + 3]
AxisError = getattr(getattr(np, "exceptions", np), "AxisError")


@pytest.fixture(scope="module", autouse=True)
def default_device():
    dev = clreduce.set_default_device(DEVICE)
    yield dev
    clreduce.set_default_device(None)


def values(dtype, n, seed=1):
    """n elements of dtype: small integers (-7 to 7, 0 to 7 unsigned, bools), so every sum is
    exact in double and ties are frequent."""
    rng = np.random.default_rng(seed + n)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind == "u":
        return rng.integers(0, 8, n).astype(dt)
    return rng.integers(-7, 8, n).astype(dt)


def rtol(dt):
    dt = np.dtype(dt)
    return 4 * np.finfo(dt).eps if dt in (np.float16, np.float32) else 1e-12


def reference(fname, x, ddof=0, axis=None, keepdims=False):
    """mean, var, std in long double, two-pass, of NumPy's shape."""
    v = np.asarray(x, dtype=np.longdouble)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = v.mean(axis=axis, keepdims=True)
        if fname == "mean":
            r = m
        else:
            n = v.size if axis is None else np.prod([v.shape[k] for k in np.atleast_1d(axis)])
            # NumPy's divisor: max(n - ddof, 0); no element: NaN.
            d = np.longdouble(max(n - ddof, 0)) if n else np.longdouble(np.nan)
            r = ((v - m) ** 2).sum(axis=axis, keepdims=True) / d
            if fname == "std":
                r = np.sqrt(r)
    if not keepdims:
        r = r.reshape(np.mean(np.empty(v.shape), axis=axis).shape) if axis is not None else r.reshape(())
    return r


def close(got, want_np, ref, dt):
    """got has NumPy's type and shape, and is within the bound of the long double reference."""
    assert type(got) is type(want_np), (type(got), type(want_np))
    assert np.asarray(got).dtype == np.asarray(want_np).dtype
    assert np.shape(got) == np.shape(want_np)
    g = np.asarray(got, dtype=np.longdouble)
    r = np.asarray(ref, dtype=np.longdouble)
    nan = np.isnan(r)
    assert np.array_equal(np.isnan(g), nan), (got, ref)
    fin = np.isfinite(r)
    assert np.array_equal(g[~fin & ~nan], r[~fin & ~nan])
    err = np.abs(g[fin] - r[fin])
    assert np.all(err <= rtol(dt) * np.maximum(np.abs(r[fin]), 1)), (got, ref)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", NATIVE + NARROW + HALF, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fname", ["mean", "var", "std"])
def test_stats_against_numpy(fname, dtype, n):
    x = values(dtype, n)
    ddofs = [0, 1] if fname != "mean" else [0]
    for ddof in ddofs:
        kw = {"ddof": ddof} if fname != "mean" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = getattr(np, fname)(x, **kw)
            got = getattr(clreduce, fname)(x, **kw)
        close(got, want, reference(fname, x, ddof), want.dtype)
    if n == 0:
        with pytest.warns(RuntimeWarning):
            getattr(clreduce, fname)(x)


@pytest.mark.parametrize("fname", ["mean", "var", "std"])
def test_stats_dtype_out_keepdims_and_accuracy(fname):
    # Values far from 0 with a small spread: one-pass formulas lose them; the shifted, pairwise
    # one does not.
    rng = np.random.default_rng(5)
    x = (1e6 + rng.standard_normal(100_003)).astype(np.float64)
    close(getattr(clreduce, fname)(x), getattr(np, fname)(x), reference(fname, x), np.float64)
    x32 = x.astype(np.float32)
    close(getattr(clreduce, fname)(x32), getattr(np, fname)(x32), reference(fname, x32),
          np.float32)
    i = values(np.int32, 1000)
    close(getattr(clreduce, fname)(i, dtype=np.float32), getattr(np, fname)(i, dtype=np.float32),
          reference(fname, i), np.float32)
    k = getattr(clreduce, fname)(i, keepdims=True)
    assert k.shape == (1,) and k.dtype == np.float64
    o = np.empty((), dtype=np.float32)
    assert getattr(clreduce, fname)(i, out=o) is o
    with pytest.raises(TypeError):
        getattr(clreduce, fname)(i, dtype=np.int32)


def test_stats_nan_inf_and_ddof():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x in ([1.0, np.nan, 3.0], [1.0, np.inf, 3.0], [-np.inf, np.inf], [np.inf, np.inf]):
            a = np.array(x)
            for f in ("mean", "var", "std"):
                np.testing.assert_array_equal(getattr(clreduce, f)(a), getattr(np, f)(a))
        a = np.array([1.0, 2.0, 4.0])
        for ddof in (2, 3, 4, 0.5, -1):
            close(clreduce.var(a, ddof=ddof), np.var(a, ddof=ddof), reference("var", a, ddof),
                  np.float64)
    with pytest.warns(RuntimeWarning):
        clreduce.var(a, ddof=3)
    with pytest.raises(TypeError):
        clreduce.var(a, ddof="1")


SHAPES_AXES = [
    ((2, 3, 4), [0, 1, 2, -1, (0, 1), (1, 2), (0, 2), (-1, -3), (2, 0, 1)]),
    ((5, 1, 7), [0, 1, 2, (0, 2)]),
    ((3, 0, 2), [0, 1, 2, (0, 2)]),
    ((1000, 3), [0, 1]),
]
# Every shape and axis above for one signed, one floating and one narrow type; the other types
# take one axis and the empty ones, for each function's result type, values and identity. Each
# type and function builds kernels of its own, which is most of the time on PoCL with an empty
# cache: the full table for every type took 3.5 minutes.
FULL_AXES = [np.int32, np.float64, np.int8]
SHAPES_AXES_SOME = [
    ((2, 3, 4), [-1]),
    ((3, 0, 2), [1, (0, 2)]),
]


@pytest.mark.parametrize("dtype", NATIVE + NARROW, ids=lambda d: np.dtype(d).name)
def test_reductions_along_axes(dtype):
    for shape, axes in SHAPES_AXES if dtype in FULL_AXES else SHAPES_AXES_SOME:
        x = values(dtype, int(np.prod(shape))).reshape(shape)
        for axis in axes:
            for keepdims in (False, True):
                for f in ("sum", "prod", "min", "max", "argmin", "argmax", "mean", "var", "std"):
                    if f.startswith("arg") and isinstance(axis, tuple):
                        continue
                    npf, clf = getattr(np, f), getattr(clreduce, f)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        try:
                            want = npf(x, axis=axis, keepdims=keepdims)
                        except ValueError:
                            with pytest.raises(ValueError):
                                clf(x, axis=axis, keepdims=keepdims)
                            continue
                        got = clf(x, axis=axis, keepdims=keepdims)
                    if f in ("mean", "var", "std"):
                        close(got, want, reference(f, x, 0, axis, keepdims), want.dtype)
                    else:
                        assert type(got) is type(want) and got.dtype == want.dtype, (f, axis)
                        np.testing.assert_array_equal(got, want, err_msg=f"{f} axis={axis}")


def test_axes_nan_ties_and_large():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 2.0, 1.0], [np.inf, -np.inf, 0.0]])
    for f in ("sum", "min", "max", "argmin", "argmax"):
        for axis in (0, 1):
            with np.errstate(invalid="ignore"):
                np.testing.assert_array_equal(getattr(clreduce, f)(x, axis=axis),
                                              getattr(np, f)(x, axis=axis))
    # 2^20 + 3 elements along a long axis and across many short ones.
    y = values(np.float32, 2**20 + 3)
    for shape in ((2**20 + 3, 1), (1, 2**20 + 3)):
        z = y.reshape(shape)
        for axis in (0, 1):
            np.testing.assert_array_equal(clreduce.sum(z, axis=axis), np.sum(z, axis=axis))
            np.testing.assert_array_equal(clreduce.argmax(z, axis=axis), np.argmax(z, axis=axis))
    z = values(np.int32, 1024 * 1027).reshape(1024, 1027)
    for axis in (0, 1):
        np.testing.assert_array_equal(clreduce.sum(z, axis=axis), np.sum(z, axis=axis))
        np.testing.assert_array_equal(clreduce.argmin(z, axis=axis), np.argmin(z, axis=axis))
        close(clreduce.mean(z, axis=axis), np.mean(z, axis=axis), reference("mean", z, 0, axis),
              np.float64)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", NATIVE + NARROW + HALF, ids=lambda d: np.dtype(d).name)
def test_dot_against_numpy(dtype, n):
    x, y = values(dtype, n, 1), values(dtype, n, 2)
    want = np.dot(x, y)
    got = clreduce.dot(x, y)
    assert type(got) is type(want) and got.dtype == want.dtype
    if want.dtype.kind == "f":
        exact = np.dot(x.astype(np.float64), y.astype(np.float64))  # exact: small integers
        assert abs(float(got) - exact) <= rtol(want.dtype) * max(abs(exact), 1)
    else:
        assert got == want


def test_dot_mixed_types_wrapping_and_refusals():
    a = np.array([2**62, 3, -5], dtype=np.int64)
    b = np.array([4, 7, 11], dtype=np.int64)
    assert clreduce.dot(a, b) == np.dot(a, b)  # wraps modulo 2^64 as NumPy's
    c = np.array([200, 100, 3], dtype=np.uint8)
    assert clreduce.dot(c, c) == np.dot(c, c) and clreduce.dot(c, c).dtype == np.uint8
    for p, q in ((np.int32, np.float32), (np.uint32, np.int32), (np.float32, np.float64),
                 (np.int8, np.uint16), (np.uint64, np.int64)):
        x, y = values(p, 1000, 3), values(q, 1000, 4)
        want, got = np.dot(x, y), clreduce.dot(x, y)
        assert got.dtype == want.dtype
        assert abs(float(got) - float(want)) <= 1e-6 * max(abs(float(want)), 1)
    f = np.array([1.0, np.nan]), np.array([np.inf, 1.0])
    assert np.isnan(clreduce.dot(*f))
    with pytest.raises(ValueError, match="not aligned"):
        clreduce.dot(np.ones(3), np.ones(4))
    with pytest.raises(ValueError):
        clreduce.dot(np.ones((2, 2)), np.ones((2, 2)))
    o = np.empty((), dtype=np.float64)
    assert clreduce.dot(np.ones(5), np.ones(5), out=o) is o and o == 5


def test_user_reductions():
    x, y = values(np.int32, 10_001, 1), values(np.int32, 10_001, 2)
    got = clreduce.reduce(x, y, map="(long)x * y", reduce="a + b", identity="0")
    assert type(got) is np.int64 and got == np.dot(x.astype(np.int64), y)
    f = values(np.float32, 10_001, 3)
    m = clreduce.reduce(f, map="fabs(x)", reduce="fmax(a, b)", identity="-INFINITY")
    assert type(m) is np.float32 and m == np.max(np.abs(f))
    mean = clreduce.reduce(f, map="x", reduce="a + b", identity="0", post="a / n",
                           dtype=np.float64)
    assert type(mean) is np.float64 and abs(mean - np.mean(f.astype(np.float64))) < 1e-12
    pos = clreduce.reduce(x, map="x", reduce="a + b", identity="0", where="x > 0")
    assert pos == x[x > 0].sum()
    # Along axes, with keepdims: a user expression per line.
    z = x[:10_000].reshape(100, 4, 25)
    for axis in (0, 1, 2, (0, 2), -1):
        np.testing.assert_array_equal(
            clreduce.reduce(z, map="x", reduce="max(a, b)", identity="LONG_MIN", axis=axis),
            np.max(z, axis=axis).astype(np.int64))
    k = clreduce.reduce(z, map="x", reduce="a + b", identity="0", axis=1, keepdims=True)
    np.testing.assert_array_equal(k, np.sum(z, axis=1, keepdims=True))
    # n = 0: post(identity, 0).
    assert clreduce.reduce(np.zeros(0, np.int32), map="x", reduce="a + b", identity="0",
                           post="a + 7") == 7
    # Refusals: the laws, text that is not an expression, one that does not compile.
    with pytest.raises(clreduce.Error, match="associative") as e:
        clreduce.reduce(x, map="x", reduce="a - b", identity="0")
    assert e.value.category == "usage"
    with pytest.raises(clreduce.Error, match="not one expression"):
        clreduce.reduce(x, map="x; x", reduce="a + b", identity="0")
    with pytest.raises(clreduce.Error, match="does not compile"):
        clreduce.reduce(x, map="x * q", reduce="a + b", identity="0")
    with pytest.raises(clreduce.Error, match="name y"):
        clreduce.reduce(x, map="x * y", reduce="a + b", identity="0")
    with pytest.raises(ValueError, match="one shape"):
        clreduce.reduce(x, y[:5], map="x * y", reduce="a + b", identity="0")
    with pytest.raises(TypeError):
        clreduce.reduce(x, x, x, x, x, map="x", reduce="a + b", identity="0")
    with pytest.raises(TypeError):
        clreduce.reduce(x, map=1, reduce="a + b", identity="0")
    with pytest.raises(TypeError):
        clreduce.reduce(x, map="x", reduce="a + b", identity="0", dtype=np.float16)
