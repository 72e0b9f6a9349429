"""pyopencl.array.Array inputs: reduced and scanned on the array's own context and queue, read
where they lie (views with an offset too), results against NumPy. Skipped when PyOpenCL is not
importable or finds no device that clreduce's test device names."""

import os

import numpy as np
import pytest

import clreduce

try:
    import pyopencl as cl
    import pyopencl.array as cla
except ImportError as e:  # not installed, or installed without a loadable OpenCL library
    pytest.skip(f"PyOpenCL is not importable: {e}", allow_module_level=True)

DEVICE = os.environ.get("CLREDUCE_TEST_DEVICE", "pocl")
N = 2**16 + 5


@pytest.fixture(scope="module")
def queue():
    """A PyOpenCL queue on the device clreduce's tests use (same platform and device name)."""
    info = clreduce.Device(DEVICE).info
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        pytest.skip(f"PyOpenCL finds no OpenCL platform: {e}")
    for p in platforms:
        for d in p.get_devices():
            if p.name == info.platform and d.name == info.name:
                return cl.CommandQueue(cl.Context([d]))
    pytest.skip(f"PyOpenCL finds no device {info.name!r} of platform {info.platform!r}")


def values(dtype, n=N, seed=5):
    return np.random.default_rng(seed).integers(-1000, 1000, n).astype(dtype)


VIEWS = [slice(None), slice(3, None), slice(5, -7)]


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("view", VIEWS, ids=["whole", "from3", "5to-7"])
@pytest.mark.parametrize("name", ["sum", "min", "argmax"])
def test_reductions(queue, dtype, view, name):
    h = values(dtype)
    a = cla.to_device(queue, h)[view]
    assert (a.offset != 0) == (view.start is not None)
    got = getattr(clreduce, name)(a)
    want = getattr(np, name)(h[view])
    assert isinstance(got, np.generic) and got.dtype == want.dtype  # a NumPy scalar
    assert got == want


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("view", VIEWS, ids=["whole", "from3", "5to-7"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum(queue, dtype, view, exclusive):
    h = values(dtype)
    a = cla.to_device(queue, h)[view]
    got = clreduce.cumsum(a, exclusive=exclusive)
    want = np.cumsum(h[view])
    if exclusive:
        want = want - h[view]
    assert isinstance(got, cla.Array) and got.queue is queue and got.dtype == want.dtype
    np.testing.assert_array_equal(got.get(), want)


def test_sees_the_queues_earlier_work(queue):
    h = values(np.int32)
    b = cla.to_device(queue, h) + 1  # a kernel enqueued on the queue, not waited for
    assert clreduce.sum(b) == h.sum() + N
    np.testing.assert_array_equal(clreduce.cumsum(b * 2).get(), np.cumsum((h + 1) * 2))


def test_in_order_queue_is_run_on_directly(queue):
    """PyOpenCL's default queue is in order: the array's Device runs on it (QueueUse::kProgram),
    each call between kernels of the program's enqueued on it and not waited for."""
    h = values(np.int32)
    a = cla.to_device(queue, h)
    assert clreduce._cl_device(a, None, "sum")._dev.queue_use() == "program"
    for k in range(1, 4):
        a = a + 1
        assert clreduce.sum(a) == h.sum() + k * N
        assert clreduce.argmax(a) == np.argmax(h)
        np.testing.assert_array_equal(clreduce.cumsum(a).get(), np.cumsum(h + k))


def test_out_of_order_queue(queue):
    """An out-of-order queue gets a queue of clreduce's own beside it (QueueUse::kOwn)."""
    flag = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    if not queue.device.queue_properties & flag:
        pytest.skip("the device has no out-of-order queues")
    q = cl.CommandQueue(queue.context, properties=flag)
    h = values(np.float32)
    a = cla.to_device(q, h)
    assert clreduce._cl_device(a, None, "sum")._dev.queue_use() == "own"
    assert clreduce.max(a) == h.max()
    assert clreduce.argmax(a) == np.argmax(h)
    np.testing.assert_allclose(clreduce.cumsum(a).get(), np.cumsum(h), rtol=1e-5, atol=1)


@pytest.mark.parametrize("view", VIEWS[:2], ids=["whole", "from3"])
def test_axes_keepdims_and_dtype(queue, view):
    h = values(np.int32, 40 * 33 + 3)
    a = cla.to_device(queue, h)[view][: 40 * 33].reshape(40, 33)
    hv = h[view][: 40 * 33].reshape(40, 33)
    for axis in (0, 1):
        for name in ("sum", "max", "argmin"):
            got = getattr(clreduce, name)(a, axis=axis)
            want = getattr(np, name)(hv, axis=axis)
            assert isinstance(got, cla.Array) and got.dtype == want.dtype
            np.testing.assert_array_equal(got.get(), want)
    got = clreduce.sum(a, keepdims=True)
    assert isinstance(got, cla.Array) and got.shape == (1, 1) and got.get()[0, 0] == hv.sum()
    got = clreduce.sum(a, dtype=np.int32)
    assert got.dtype == np.int32 and got == hv.sum(dtype=np.int32)
    np.testing.assert_array_equal(clreduce.cumsum(a, axis=1).get(), np.cumsum(hv, axis=1))


def test_narrow_and_empty(queue):
    h = values(np.int16, 1000)
    a = cla.to_device(queue, h)
    assert clreduce.sum(a) == h.sum() and clreduce.sum(a).dtype == h.sum().dtype
    assert clreduce.max(a) == h.max() and clreduce.max(a).dtype == np.int16
    e = cla.empty(queue, 0, np.float32)
    assert clreduce.sum(e) == 0
    assert clreduce.cumsum(e).shape == (0,)
    with pytest.raises(ValueError):
        clreduce.min(e)


def test_offsets(queue):
    h = values(np.int32, 3012)
    offsets = np.array([0, 0, 4, 4, 3000, 3009])
    for view in VIEWS[:2]:
        a = cla.to_device(queue, h)[view]
        hv = h[view][:3009]
        got = clreduce.sum(a, offsets=offsets)
        assert isinstance(got, cla.Array) and got.dtype == np.int64
        np.testing.assert_array_equal(
            got.get(), [hv[offsets[s]:offsets[s + 1]].sum() for s in range(5)])
        got = clreduce.argmax(a, offsets=[0, 4, 3000])
        np.testing.assert_array_equal(got.get(), [np.argmax(hv[:4]), np.argmax(hv[4:3000])])
    a = cla.to_device(queue, h)[3:]
    scan_offsets = np.array([0, 0, 4, 4, 3000, a.size])
    got = clreduce.cumsum(a, offsets=scan_offsets).get()
    want = np.concatenate([np.cumsum(h[3:][scan_offsets[s]:scan_offsets[s + 1]])
                           for s in range(5)])
    np.testing.assert_array_equal(got, want)


def test_refusals(queue):
    a = cla.to_device(queue, values(np.int32, 100))
    with pytest.raises(ValueError, match="contiguous"):
        clreduce.sum(a[::2])
    with pytest.raises(ValueError, match="device="):
        clreduce.sum(a, device=DEVICE)
    with pytest.raises(TypeError, match="out="):
        clreduce.sum(a, out=np.zeros(()))
    with pytest.raises(TypeError, match="dtype"):
        clreduce.sum(cla.to_device(queue, np.zeros(4, np.complex64)))
    with pytest.raises(TypeError, match="float16"):
        clreduce.cumsum(cla.to_device(queue, np.zeros(4, np.float16)))
    with pytest.raises(TypeError, match="mixed"):
        clreduce.dot(a, values(np.int32, 100))
    with pytest.raises(TypeError, match="out="):
        clreduce.mean(a, out=np.zeros(()))
    with pytest.raises(ValueError, match="device="):
        clreduce.std(a, device=DEVICE)
    with pytest.raises(ValueError, match="contiguous"):
        clreduce.reduce(a[::2], map="x", reduce="a + b", identity="0")
    other = cl.CommandQueue(cl.Context([queue.device]))
    with pytest.raises(ValueError, match="one context"):
        clreduce.dot(a, cla.to_device(other, values(np.int32, 100)))


# Views read where they lie: whole, at an element offset (copied on the device: not at the base
# alignment), and at 256 bytes (a sub-buffer where the device's base alignment divides it).
STAT_VIEWS = [slice(None), slice(3, None), slice(64, -7)]


def close(got, want, rtol):
    assert isinstance(got, np.generic) and got.dtype == want.dtype, (got, want)
    assert abs(float(got) - float(want)) <= rtol * max(abs(float(want)), 1), (got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int8, np.float16, np.uint16])
@pytest.mark.parametrize("view", STAT_VIEWS, ids=["whole", "from3", "from64"])
def test_mean_var_std_dot_and_reduce(queue, dtype, view):
    h, g = values(dtype, seed=5) % 50, values(dtype, seed=6) % 50  # small: float16 keeps them
    a, b = cla.to_device(queue, h)[view], cla.to_device(queue, g)[view]
    hv, gv = h[view], g[view]
    rtol = 4 * np.finfo(np.float16).eps if dtype == np.float16 else 1e-6
    for name in ("mean", "var", "std"):
        close(getattr(clreduce, name)(a), getattr(np, name)(hv.astype(np.float64)).astype(
            getattr(np, name)(hv[:2]).dtype), rtol)
    close(clreduce.var(a, ddof=1), np.var(hv.astype(np.float64), ddof=1).astype(
        np.var(hv[:2]).dtype), rtol)
    if dtype == np.float16:  # a dot product within float16's range
        hv, gv = hv[:1000] % 4, gv[:1000] % 4
        a, b = cla.to_device(queue, hv), cla.to_device(queue, gv)
    want = np.dot(hv.astype(np.float64), gv.astype(np.float64))
    got = clreduce.dot(a, b)
    assert got.dtype == np.dot(hv[:2], gv[:2]).dtype
    if np.dtype(dtype).kind == "f":
        close(got, want.astype(got.dtype), rtol)
    else:
        assert got == np.dot(hv, gv)  # integers wrap as NumPy's (int8 in 8 bits)
    got = clreduce.reduce(a, b, map="x * y + 1", reduce="a + b", identity="0", dtype=np.int64)
    assert got.dtype == np.int64
    assert got == np.sum(hv.astype(np.int64) * gv.astype(np.int64) + 1)
    got = clreduce.reduce(a, map="x", reduce="max(a, b)", identity="-INFINITY", dtype=np.float64)
    assert got == float(hv.max())


def test_stats_and_reduce_along_axes(queue):
    h = values(np.int32, 40 * 33 + 64)
    for view in (slice(None), slice(64, None), slice(3, None)):
        a = cla.to_device(queue, h)[view][: 40 * 33].reshape(40, 33)
        hv = h[view][: 40 * 33].reshape(40, 33)
        for axis in (0, 1):
            for name in ("mean", "var", "std"):
                got = getattr(clreduce, name)(a, axis=axis)
                want = getattr(np, name)(hv, axis=axis)
                assert isinstance(got, cla.Array) and got.queue is queue
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_allclose(got.get(), want, rtol=1e-12)
            got = clreduce.reduce(a, map="x", reduce="a + b", identity="0", axis=axis)
            assert isinstance(got, cla.Array) and got.dtype == np.int64
            np.testing.assert_array_equal(got.get(), hv.sum(axis=axis))
        got = clreduce.mean(a, keepdims=True)
        assert isinstance(got, cla.Array) and got.shape == (1, 1)
        np.testing.assert_allclose(got.get(), np.mean(hv, keepdims=True), rtol=1e-12)


def test_engine_types_whole_arrays(queue):
    # float16, bool, int8, uint8, int16, uint16: read as they are (the library's engine), results
    # of NumPy's types.
    rng = np.random.default_rng(9)
    for dtype in (np.float16, np.bool_, np.int8, np.uint8, np.int16, np.uint16):
        h = rng.integers(0, 2 if dtype in (np.bool_, np.float16) else 100, N).astype(dtype)
        h[N // 3] = 1 if dtype == np.bool_ else 120  # one largest, for argmax
        for view in (slice(None), slice(3, None), slice(64, -7)):
            a = cla.to_device(queue, h)[view]
            for name in ("sum", "max", "min", "argmax", "argmin"):
                got, want = getattr(clreduce, name)(a), getattr(np, name)(h[view])
                assert got.dtype == want.dtype, (dtype, name)
                if dtype == np.float16 and name == "sum":
                    # NumPy adds in float32 blocks, rounding to float16 between them; clreduce
                    # rounds the exact sum once.
                    assert got == np.float16(h[view].astype(np.float64).sum())
                else:
                    assert got == want, (dtype, name)
        assert clreduce.cumsum(cla.to_device(queue, h[:1000]) if dtype != np.float16 else
                               cla.to_device(queue, h[:1000].astype(np.float32))).get()[-1] == \
            np.cumsum(h[:1000].astype(np.float64))[-1]
