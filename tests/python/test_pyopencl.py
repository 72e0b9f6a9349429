"""pyopencl.array.Array inputs: reduced and scanned on the array's own context and queue, read
where they lie (views with an offset too), results against NumPy. Every result is a new pyopencl
array on the input's queue (0-d for a whole-array reduction), from the input's allocator; the
kept plans' calls are not waited for, so many calls run before one get(). Skipped when PyOpenCL
is not importable or finds no device that clreduce's test device names."""

import os

import numpy as np
import pytest

import clreduce

try:
    import pyopencl as cl
    import pyopencl.array as cla
    import pyopencl.tools
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


def device_scalar(got, want, queue=None):
    """got is what NumPy's want is, held on the device: a 0-d pyopencl array (want's shape with
    keepdims) of want's dtype on the input's queue. Returns its value, read back."""
    want = np.asarray(want)
    assert isinstance(got, cla.Array), type(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want)
    if queue is not None:
        assert got.queue is queue
    return got.get()


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
    assert device_scalar(got, want, queue) == want


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
    assert clreduce.sum(b).get() == h.sum() + N
    np.testing.assert_array_equal(clreduce.cumsum(b * 2).get(), np.cumsum((h + 1) * 2))


def test_in_order_queue_is_run_on_directly(queue):
    """PyOpenCL's default queue is in order: the array's Device runs on it (QueueUse::kProgram),
    each call between kernels of the program's enqueued on it and not waited for."""
    h = values(np.int32)
    a = cla.to_device(queue, h)
    assert clreduce._cl_device(a, None, "sum")._dev.queue_use() == "program"
    for k in range(1, 4):
        a = a + 1
        assert clreduce.sum(a).get() == h.sum() + k * N
        assert clreduce.argmax(a).get() == np.argmax(h)
        np.testing.assert_array_equal(clreduce.cumsum(a).get(), np.cumsum(h + k))


def test_out_of_order_queue(queue):
    """An out-of-order queue gets a queue of clreduce's own beside it (QueueUse::kOwn)."""
    flag = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    if not queue.device.queue_properties & flag:
        pytest.skip("the device has no out-of-order queues")
    q = cl.CommandQueue(queue.context, properties=flag)
    h = values(np.float32)
    pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(q))
    a = cla.to_device(q, h, allocator=pool)
    assert clreduce._cl_device(a, None, "sum")._dev.queue_use() == "own"
    # The kept plans run on clreduce's queue beside this one and are waited for there: the
    # results are written before the call returns, for any queue.
    results = [(clreduce.max(a + k), h.max() + k) for k in range(5)]
    results += [(clreduce.argmax(a), np.argmax(h)),
                (clreduce.sum(a.astype(np.int32)), h.astype(np.int64).sum())]
    for got, want in results:
        assert got.queue is q and got.allocator is pool
        assert got.get() == want
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
    got = clreduce.argmax(a, keepdims=True)
    assert device_scalar(got, np.argmax(hv, keepdims=True), queue) == np.argmax(hv)
    got = clreduce.sum(a, dtype=np.int32)
    assert device_scalar(got, hv.sum(dtype=np.int32)) == hv.sum(dtype=np.int32)
    got = clreduce.sum(a, axis=(0, 1), dtype=np.float64)  # every axis: the whole array
    assert device_scalar(got, hv.sum(dtype=np.float64)) == hv.sum()
    np.testing.assert_array_equal(clreduce.cumsum(a, axis=1).get(), np.cumsum(hv, axis=1))


def test_narrow_and_empty(queue):
    h = values(np.int16, 1000)
    a = cla.to_device(queue, h)
    assert device_scalar(clreduce.sum(a), h.sum(), queue) == h.sum()
    assert device_scalar(clreduce.max(a), h.max(), queue) == h.max()
    # Empty arrays as NumPy: sum and prod give their identity (a 0-d array too), the others
    # raise.
    e = cla.empty(queue, 0, np.float32)
    assert device_scalar(clreduce.sum(e), np.sum(np.empty(0, np.float32)), queue) == 0
    assert device_scalar(clreduce.prod(e), np.float32(1)) == 1
    assert device_scalar(clreduce.sum(cla.empty(queue, (0, 3), np.int32), keepdims=True),
                         np.zeros((1, 1), np.int64)) == 0
    assert clreduce.cumsum(e).shape == (0,)
    for name in ("min", "max", "argmin", "argmax"):
        with pytest.raises(ValueError):
            getattr(clreduce, name)(e)


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
    got = device_scalar(got, want)
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
    if np.dtype(dtype).kind == "f":
        close(got, want.astype(np.dot(hv[:2], gv[:2]).dtype), rtol)
    else:  # integers wrap as NumPy's (int8 in 8 bits)
        assert device_scalar(got, np.dot(hv, gv), queue) == np.dot(hv, gv)
    got = clreduce.reduce(a, b, map="x * y + 1", reduce="a + b", identity="0", dtype=np.int64)
    want = np.sum(hv.astype(np.int64) * gv.astype(np.int64) + 1)
    assert device_scalar(got, want, queue) == want
    got = clreduce.reduce(a, map="x", reduce="max(a, b)", identity="-INFINITY", dtype=np.float64)
    assert device_scalar(got, np.float64(hv.max())) == float(hv.max())
    got = clreduce.reduce(a, map="x", reduce="a + b", identity="0", keepdims=True)
    assert got.shape == (1,) and got.get()[0] == hv.astype(np.float64).sum()


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
                want = getattr(np, name)(h[view])
                got = device_scalar(getattr(clreduce, name)(a), want, queue)
                if dtype == np.float16 and name == "sum":
                    # NumPy adds in float32 blocks, rounding to float16 between them; clreduce
                    # rounds the exact sum once.
                    assert got == np.float16(h[view].astype(np.float64).sum())
                else:
                    assert got == want, (dtype, name)
        assert clreduce.cumsum(cla.to_device(queue, h[:1000]) if dtype != np.float16 else
                               cla.to_device(queue, h[:1000].astype(np.float32))).get()[-1] == \
            np.cumsum(h[:1000].astype(np.float64))[-1]


def pool_of(queue):
    return cl.tools.MemoryPool(cl.tools.ImmediateAllocator(queue))


WHOLE = ["sum", "prod", "min", "max", "argmin", "argmax", "mean", "var", "std"]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64, np.float32,
                                   np.float64, np.int8, np.uint16, np.float16, np.bool_])
def test_whole_array_results_stay_on_the_device(queue, dtype):
    """Every whole-array reduction of a pyopencl array gives a pyopencl array of NumPy's dtype
    and shape (0-d; keepdims: all ones) on the input's queue: the kept plans' (the six types)
    written there by the device, the engine's (narrow types, mean, var, std, dot, reduce) written
    there from the host. Integers exactly; floats within the stated bounds."""
    if dtype == np.float64 and not clreduce.Device(DEVICE).info.fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(3)
    hi = 2 if dtype == np.bool_ else 4 if dtype == np.float16 else 100
    h = rng.integers(0, hi, (37, 29)).astype(dtype)
    hp = rng.integers(1, 3, (3, 4)).astype(dtype)  # products within every type's range
    a, p = cla.to_device(queue, h), cla.to_device(queue, hp)
    hd = h.astype(np.float64)
    for name in WHOLE:
        x, hx = (p, hp) if name == "prod" else (a, h)
        for keepdims in (False, True):
            want = getattr(np, name)(hx, keepdims=keepdims)
            got = device_scalar(getattr(clreduce, name)(x, keepdims=keepdims), want, queue)
            if want.dtype.kind == "f" and name in ("mean", "var", "std"):
                exact = getattr(np, name)(hx.astype(np.float64), keepdims=keepdims)
                rtol = 4 * np.finfo(want.dtype).eps if want.dtype.itemsize <= 4 else 1e-12
                np.testing.assert_allclose(got.astype(np.float64), exact, rtol=rtol)
            elif want.dtype == np.float16 and name == "sum":  # one rounding of the exact sum
                assert got == np.float16(hd.sum()).reshape(got.shape)
            else:  # exact: integers, and float sums of small integers
                np.testing.assert_array_equal(got, want)
    f = a.reshape(-1)
    want = np.dot(h.reshape(-1), h.reshape(-1))
    got = device_scalar(clreduce.dot(f, f), want, queue)
    if dtype == np.float16:
        assert got == np.float16(np.dot(hd.reshape(-1), hd.reshape(-1)))
    else:
        assert got == want
    got = clreduce.reduce(a, map="x", reduce="a + b", identity="0", dtype=np.int64)
    assert device_scalar(got, np.int64(0), queue) == hd.sum()


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint64, np.float64, np.int8])
def test_arg_ties_give_the_first_index(queue, dtype):
    if dtype == np.float64 and not clreduce.Device(DEVICE).info.fp64:
        pytest.skip("no fp64")
    n = 5000
    h = np.full(n, 3, dtype=dtype)
    for k in (17, 1100, 2500, n - 1):  # ties of the largest and of the smallest
        h[k] = 9
        h[k + 7 if k + 7 < n else 3] = 1
    a = cla.to_device(queue, h)
    for view in (slice(None), slice(20, None)):
        for name in ("argmax", "argmin"):
            want = getattr(np, name)(h[view])
            assert device_scalar(getattr(clreduce, name)(a[view]), want, queue) == want
    if np.dtype(dtype).kind == "f":  # the first NaN, as NumPy's
        h[[40, 900]] = np.nan
        a = cla.to_device(queue, h)
        assert clreduce.argmax(a).get() == 40 and clreduce.argmin(a).get() == 40


def test_results_come_from_the_inputs_allocator(queue):
    """A user's pyopencl.tools.MemoryPool serves every result, as PyOpenCL's own functions
    allocate theirs: the result's allocator is the input's and its buffer one of the pool's."""
    pool = pool_of(queue)
    h = values(np.int32, 40 * 33)
    a = cla.to_device(queue, h, allocator=pool).reshape(40, 33)
    calls = {
        "sum": lambda: clreduce.sum(a),
        "argmax": lambda: clreduce.argmax(a),
        "sum keepdims": lambda: clreduce.sum(a, keepdims=True),
        "sum int8 (engine)": lambda: clreduce.sum(a.astype(np.int8)),
        "sum dtype=float64": lambda: clreduce.sum(a, dtype=np.float64),
        "mean": lambda: clreduce.mean(a),
        "dot": lambda: clreduce.dot(a.reshape(-1), a.reshape(-1)),
        "reduce": lambda: clreduce.reduce(a, map="x", reduce="a + b", identity="0"),
        "sum axis": lambda: clreduce.sum(a, axis=0),
        "sum offsets": lambda: clreduce.sum(a.reshape(-1), offsets=[0, 5, 40 * 33]),
        "cumsum": lambda: clreduce.cumsum(a),
        "cumsum axis": lambda: clreduce.cumsum(a, axis=1),
        "sum of empty": lambda: clreduce.sum(a[:0]),
    }
    for what, call in calls.items():
        r = call()
        queue.finish()
        before = pool.active_blocks
        assert isinstance(r, cla.Array) and r.allocator is pool, what
        assert isinstance(r.base_data, cl.tools.PooledBuffer), (what, type(r.base_data))
        del r
        assert pool.active_blocks == before - 1, what  # its block back to the pool
    # The default allocator where the input has none: a buffer of the array's context.
    r = clreduce.sum(cla.to_device(queue, h))
    assert r.allocator is None and r.context == queue.context and r.get() == h.sum()


def assert_made_as(r, first, x, q, name):
    """r, a kept call's result for input x on queue q, is an array as the first call's result:
    the same type and attributes but its buffer, events and allocator (x's), on q."""
    assert type(r) is type(first) and set(vars(r)) == set(vars(first))
    for key in vars(first):
        if key not in ("base_data", "events", "allocator"):
            assert getattr(r, key) is getattr(first, key) or (
                getattr(r, key) == getattr(first, key)), (name, key)
    assert r.allocator is x.allocator and r.queue is q and r.context is x.context
    assert r.base_data is not first.base_data and r.events == []


def test_kept_calls_give_what_the_general_path_gives(queue):
    """A whole-array reduction with every argument at its default is kept per (op, dtype,
    queue) once it has run: later calls of arrays on that queue (other allocators, offsets,
    shapes, Fortran order) give arrays as the first call's (shape, dtype, strides, offset,
    context, queue, the input's allocator; a buffer and event list of their own) and the right
    values, and what the kept call does not take (argmax of a Fortran-ordered array, an empty
    or strided one) is still refused or answered as before."""
    q = cl.CommandQueue(queue.context)  # a queue of its own: nothing kept for it yet
    pool = pool_of(q)
    h = values(np.int32, 1000)
    hf = np.asfortranarray(h.reshape(40, 25))
    for dtype in (np.int32, np.float32):
        hd = h.astype(dtype)
        for name in ("sum", "max", "argmax", "argmin", "min"):
            f = getattr(clreduce, name)
            first = f(cla.to_device(q, hd))
            assert any(k[0] == name and k[2] == id(q) for k in clreduce._cl_calls), name
            inputs = [(cla.to_device(q, hd), hd), (cla.to_device(q, hd, allocator=pool), hd),
                      (cla.to_device(q, hd)[7:], hd[7:]),
                      (cla.to_device(q, hd.reshape(40, 25), allocator=pool), hd.reshape(40, 25))]
            if not name.startswith("arg"):
                inputs.append((cla.to_device(q, hf.astype(dtype)), hf.astype(dtype)))
            for x, hx in inputs:
                r = f(x)
                assert_made_as(r, first, x, q, name)
                assert r.events is not first.events
                if x.allocator is pool:
                    assert isinstance(r.base_data, cl.tools.PooledBuffer)
                want = getattr(np, name)(hx)
                got = device_scalar(r, want, q)
                assert got == want, (name, got, want)  # float sums of small integers: exact
                r.events.append(None)  # a list of its own: the next result's stays empty
        with pytest.raises(ValueError, match="contiguous"):
            clreduce.argmax(cla.to_device(q, hf.astype(dtype)))
        with pytest.raises(ValueError, match="contiguous"):
            clreduce.sum(cla.to_device(q, hd)[::2])
        with pytest.raises(ValueError, match="empty"):
            clreduce.argmax(cla.to_device(q, hd)[:0])
        assert device_scalar(clreduce.sum(cla.to_device(q, hd)[:0]), hd[:0].sum(), q) == 0


def test_kept_scans_give_what_the_general_path_gives(queue):
    """A whole-array scan with its arguments at their defaults (exclusive either way) is kept per
    (op, dtype, queue, exclusive, size) once it has run: later calls of C-contiguous arrays of
    that size on that queue (other allocators, an offset view, another shape) give arrays as
    the first call's (shape, dtype, strides, context, queue, the input's allocator; a buffer and
    event list of their own) and NumPy's values; other sizes, strided arrays and other
    arguments still go the general way."""
    q = cl.CommandQueue(queue.context)  # a queue of its own: nothing kept for it yet
    pool = pool_of(q)
    h = values(np.int32, 1007)
    for dtype in (np.int32, np.float32):
        for name, exclusive in (("cumsum", False), ("cumsum", True), ("cumprod", False)):
            hd = (h % 3 + 1).astype(dtype) if name == "cumprod" else h.astype(dtype)
            f = getattr(clreduce, name)

            def check(r, hx):
                want = getattr(np, name)(hx.reshape(-1))
                if exclusive:
                    want = np.concatenate(([0], want[:-1])).astype(want.dtype)
                assert r.dtype == want.dtype and r.shape == want.shape
                if dtype == np.float32 and name == "cumprod":  # products: rounded per step
                    np.testing.assert_allclose(r.get(), want, rtol=1e-4)
                else:  # integers, and float sums of small integers: exact
                    np.testing.assert_array_equal(r.get(), want)

            first = f(cla.to_device(q, hd[:1000]), exclusive=exclusive)
            assert any(k[0] == ("prod" if name == "cumprod" else "sum") and k[2] == id(q)
                       and k[3] is exclusive and k[4] == 1000 for k in clreduce._cl_scans), name
            inputs = [(cla.to_device(q, hd[:1000]), hd[:1000]),
                      (cla.to_device(q, hd[:1000], allocator=pool), hd[:1000]),
                      (cla.to_device(q, hd)[7:], hd[7:]),  # 1000 elements from element 7
                      (cla.to_device(q, hd[:1000].reshape(40, 25), allocator=pool), hd[:1000])]
            for x, hx in inputs:
                r = f(x, exclusive=exclusive)
                assert_made_as(r, first, x, q, name)
                if x.allocator is pool:
                    assert isinstance(r.base_data, cl.tools.PooledBuffer)
                check(r, hx)
                r.events.append(None)  # a list of its own: the next result's stays empty
            # Another size, and a strided view, take the general path: right values, or refused.
            r = f(cla.to_device(q, hd[:999]), exclusive=exclusive)
            check(r, hd[:999])
            with pytest.raises(ValueError, match="contiguous"):
                f(cla.to_device(q, hd[:2000])[::2][:1000] if hd.size >= 2000 else
                  cla.to_device(q, np.tile(hd, 2))[::2][:1000], exclusive=exclusive)
        # Other arguments: the general path (a dtype, segments).
        x = cla.to_device(q, h[:1000].astype(dtype))
        r = clreduce.cumsum(x, dtype=np.float64)
        np.testing.assert_allclose(r.get(), np.cumsum(h[:1000].astype(dtype), dtype=np.float64))
        flags = np.zeros(1000, np.uint8)
        flags[::100] = 1
        r = clreduce.cumsum(x, segments=flags)
        assert r.get()[100] == h[100].astype(dtype)


def test_many_calls_then_one_get(queue):
    """The kept plans' calls only enqueue: many reductions and scans of arrays made by kernels
    not waited for either, and results fed to later calls, all before a single read; a pool
    hands the blocks of results dropped on the way to later ones. Every kept value is right."""
    pool = pool_of(queue)
    h = values(np.int32, 3000)
    a = cla.to_device(queue, h, allocator=pool)
    kept = []
    for k in range(60):
        b = a + k  # a kernel of PyOpenCL's on the same queue
        s, m, i = clreduce.sum(b), clreduce.max(b), clreduce.argmin(b)
        c = clreduce.cumsum(b)
        last = clreduce.max(c)  # a scan's output read by the next call
        clreduce.sum(b.astype(np.float32))  # dropped: its blocks go back to the pool at once
        if k % 7 == 0:
            kept.append((k, s, m, i, c, last, s + 1))  # s + 1: PyOpenCL's kernel on the result
    got = [(k, s.get(), m.get(), i.get(), c.get(), last.get(), t.get())
           for k, s, m, i, c, last, t in kept]
    for k, s, m, i, c, last, t in got:
        hk = h.astype(np.int64) + k
        assert s == hk.sum() and t == hk.sum() + 1 and m == hk.max() and i == np.argmin(hk)
        np.testing.assert_array_equal(c, np.cumsum(hk))
        assert last == np.cumsum(hk).max()


def test_errors_before_anything_is_allocated(queue):
    """A refused call raises before it allocates or enqueues anything."""
    pool = pool_of(queue)
    a = cla.to_device(queue, values(np.int32, 100), allocator=pool)
    queue.finish()
    held = pool.active_blocks
    for call in (lambda: clreduce.sum(a, axis=3), lambda: clreduce.min(a[:0]),
                 lambda: clreduce.argmax(a[:0]), lambda: clreduce.sum(a, dtype=np.complex64),
                 lambda: clreduce.sum(a[::2]), lambda: clreduce.cumsum(a, exclusive=1),
                 lambda: clreduce.sum(a, out=np.zeros(())), lambda: clreduce.argmax(a, axis=(0,))):
        with pytest.raises((ValueError, TypeError)):
            call()
        assert pool.active_blocks == held


def test_calls_return_before_the_queue_runs(queue, monkeypatch):
    """The kept plans' reductions and scans only enqueue: with the queue held by a barrier on a
    user event, they still return (a call that waited would time out: the Device's limit is 20 s
    here), and their results are right once the event completes."""
    monkeypatch.setenv("CLREDUCE_TIMEOUT", "20")  # read when the queue's Device is made
    q = cl.CommandQueue(queue.context)
    h = values(np.float32, 5000)
    a = cla.to_device(q, h)
    for name in ("sum", "max", "argmax", "cumsum"):  # makes the plans (start-up checks wait)
        getattr(clreduce, name)(a)
    q.finish()
    gate = cl.UserEvent(q.context)
    cl.enqueue_barrier(q, wait_for=[gate])
    try:
        s, i, c = clreduce.sum(a), clreduce.argmax(a), clreduce.cumsum(a)
        m = clreduce.max(c)
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)
    assert s.get() == h.sum() and i.get() == np.argmax(h)
    np.testing.assert_array_equal(c.get(), np.cumsum(h))
    assert m.get() == np.cumsum(h).max()
