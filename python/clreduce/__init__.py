"""clreduce: NumPy's reductions and prefix scans on any OpenCL device.

Functions spelled and behaving as NumPy's (dtype rules, NaN handling, first-index ties) that run
on an OpenCL device: a GPU through its vendor's driver, or the CPU through PoCL::

    >>> import numpy as np, clreduce
    >>> x = np.arange(1_000_000, dtype=np.int32)
    >>> clreduce.sum(x)                 # int32 sums accumulate in int64, as NumPy's
    np.int64(499999500000)
    >>> clreduce.argmax(x, device="cpu")
    np.int64(999999)

Supported: sum, prod, min, max, argmin, argmax, mean, var, std over the whole array or along
axes (axis= an int or a tuple, keepdims), dot of two 1-D arrays, reduce() for reductions of your
own in OpenCL C (the command line's --map, --reduce, --identity, --post), and cumsum, cumprod
over the whole array or along the last axis (exclusive=True for exclusive scans; segments= or
offsets= for segmented scans; offsets= on the reductions for one result per segment). A
pyopencl.array.Array is reduced and scanned on its own context and queue, and its results stay
on the device as pyopencl arrays (0-d for a whole-array reduction, as pyopencl.array.sum's)
from its allocator. Element types: int32, uint32, int64, uint64, float32,
float64, float16, bool, int8, uint8, int16 and uint16, read as they are (scans, and the narrow
types along axes or segments, widen them first: a copy). devices() lists the devices;
device= takes a Device, an index or what the command line's --device takes ('gpu', 'cpu',
'nvidia', 'pocl', '0'). Errors of the library raise clreduce.Error (a RuntimeError) with a
`category`. The GIL is released while the device works, and Ctrl-C stops a long call (between
its chunks) with KeyboardInterrupt. See docs/PYTHON.md.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
import warnings
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _clreduce
from ._clreduce import Error

__all__ = [
    "Error",
    "Device",
    "DeviceInfo",
    "devices",
    "set_default_device",
    "get_default_device",
    "sum",
    "prod",
    "min",
    "max",
    "argmin",
    "argmax",
    "mean",
    "var",
    "std",
    "dot",
    "reduce",
    "cumsum",
    "cumprod",
    "__version__",
]

__version__: str = _clreduce.version()

_KERNEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cl")

# The library's element types, by NumPy dtype, and back from the library's names: the six every
# variant takes, then the reduction engine's (float16, bool, int8, uint8, int16, uint16), which the
# library reduces as they are (whole arrays, mean, var, std, dot and reduce()).
_LIB_NAME = {
    np.dtype(np.int32): "int32",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.float16): "float16",
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.int16): "int16",
    np.dtype(np.uint16): "uint16",
}
_FROM_LIB = {name: dt for dt, name in _LIB_NAME.items()}
# The engine's types, widened where the library's scans and segmented arg ops want one of the six:
# the integers and bool to 32 bits (signed or unsigned), float16 to float32 (exactly).
_WIDEN = {
    np.dtype(np.bool_): np.dtype(np.int32),
    np.dtype(np.int8): np.dtype(np.int32),
    np.dtype(np.int16): np.dtype(np.int32),
    np.dtype(np.uint8): np.dtype(np.uint32),
    np.dtype(np.uint16): np.dtype(np.uint32),
    np.dtype(np.float16): np.dtype(np.float32),
}
_NUMPY_RT: dict = {}  # (op, dtype, dtype=) -> NumPy's result dtype


def _numpy_rt(op: str, dt: np.dtype, dtype: Optional[np.dtype]) -> np.dtype:
    """NumPy's result dtype of numpy.<op> on an array of dt with dtype= (found once by asking
    NumPy on one element)."""
    key = (op, dt, dtype)
    rt = _NUMPY_RT.get(key)
    if rt is None:
        rt = _NUMPY_RT.setdefault(key, getattr(np, op)(np.ones(1, dt), dtype=dtype).dtype)
    return rt
_AxisError = getattr(getattr(np, "exceptions", np), "AxisError")

DeviceSpec = Union["Device", int, str, None]


class DeviceInfo(NamedTuple):
    """One OpenCL device as devices() lists it (the command line's --list-devices)."""

    index: int
    """Global index across platforms: what Device(index) and device=index take."""
    type: str
    """'GPU', 'CPU', 'ACCELERATOR', ..."""
    name: str
    platform: str
    vendor: str
    version: str
    """CL_DEVICE_VERSION."""
    opencl_c: str
    compute_units: int
    global_mem: int
    """Bytes."""
    max_alloc: int
    """Bytes: the largest single buffer, so the largest array a call takes."""
    local_mem: int
    max_wg_size: int
    fp64: bool
    """Whether the device has double precision (float64 arrays need it)."""


def devices() -> list[DeviceInfo]:
    """Every OpenCL device of every platform, under the global index Device() and device= take.

    Raises clreduce.Error (category 'runtime') when OpenCL has no platform.
    """
    return [DeviceInfo(**d) for d in _clreduce.list_devices()]


class Device:
    """An open OpenCL device: its context, queue and the kernels built on it.

    Device(spec=0, *, kernel_dir=None, tune=None)

    spec: an index (0, "1"), a device type ("gpu", "cpu", "accelerator": the first of that type)
    or a case-insensitive substring of the device's platform, name, vendor or version ("nvidia",
    "pocl"), as the command line's --device takes it.
    kernel_dir: where the .cl kernel sources are; by default $CLREDUCE_KERNEL_DIR when set, else
    the ones installed with the package.
    tune: tuning knobs, {"fast-groups": 64, ...} (the command line's --tune KEY=VALUE), applied
    over the CLREDUCE_<KEY> environment variables the command line reads too.

    Kernels are built on the first call that needs them (seconds; PoCL caches them on disk) and
    kept for the Device's life, so later calls build nothing. A Device may be shared by threads:
    their calls take turns.
    """

    def __init__(
        self,
        spec: Union[int, str] = 0,
        *,
        kernel_dir: Optional[str] = None,
        tune: Optional[dict] = None,
    ) -> None:
        text = _spec_text(spec)
        if kernel_dir is None:
            kernel_dir = os.environ.get("CLREDUCE_KERNEL_DIR") or _KERNEL_DIR
        if not isinstance(kernel_dir, (str, os.PathLike)):
            raise TypeError("kernel_dir must be a path")
        knobs = []
        for key, value in (tune or {}).items():
            if isinstance(value, bool):
                value = "on" if value else "off"
            knobs.append(f"{key}={value}")
        self._dev = _clreduce._Device(text, os.fspath(kernel_dir), knobs, True)
        self._info = DeviceInfo(**self._dev.summary())

    @property
    def info(self) -> DeviceInfo:
        """The device's DeviceInfo."""
        return self._info

    @property
    def index(self) -> int:
        """The device's global index (as in devices())."""
        return self._info.index

    @property
    def name(self) -> str:
        return self._info.name

    @property
    def kernel_dir(self) -> str:
        """The directory the device's kernels are read from."""
        return self._dev.kernel_dir()

    def __repr__(self) -> str:
        i = self._info
        return f"clreduce.Device({i.index}: {i.type} {i.name!r}, platform {i.platform!r})"


def _spec_text(spec: Any) -> str:
    if isinstance(spec, bool) or not isinstance(spec, (int, np.integer, str)):
        raise TypeError(
            f"device must be a clreduce.Device, an index or a name such as 'gpu', 'cpu' or "
            f"'nvidia', not {type(spec).__name__}"
        )
    if isinstance(spec, (int, np.integer)):
        if spec < 0:
            raise ValueError(f"device index must be >= 0, not {spec}")
        return str(int(spec))
    if not spec.strip():
        raise ValueError("device name must not be empty")
    return spec


_lock = threading.Lock()
_opened: dict = {}  # spec text -> Device, so device='cpu' builds its kernels once
_default: Optional[Device] = None


def _open(spec: Any) -> Device:
    text = _spec_text(spec)
    with _lock:
        dev = _opened.get(text)
    if dev is None:
        dev = Device(text)
        with _lock:
            dev = _opened.setdefault(text, dev)
    return dev


def set_default_device(device: DeviceSpec) -> Optional[Device]:
    """Sets the device calls use when they are given none (device=None).

    device: a Device, an index or a name as Device() takes it, or None for the initial default
    (device 0, as the command line's). Returns the Device now the default (None after None).
    """
    global _default
    dev = None if device is None else (device if isinstance(device, Device) else _open(device))
    with _lock:
        _default = dev
    return dev


def get_default_device() -> Device:
    """The device calls use when given none: set_default_device()'s, else device 0 (opened on
    first use)."""
    global _default
    with _lock:
        dev = _default
    if dev is None:
        dev = _open(0)
        with _lock:
            if _default is None:
                _default = dev
            dev = _default
    return dev


def _device(device: DeviceSpec) -> Device:
    if device is None:
        return get_default_device()
    if isinstance(device, Device):
        return device
    return _open(device)


# --- arguments as NumPy has them


_TYPES_TEXT = ("int32, uint32, int64, uint64, float32, float64, float16, bool, int8, uint8, "
               "int16 and uint16")


def _as_array(a: Any, fname: str) -> np.ndarray:
    arr = a if isinstance(a, np.ndarray) else np.asarray(a)
    dt = arr.dtype
    if dt in _LIB_NAME:
        return arr
    native = dt.newbyteorder("=")
    if dt.byteorder not in ("=", "|") and native in _LIB_NAME:
        return arr.astype(native)  # the other byte order: converted once (a copy)
    raise TypeError(f"clreduce.{fname}: unsupported dtype {dt} (clreduce takes {_TYPES_TEXT})")


def _axes(axis: Any, ndim: int, fname: str, single: bool = False) -> Optional[Tuple[int, ...]]:
    """axis normalised as NumPy does (AxisError out of range, duplicates refused); None stays."""
    if axis is None:
        return None
    items = (axis,) if not isinstance(axis, tuple) or single else axis
    out = []
    for ax in items:
        try:
            ax = int(ax.__index__())
        except (AttributeError, TypeError):
            raise TypeError(
                f"'{type(ax).__name__}' object cannot be interpreted as an integer"
            ) from None
        if not -ndim <= ax < builtins.max(ndim, 1) or (ndim == 0 and ax != 0 and ax != -1):
            raise _AxisError(ax, ndim)
        ax = ax % ndim if ndim else 0
        if ax in out:
            raise ValueError("duplicate value in 'axis'")
        out.append(ax)
    return tuple(out)


def _check_out(out: Any, shape: Tuple[int, ...], fname: str) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"clreduce.{fname}: out must be a numpy.ndarray, not {type(out).__name__}")
    if out.shape != shape:
        raise ValueError(
            f"clreduce.{fname}: out has shape {out.shape}, the result has shape {shape}"
        )
    if not out.flags.writeable:
        raise ValueError(f"clreduce.{fname}: out is read-only")
    return out


def _op_dtype(a: np.ndarray, dtype: Any, out: Optional[np.ndarray], fname: str) -> Optional[np.dtype]:
    """The dtype sum, prod, cumsum and cumprod work in: dtype=, else out's where NumPy takes it
    (the array casts to it safely), else None (NumPy's default for the array's type)."""
    if dtype is not None:
        dt = np.dtype(dtype)
    elif out is not None and np.can_cast(a.dtype, out.dtype, "safe"):
        dt = out.dtype
    else:
        return None
    if dt in _LIB_NAME and dt != np.dtype(np.bool_):
        return dt
    if out is not None and dtype is None:
        return None  # out's type is not one clreduce works in: the default, cast into out
    raise TypeError(
        f"clreduce.{fname}: unsupported dtype {dt} (int32, uint32, int64, uint64, float32, "
        f"float64, float16, int8, int16, uint8, uint16)"
    )


def _widen(a: Any) -> Any:
    """a of an engine type converted to its wider type of the six (_WIDEN): a copy (on the device
    for a pyopencl array, whose kernels have no bool: read as its bytes)."""
    wide = _WIDEN[a.dtype]
    if a.dtype == np.dtype(np.bool_) and _is_clarray(a):
        a = a.view(np.uint8)
    return a.astype(wide)


def _device_input(a: np.ndarray, dt: Optional[np.dtype],
                  narrow: bool = False) -> Tuple[np.ndarray, str, Optional[np.dtype]]:
    """The array the device reads, the library's accumulator override and the dtype to cast the
    result back to: (array, acc, final dtype or None). narrow: the call takes the engine's types
    as they are (a whole-array reduction); else they are widened (scans, segments)."""
    if dt is None:
        if a.dtype in _WIDEN:
            if narrow:  # NumPy's type: float16 sums are float16 (the engine's float, rounded)
                return a, "", a.dtype if a.dtype == np.dtype(np.float16) else None
            return _widen(a), "", a.dtype if a.dtype.kind == "f" else None
        return a, "", None
    if dt in _WIDEN:  # a narrow type: wraps as NumPy's, computed wider and cast back
        if narrow:
            return a.astype(dt), "", dt
        return a.astype(dt).astype(_WIDEN[dt]), "", dt
    x = a if a.dtype == dt else a.astype(dt)
    acc = _LIB_NAME[dt] if dt in (np.dtype(np.int32), np.dtype(np.uint32)) else ""
    return x, acc, None


def _finish(value: Any, shape: Tuple[int, ...], out: Optional[np.ndarray], keepdims: bool):
    """A scalar result as NumPy returns it: a NumPy scalar, an array of ones' shape with
    keepdims, or written into out (cast as NumPy casts into out)."""
    if out is not None:
        out[...] = value
        return out
    if keepdims:
        return np.full(shape, value, dtype=value.dtype)
    return value


def _partial(axes: Optional[Tuple[int, ...]], ndim: int) -> bool:
    """Whether axes name some of the axes but not all (a reduction along them)."""
    return axes is not None and set(axes) != set(range(ndim))


def _kept_shape(shape: Tuple[int, ...], axes: Tuple[int, ...], keepdims: bool) -> Tuple[int, ...]:
    """NumPy's result shape of a reduction of `shape` along axes."""
    return tuple(1 if k in axes else d for k, d in enumerate(shape) if keepdims or k not in axes)


def _along(device: DeviceSpec, kind: str, name: str, arrays: Sequence[np.ndarray],
           axes: Tuple[int, ...], keepdims: bool, acc: str = "", where: str = "",
           ddof: float = 0.0, text: Sequence[str] = ("", "", "", "", "")) -> np.ndarray:
    """One device call of the segments engine: arrays (one shape, C order) reduced along axes.
    Returns the values (arg ops: the indices) in NumPy's shape. pyopencl arrays (C-contiguous,
    of one context; kinds 'derived' and 'expr') are read on the device where they lie."""
    if _is_clarray(arrays[0]):
        dev = _cl_device(arrays[0], None, kind)
        bufs, keep = _cl_buffers(arrays)
        values, _, rshape, _ = dev._dev.segments_buffers(
            kind, name, list(text), bufs, arrays[0].size, [], [int(d) for d in arrays[0].shape],
            list(axes), True, bool(keepdims), where, float(ddof))
        del keep
        return values.reshape(tuple(rshape))
    xs = [np.ascontiguousarray(x) for x in arrays]
    shape = xs[0].shape
    flat = [x.reshape(-1) for x in xs]
    values, indices, rshape, _ = _device(device)._dev.segments(
        kind, name, list(text), flat, [], [int(d) for d in shape], list(axes), True,
        bool(keepdims), acc, where, float(ddof))
    res = indices if indices is not None else values
    return res.reshape(tuple(rshape))


def _empty_along(fname: str, op: str, shape: Tuple[int, ...], axes: Tuple[int, ...],
                 rshape: Tuple[int, ...], dt: np.dtype) -> np.ndarray:
    """A reduction along axes of an array with no element, as NumPy gives it."""
    count = int(np.prod([shape[k] for k in axes], dtype=np.int64))
    if int(np.prod(rshape, dtype=np.int64)) == 0:
        return np.empty(rshape, dtype=dt)
    if count == 0 and op in ("min", "max"):
        name = "minimum" if op == "min" else "maximum"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if count == 0 and op in ("argmin", "argmax"):
        raise ValueError(f"attempt to get {op} of an empty sequence")
    return np.full(rshape, 0 if op == "sum" else 1, dtype=dt)


def _reduce_offsets(fname: str, op: str, a: Any, axis: Any, dtype: Any, out: Any,
                    keepdims: bool, device: DeviceSpec, offsets: Any):
    """op over each segment [offsets[s], offsets[s+1]) of the flattened (C-order) array."""
    arr = _as_array(a, fname)
    if axis is not None or keepdims:
        raise ValueError(f"clreduce.{fname}: offsets= reduces the flattened array: no axis, "
                         f"no keepdims")
    o = _offsets_array(offsets, arr.size, fname)
    x, acc, back = _segment_input(fname, op, arr, dtype, out, o)
    x = np.ascontiguousarray(x).reshape(-1)
    s = o.size - 1
    if out is not None:
        out = _check_out(out, (s,), fname)
    if op.startswith("arg"):
        rt = np.dtype(np.intp)
    else:
        rt = _FROM_LIB[_clreduce.result_dtype(op, _LIB_NAME[x.dtype], acc)]
    if x.size == 0 or s == 0:  # nothing to read: every segment empty (sum: 0, prod: 1)
        res = np.full(s, 0 if op == "sum" else 1, dtype=rt)
    else:
        values, indices, _, _ = _device(device)._dev.segments(
            "op", op, [""] * 5, [x], [int(v) for v in o], [], [], False, False, acc, "", 0.0)
        res = indices.astype(np.intp, copy=False) if indices is not None else values
    if back is not None:
        res = res.astype(back)
    return _finish_array(res, out)


def _segment_input(fname: str, op: str, arr: Any, dtype: Any, out: Any, o: np.ndarray):
    """The array a segmented reduction reads, its accumulator and the dtype to cast back to;
    refuses an empty segment where op has no identity (NumPy's ValueError)."""
    if op in ("min", "max", "argmin", "argmax"):
        if np.any(o[1:] == o[:-1]):
            raise ValueError(f"clreduce.{fname}: an empty segment has no {op} (offsets name one)")
        if arr.dtype in _WIDEN:
            return _widen(arr), "", None if op.startswith("arg") else arr.dtype
        return arr, "", None
    return _device_input(arr, _op_dtype(arr, dtype, out, fname))


def _reduce(fname: str, op: str, a: Any, axis: Any, dtype: Any, out: Any, keepdims: bool,
            device: DeviceSpec, offsets: Any = None):
    if (type(a) in _cl_types and axis is None and dtype is None and out is None
            and keepdims is False and device is None and offsets is None):
        # a pyopencl array's common call, kept (_ClCall): the checks _cl_reduce's would make
        call = _cl_calls.get((op, a.dtype, id(a.queue)))
        if call is not None and a.size and (a.flags.c_contiguous or (
                call.any_order and a.flags.f_contiguous)):
            return call(a)
    if _is_clarray(a):
        return _cl_reduce(fname, op, a, axis, dtype, out, keepdims, device, offsets)
    if offsets is not None:
        return _reduce_offsets(fname, op, a, axis, dtype, out, keepdims, device, offsets)
    arr = _as_array(a, fname)
    axes = _axes(axis, arr.ndim, fname, single=op.startswith("arg"))
    partial = _partial(axes, arr.ndim)
    if partial:
        shape = _kept_shape(arr.shape, axes, keepdims)
    else:
        shape = (1,) * arr.ndim if keepdims else ()
    if out is not None:
        out = _check_out(out, shape, fname)
    if op.startswith("arg"):
        if out is not None and out.dtype.kind not in "iu":
            raise TypeError(f"clreduce.{fname}: out must have an integer dtype, not {out.dtype}")
        if partial:
            if arr.size == 0:
                res = _empty_along(fname, op, arr.shape, axes, shape, np.dtype(np.intp))
            else:
                x = _widen(arr) if arr.dtype in _WIDEN else arr
                res = _along(device, "op", op, [x], axes, keepdims).astype(np.intp, copy=False)
            return _finish_array(res, out)
        if arr.size == 0:
            raise ValueError(f"attempt to get {op} of an empty sequence")
        x = np.ascontiguousarray(arr).reshape(-1)  # indices count in C order
        _, index, _, _, _ = _device(device)._dev.reduce(op, x, "", "")
        return _finish(np.intp(index), shape, out, keepdims)
    if op in ("min", "max"):
        if arr.size == 0 and not partial:
            name = "minimum" if op == "min" else "maximum"
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        x, acc, back = arr, "", None
        if partial and arr.dtype in _WIDEN:  # the segments take six types: widened, cast back
            x, back = _widen(arr), arr.dtype
    else:
        dt = _op_dtype(arr, dtype, out, fname)
        x, acc, back = _device_input(arr, dt, narrow=not partial)
    if partial:
        rt = _FROM_LIB[_clreduce.result_dtype(op, _LIB_NAME[x.dtype], acc)]
        if x.size == 0:
            res = _empty_along(fname, op, arr.shape, axes, shape, rt)
        else:
            res = _along(device, "op", op, [x], axes, keepdims, acc)
        if back is not None:
            res = res.astype(back)
        return _finish_array(res, out)
    # Every element once, in any order: a C- or Fortran-ordered array is read where it lies.
    if x.flags.f_contiguous and not x.flags.c_contiguous:
        x = x.T
    x = np.ascontiguousarray(x).reshape(-1)
    if x.size == 0:
        rt = _FROM_LIB[_clreduce.result_dtype(op, _LIB_NAME[x.dtype], acc)]
        value = rt.type(0 if op == "sum" else 1)
    else:
        v, _, rname, _, _ = _device(device)._dev.reduce(op, x, acc, "")
        value = _FROM_LIB[rname].type(v)
    if back is not None:
        value = np.asarray(value).astype(back)[()]
    return _finish(value, shape, out, keepdims)


def _finish_array(res: np.ndarray, out: Optional[np.ndarray]):
    """An array result, or written into out (cast as NumPy casts into out)."""
    if out is not None:
        out[...] = res
        return out
    return res


def sum(a: Any, axis: Union[None, int, Tuple[int, ...]] = None, dtype: Any = None,
        out: Optional[np.ndarray] = None, keepdims: bool = False, *,
        offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Sum of every element, as numpy.sum(a, axis, dtype, out, keepdims).

    int32 and smaller sums accumulate in int64 (unsigned: uint64), others in their own type;
    dtype= sets the type (the array is converted to it first: a copy), 32-bit integer dtypes
    wrap as NumPy's. Float sums are within clreduce's error bound of the exact sum
    (docs/ACCURACY.md), not bit-equal to NumPy's pairwise sum. A NaN gives NaN. axis: None, an
    int or a tuple of ints (negative from the end), reduced in one device call. Returns a NumPy
    scalar (an array along axes or with keepdims, or out).

    A pyopencl.array.Array gives a new pyopencl array on its queue, from its allocator: 0-d for
    the whole array (NumPy's shape with keepdims, along axes and with offsets=). For the six
    types int32, uint32, int64, uint64, float32 and float64 the device writes the whole-array
    result there and the call returns without waiting for it (read it with .get(), or use it in
    the queue's later kernels); for the narrower types the value is computed, then written to
    the new array (docs/PYTHON.md). So for prod, min, max, argmin and argmax.
    """
    return _reduce("sum", "sum", a, axis, dtype, out, keepdims, device, offsets)


def prod(a: Any, axis: Union[None, int, Tuple[int, ...]] = None, dtype: Any = None,
         out: Optional[np.ndarray] = None, keepdims: bool = False, *,
         offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Product of every element, as numpy.prod; types as sum's. Integers wrap."""
    return _reduce("prod", "prod", a, axis, dtype, out, keepdims, device, offsets)


def min(a: Any, axis: Union[None, int, Tuple[int, ...]] = None,
        out: Optional[np.ndarray] = None, keepdims: bool = False, *,
        offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Smallest element, as numpy.min: NaN if any element is NaN; ValueError on an empty array."""
    return _reduce("min", "min", a, axis, None, out, keepdims, device, offsets)


def max(a: Any, axis: Union[None, int, Tuple[int, ...]] = None,
        out: Optional[np.ndarray] = None, keepdims: bool = False, *,
        offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Largest element, as numpy.max: NaN if any element is NaN; ValueError on an empty array."""
    return _reduce("max", "max", a, axis, None, out, keepdims, device, offsets)


def argmin(a: Any, axis: Optional[int] = None, out: Optional[np.ndarray] = None, *,
           keepdims: bool = False, offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Index of the smallest element in the flattened (C-order) array, or along axis, as
    numpy.argmin: the first one on ties, the first NaN if any. ValueError on an empty array."""
    return _reduce("argmin", "argmin", a, axis, None, out, keepdims, device, offsets)


def argmax(a: Any, axis: Optional[int] = None, out: Optional[np.ndarray] = None, *,
           keepdims: bool = False, offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Index of the largest element in the flattened (C-order) array, or along axis, as
    numpy.argmax: the first one on ties, the first NaN if any. ValueError on an empty array."""
    return _reduce("argmax", "argmax", a, axis, None, out, keepdims, device, offsets)


_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _stat_dtype(arr: np.ndarray, dtype: Any, fname: str) -> np.dtype:
    """The result type of mean, var and std, as NumPy's: dtype=, else float64 for integers and
    bool, else the array's own float type."""
    if dtype is not None:
        dt = np.dtype(dtype)
        if dt not in (_F16, _F32, _F64):
            raise TypeError(f"clreduce.{fname}: dtype must be float16, float32 or float64, not {dt}")
        return dt
    return arr.dtype if arr.dtype in (_F16, _F32, _F64) else _F64


def _engine_whole(device: DeviceSpec, kind: str, name: str, text: Sequence[str],
                  arrays: Sequence[Any], where: str, ddof: float) -> Tuple[Any, str]:
    """One device call of the engine over every element of arrays (one size, at least one
    element): a derived op (kind 'derived', name) or a user expression ('expr', text). NumPy
    arrays are read in memory order (a C- or Fortran-ordered single array as it lies);
    pyopencl arrays on their own queue, where they lie. Returns (value, the library's type
    name)."""
    if _is_clarray(arrays[0]):
        dev = _cl_device(arrays[0], None, kind)
        bufs, keep = _cl_buffers(arrays)
        if kind == "derived":
            r = dev._dev.derived_buffers(name, bufs, arrays[0].size, where, float(ddof))
        else:
            r = dev._dev.expr_buffers(list(text), bufs, arrays[0].size, where)
        del keep
        return r
    xs = list(arrays)
    if len(xs) == 1 and xs[0].flags.f_contiguous and not xs[0].flags.c_contiguous:
        xs[0] = xs[0].T  # every element once, in any order: read where it lies
    flat = [np.ascontiguousarray(x).reshape(-1) for x in xs]
    if kind == "derived":
        return _device(device)._dev.derived(name, flat, where, float(ddof))
    return _device(device)._dev.expr(list(text), flat, where)


def _cl_inputs(arrays: Sequence[Any], fname: str, device: DeviceSpec, out: Any,
               c_order: bool) -> Tuple[Optional[Device], list]:
    """(None, NumPy arrays) for NumPy inputs; for pyopencl arrays (all of them, of one context):
    their queue's Device and the arrays, checked."""
    cl = [_is_clarray(x) for x in arrays]
    if not any(cl):
        return None, [_as_array(x, fname) for x in arrays]
    if not all(cl):
        raise TypeError(f"clreduce.{fname}: pyopencl arrays cannot be mixed with host arrays "
                        f"(pass array.get(), or pyopencl.array.to_device(queue, x))")
    dev = _cl_device(arrays[0], device, fname)
    if out is not None:
        raise TypeError(f"clreduce.{fname}: out= is not taken with a pyopencl array (the result "
                        f"is a new pyopencl array)")
    for x in arrays:
        _cl_check(x, fname, c_order)
        if x.context != arrays[0].context:
            raise ValueError(f"clreduce.{fname}: the pyopencl arrays must share one context")
    return dev, list(arrays)


def _stat(fname: str, op: str, a: Any, axis: Any, dtype: Any, out: Any, keepdims: bool,
          ddof: Any, device: DeviceSpec):
    cl_dev, (arr,) = _cl_inputs([a], fname, device, out, c_order=axis is not None)
    if cl_dev is not None:
        device = cl_dev
    axes = _axes(axis, arr.ndim, fname)
    rt = _stat_dtype(arr, dtype, fname)
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, float, np.integer, np.floating)):
        raise TypeError(f"clreduce.{fname}: ddof must be a number, not {type(ddof).__name__}")
    partial = _partial(axes, arr.ndim)
    shape = _kept_shape(arr.shape, axes, keepdims) if partial else (1,) * arr.ndim if keepdims else ()
    if out is not None:
        out = _check_out(out, shape, fname)
    x = arr  # every type as it is: the engine reads the narrow ones too
    # The elements per result, for NumPy's warnings.
    count = arr.size if not partial else int(np.prod([arr.shape[k] for k in axes], dtype=np.int64))
    if count == 0 and int(np.prod(shape, dtype=np.int64)) > 0:
        warnings.warn("Mean of empty slice" if op == "mean" else "Degrees of freedom <= 0 for slice",
                      RuntimeWarning, stacklevel=3)
    elif op != "mean" and count - ddof <= 0 and count > 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
    if partial:
        if x.size == 0:
            res = np.full(shape, np.nan, dtype=rt)
        else:
            res = _along(device, "derived", op, [x], axes, keepdims, ddof=float(ddof)).astype(rt)
        return _finish_array(res, out) if cl_dev is None else _cl_result(a, res)
    if x.size == 0:
        value = rt.type(np.nan)
    else:
        v, _ = _engine_whole(device, "derived", op, (), [x], "", float(ddof))
        value = rt.type(v)
    if cl_dev is not None:
        return _cl_result(a, _finish(value, shape, None, keepdims))
    return _finish(value, shape, out, keepdims)


def mean(a: Any, axis: Union[None, int, Tuple[int, ...]] = None, dtype: Any = None,
         out: Optional[np.ndarray] = None, keepdims: bool = False, *,
         device: DeviceSpec = None) -> Any:
    """Arithmetic mean, as numpy.mean(a, axis, dtype, out, keepdims): float64 for integer and
    bool arrays, else the array's float type (dtype= float32 or float64 sets it).

    One pass on the device: a compensated sum in double (float on a device without fp64),
    divided by the count; within a few units of roundoff of the exact mean, so never less
    accurate than NumPy's. NaN in gives NaN; an empty array or slice gives NaN with NumPy's
    RuntimeWarning. axis: None, an int or a tuple (one device call for every result). A
    pyopencl.array.Array is read on its own queue, as by var, std, dot and reduce; the result is
    a new pyopencl array on that queue (0-d for the whole array), written there from the host
    once the call has computed it (these have no enqueue-only path: docs/PYTHON.md).
    """
    return _stat("mean", "mean", a, axis, dtype, out, keepdims, 0, device)


def var(a: Any, axis: Union[None, int, Tuple[int, ...]] = None, dtype: Any = None,
        out: Optional[np.ndarray] = None, ddof: Union[int, float] = 0, keepdims: bool = False,
        *, device: DeviceSpec = None) -> Any:
    """Variance, as numpy.var(a, axis, dtype, out, ddof, keepdims): the mean of squared
    deviations, divided by count - ddof. Types as mean's.

    One pass on the device: counts, means and sums of squared deviations (of values shifted by
    the first element) combined pairwise (Chan, Golub and LeVeque), in double where the device
    has it. NaN or inf in gives NaN; count - ddof <= 0 gives inf or NaN with NumPy's warning.
    """
    return _stat("var", "var", a, axis, dtype, out, keepdims, ddof, device)


def std(a: Any, axis: Union[None, int, Tuple[int, ...]] = None, dtype: Any = None,
        out: Optional[np.ndarray] = None, ddof: Union[int, float] = 0, keepdims: bool = False,
        *, device: DeviceSpec = None) -> Any:
    """Standard deviation, as numpy.std: the square root of var (same arguments and types)."""
    return _stat("std", "std", a, axis, dtype, out, keepdims, ddof, device)


def dot(a: Any, b: Any, out: Optional[np.ndarray] = None, *, device: DeviceSpec = None) -> Any:
    """Inner product of two 1-D arrays of one length, as numpy.dot(a, b, out): the type is
    numpy.result_type(a, b).

    Floats: a compensated sum of exact products (fma) in double where the device has it, so
    within a few units of roundoff of the exact dot product. Integers wrap as NumPy's do (the
    products and sum are exact modulo 2^64, then cast). bool: whether any pair is both true.
    Two pyopencl arrays of one context are read where they lie, on a's queue; the result is a
    0-d pyopencl array on that queue, written there once computed.
    """
    cl_dev, (A, B) = _cl_inputs([a, b], "dot", device, out, c_order=False)
    if cl_dev is not None:
        device = cl_dev
    if A.ndim != 1 or B.ndim != 1:
        raise ValueError(
            f"clreduce.dot takes two 1-D arrays, not arrays of {A.ndim} and {B.ndim} dimensions "
            f"(numpy.dot does the others)"
        )
    if A.shape != B.shape:
        raise ValueError(
            f"shapes {A.shape} and {B.shape} not aligned: {A.shape[0]} (dim 0) != "
            f"{B.shape[0]} (dim 0)"
        )
    rt = np.result_type(A.dtype, B.dtype)
    if out is not None:
        out = _check_out(out, (), "dot")
    if rt not in _LIB_NAME:
        raise TypeError(f"clreduce.dot: unsupported result type {rt}")
    # Read as they are (the engine works in double for floats, modulo 2^64 for integers), except
    # an integer beside a float result type (int64 with uint64 too): converted as NumPy does.
    xs = [x if rt.kind != "f" or x.dtype.kind == "f" else x.astype(rt) for x in (A, B)]
    if A.size == 0:
        value = rt.type(0)
    else:
        v, tname = _engine_whole(device, "derived", "dot", (), xs, "", 0.0)
        value = _FROM_LIB[tname].type(v)
        value = np.bool_(value != 0) if rt == np.dtype(np.bool_) else np.asarray(value).astype(rt)[()]
    if cl_dev is not None:
        return _cl_result(A, value)
    return _finish(value, (), out, False)


def reduce(*arrays: Any, map: str, reduce: str, identity: str, post: Optional[str] = None,
           dtype: Any = None, axis: Union[None, int, Tuple[int, ...]] = None,
           keepdims: bool = False, where: Optional[str] = None,
           device: DeviceSpec = None) -> Any:
    """A reduction of your own, in OpenCL C (the command line's --map, --reduce, --identity,
    --post, --acc and --where).

    arrays: 1 to 4 arrays of one shape; their elements at one index are x, y, z and w in the
    expressions. map: an expression over x..w giving one accumulator value; reduce: an
    expression over a and b combining two (associative and commutative: checked on sample values
    before the device runs it, else clreduce.Error naming the law and the values); identity: its
    neutral element; post: an expression over the reduced a and the count n (a long) giving the
    result; where: a predicate over x..w (elements where it is false are left out). dtype: the
    accumulator and result type (default float64 if an array is float64, else float32 if one is
    float, else int64, or uint64 for unsigned arrays). axis: as sum's, keepdims too.

    >>> clreduce.reduce(x, y, map="x * y", reduce="a + b", identity="0")   # a dot product
    >>> clreduce.reduce(x, map="fabs(x)", reduce="fmax(a, b)", identity="-INFINITY")  # max |x|

    pyopencl arrays (all of one context) are read where they lie, on the first one's queue; the
    result is a new pyopencl array there (0-d for the whole array), written once computed.

    An expression that is not one (';', braces, '#', comments) or does not compile raises
    clreduce.Error (category 'usage') with the compiler's message pointing into it.
    """
    if not 1 <= len(arrays) <= 4:
        raise TypeError(f"clreduce.reduce takes 1 to 4 arrays, not {len(arrays)}")
    texts = []
    for name, t in (("map", map), ("reduce", reduce), ("identity", identity), ("post", post),
                    ("where", where)):
        if t is not None and not isinstance(t, str):
            raise TypeError(f"clreduce.reduce: {name} must be a string (an OpenCL C expression)")
        texts.append("" if t is None else t)
    cl_dev, arrs = _cl_inputs(arrays, "reduce", device, None,
                              c_order=len(arrays) > 1 or axis is not None)
    if cl_dev is not None:
        device = cl_dev
    for k, x in enumerate(arrs[1:], 1):
        if x.shape != arrs[0].shape:
            raise ValueError(
                f"clreduce.reduce: array {k} has shape {x.shape}, array 0 {arrs[0].shape}: the "
                f"arrays must have one shape"
            )
    acc = ""
    if dtype is not None:
        dt = np.dtype(dtype)
        if dt not in _LIB_NAME or dt in _WIDEN:
            raise TypeError(
                f"clreduce.reduce: dtype must be int32, uint32, int64, uint64, float32 or "
                f"float64, not {dt}"
            )
        acc = _LIB_NAME[dt]
    xs = arrs  # every type as it is: the engine reads the narrow ones too
    axes = _axes(axis, arrs[0].ndim, "reduce")
    text = [texts[0], texts[1], texts[2], texts[3], acc]
    if _partial(axes, arrs[0].ndim):
        res = _along(device, "expr", "", xs, axes, keepdims, where=texts[4], text=text)
        return res if cl_dev is None else _cl_result(arrs[0], res)
    if xs[0].size:
        v, tname = _engine_whole(device, "expr", "", text, xs, texts[4], 0.0)
    else:  # no element: post(identity, 0), on the device, from host arrays of none
        v, tname = _device(device)._dev.expr(text, [np.empty(0, x.dtype) for x in xs], texts[4])
    value = _FROM_LIB[tname].type(v)
    if keepdims:
        value = np.full((1,) * arrs[0].ndim, value, dtype=value.dtype)
    return value if cl_dev is None else _cl_result(arrs[0], value)


def _offsets_array(offsets: Any, n: int, fname: str) -> np.ndarray:
    """offsets= as the library takes them: S + 1 ascending int64 offsets within [0, n]."""
    if _is_clarray(offsets):
        offsets = offsets.get()
    o = np.asarray(offsets)
    if o.ndim != 1 or o.size < 1 or (o.size and o.dtype.kind not in "iu"):
        raise ValueError(f"clreduce.{fname}: offsets must be a 1-D integer array of S + 1 "
                         f"offsets (S >= 0 segments)")
    o = o.astype(np.int64)
    if o[0] < 0 or o[-1] > n or np.any(np.diff(o) < 0):
        raise ValueError(f"clreduce.{fname}: offsets must ascend within [0, {n}]")
    return o


def _scan_flags(fname: str, n: int, row: int, segments: Any, offsets: Any) -> Optional[np.ndarray]:
    """The segment flags of a scan (a uint8 per element, nonzero starts a segment), or None."""
    if segments is not None and offsets is not None:
        raise TypeError(f"clreduce.{fname}: give segments= or offsets=, not both")
    if segments is not None:
        if _is_clarray(segments):
            segments = segments.get()
        f = np.asarray(segments)
        if f.shape != (n,):
            raise ValueError(f"clreduce.{fname}: segments must be a 1-D array of one flag per "
                             f"element ({n}), not of shape {f.shape}")
        return np.ascontiguousarray(f != 0, dtype=np.uint8)
    if offsets is not None:
        o = _offsets_array(offsets, n, fname)
        if o[0] != 0 or o[-1] != n:
            raise ValueError(f"clreduce.{fname}: offsets must start at 0 and end at {n} (every "
                             f"element in one segment)")
        f = np.zeros(n, dtype=np.uint8)
        f[o[:-1][o[:-1] < n]] = 1
        return f
    if row > 0 and n > row:
        f = np.zeros(n, dtype=np.uint8)
        f[::row] = 1
        return f
    return None


def _scan_type(dt: np.dtype, dtype: Any, fname: str) -> None:
    """Scans take every type but float16 (NumPy rounds each running value to float16; the
    library's scans have no float16 yet)."""
    if dt == _F16 or (dtype is not None and np.dtype(dtype) == _F16):
        raise TypeError(f"clreduce.{fname}: unsupported dtype float16 for a scan (the scans take "
                        f"the other types: convert to float32 first)")


def _scan(fname: str, op: str, a: Any, axis: Any, dtype: Any, out: Any, exclusive: bool,
          device: DeviceSpec, segments: Any = None, offsets: Any = None):
    if (type(a) in _cl_types and axis is None and dtype is None and out is None
            and device is None and segments is None and offsets is None
            and (exclusive is False or exclusive is True)):
        # a pyopencl array's common scan, kept (_ClScan): the checks _cl_scan's would make
        call = _cl_scans.get((op, a.dtype, id(a.queue), exclusive, a.size))
        if call is not None and a.flags.c_contiguous:
            return call(a)
    if _is_clarray(a):
        return _cl_scan(fname, op, a, axis, dtype, out, exclusive, device, segments, offsets)
    arr = _as_array(a, fname)
    _scan_type(arr.dtype, dtype, fname)
    axes = _axes(axis, arr.ndim, fname, single=True)
    if axes is None or arr.ndim <= 1:
        shape: Tuple[int, ...] = (arr.size,)
        row = 0
    elif segments is not None or offsets is not None:
        raise ValueError(f"clreduce.{fname}: segments= and offsets= scan the flattened array "
                         f"(axis=None)")
    elif axes[0] == arr.ndim - 1:
        shape = arr.shape
        row = arr.shape[-1]
    else:
        raise ValueError(
            f"clreduce.{fname}: scans run over the whole array (axis=None) or along the last "
            f"axis; axis={axes[0]} of a {arr.ndim}-d array is not supported yet (numpy.{fname} "
            f"does it)"
        )
    if out is not None:
        out = _check_out(out, shape, fname)
    if not isinstance(exclusive, (bool, np.bool_)):
        raise TypeError(f"clreduce.{fname}: exclusive must be True or False")
    dt = _op_dtype(arr, dtype, out, fname)
    x, acc, back = _device_input(arr, dt)
    x = np.ascontiguousarray(x).reshape(-1)  # C order, as NumPy scans a flattened array
    rt = _FROM_LIB[_clreduce.result_dtype(op, _LIB_NAME[x.dtype], acc)]
    direct = (
        out is not None and back is None and out.dtype == rt and out.flags.c_contiguous
        and not np.shares_memory(out, x)
    )
    res = out.reshape(-1) if direct else np.empty(x.size, dtype=rt)
    flags = _scan_flags(fname, x.size, row, segments, offsets)
    if x.size:
        _device(device)._dev.scan(op, x, res, bool(exclusive), flags, acc, "")
    if direct:
        return out
    res = res.reshape(shape)
    if back is not None:
        res = res.astype(back)
    if out is not None:
        out[...] = res
        return out
    return res


def cumsum(a: Any, axis: Optional[int] = None, dtype: Any = None,
           out: Optional[np.ndarray] = None, *, exclusive: bool = False,
           segments: Any = None, offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Running sums, as numpy.cumsum(a, axis, dtype, out): of the flattened array (axis=None),
    or along the last axis (each row on its own, in one device call). int32 and smaller
    accumulate in int64 (unsigned: uint64). exclusive=True: element i sums the elements before
    it (0 first). out (C-contiguous, of the result's dtype) is written in place.

    segments: one flag per element of the flattened array, nonzero where a segment starts (the
    sums restart there); offsets: S + 1 ascending offsets from 0 to a.size, segment s being
    [offsets[s], offsets[s+1]) (empty ones allowed). A pyopencl.array.Array is scanned on its
    own queue into a new pyopencl array from its allocator; an unsegmented scan of one of the six
    types whole returns without waiting for it (docs/PYTHON.md)."""
    return _scan("cumsum", "sum", a, axis, dtype, out, exclusive, device, segments, offsets)


def cumprod(a: Any, axis: Optional[int] = None, dtype: Any = None,
            out: Optional[np.ndarray] = None, *, exclusive: bool = False,
            segments: Any = None, offsets: Any = None, device: DeviceSpec = None) -> Any:
    """Running products, as numpy.cumprod; otherwise as cumsum (exclusive: 1 first; segments=,
    offsets= and pyopencl arrays too)."""
    return _scan("cumprod", "prod", a, axis, dtype, out, exclusive, device, segments, offsets)


# --- pyopencl.array.Array: arrays already on a device


def _is_clarray(a: Any) -> bool:
    """Whether a is a pyopencl.array.Array (PyOpenCL is never imported here: an array of it
    exists only once the program has imported it)."""
    mod = sys.modules.get("pyopencl.array")
    return mod is not None and isinstance(a, mod.Array)


_cl_opened: dict = {}  # queue handle -> (queue, Device): one Device per queue (the queue kept
# alive with it, so its handle names no other)


def _cl_device(a: Any, device: DeviceSpec, fname: str) -> Device:
    """The Device made of a pyopencl array's context, device and queue (kept for the process)."""
    if device is not None:
        raise ValueError(f"clreduce.{fname}: a pyopencl array is reduced on its own queue: "
                         f"device= must be None")
    q = a.queue
    if q is None:
        raise ValueError(f"clreduce.{fname}: the pyopencl array has no queue (array.with_queue)")
    key = q.int_ptr
    hit = _cl_opened.get(key)  # one lookup, atomic under the GIL: no lock on this path
    if hit is None:
        dev = Device.__new__(Device)
        kernel_dir = os.environ.get("CLREDUCE_KERNEL_DIR") or _KERNEL_DIR
        dev._dev = _clreduce._Device(q.context.int_ptr, q.device.int_ptr, q.int_ptr, kernel_dir,
                                     [], True)
        dev._info = DeviceInfo(**dev._dev.summary())
        with _lock:
            hit = _cl_opened.setdefault(key, (q, dev))
    return hit[1]


def _cl_check(a: Any, fname: str, c_order: bool) -> None:
    if a.dtype not in _LIB_NAME:
        raise TypeError(f"clreduce.{fname}: unsupported dtype {a.dtype} (clreduce takes "
                        f"{_TYPES_TEXT})")
    if not (a.flags.c_contiguous or (not c_order and a.flags.f_contiguous)):
        raise ValueError(f"clreduce.{fname}: a pyopencl array must be contiguous (C order); "
                         f"copy it first (array.copy())")


def _cl_at(x: Any) -> Tuple[int, int]:
    """A contiguous pyopencl array's buffer handle and first element."""
    return x.base_data.int_ptr, x.offset // x.dtype.itemsize


_cl_aligns: dict = {}  # device handle -> CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes


def _cl_start(x: Any) -> Tuple[int, Any]:
    """A buffer whose element 0 is a contiguous pyopencl array's first element, and the object
    that keeps it alive: the array's own buffer (offset 0), a sub-buffer of it (an offset at the
    device's base alignment), else a copy of the view on the device."""
    if x.offset == 0:
        return x.base_data.int_ptr, x
    dev = x.queue.device
    align = _cl_aligns.get(dev.int_ptr)
    if align is None:
        align = _cl_aligns.setdefault(dev.int_ptr, builtins.max(dev.mem_base_addr_align // 8, 1))
    cl = sys.modules["pyopencl"]
    if x.offset % align == 0:
        try:
            sub = x.base_data.get_sub_region(x.offset, x.nbytes)
            return sub.int_ptr, sub
        except (AttributeError, cl.Error):  # a pool's buffer, or a runtime that refuses it
            pass
    c = _cl_alloc(x, x.nbytes)  # its bytes (any dtype)
    cl.enqueue_copy(x.queue, c, x.base_data, byte_count=x.nbytes, src_offset=x.offset)
    return c.int_ptr, c


def _cl_buffers(arrays: Sequence[Any]) -> Tuple[list, list]:
    """The engine's inputs of pyopencl arrays: [(the library's type name, cl_mem handle)], and the
    objects to keep alive until the call returns."""
    bufs, keep = [], []
    for x in arrays:
        mem, k = _cl_start(x)
        bufs.append((_LIB_NAME[x.dtype], mem))
        keep.append(k)
    return bufs, keep


def _cl_alloc(a: Any, nbytes: int) -> Any:
    """A buffer of nbytes (> 0) from a pyopencl array's allocator (a pyopencl.tools.MemoryPool
    serves it), as PyOpenCL's own functions allocate their results; a new cl.Buffer where the
    array has none."""
    if a.allocator is not None:
        return a.allocator(nbytes)
    cl = sys.modules["pyopencl"]
    return cl.Buffer(a.context, cl.mem_flags.READ_WRITE, nbytes)


_cl_fast: list = []  # [whether pyopencl.array.Array takes its fast constructor (_fast=True)]


def _cl_new(a: Any, shape: Tuple[int, ...], dtype: np.dtype, data: Any = None,
            offset: int = 0) -> Any:
    """A new C-contiguous pyopencl array on a's queue with a's allocator: on `data` from byte
    `offset`, else on a buffer of its own from the allocator. Made with PyOpenCL's fast
    constructor where it has one (the general one checks its arguments through NumPy: about
    10 us a call)."""
    cla = sys.modules["pyopencl.array"]
    size = 1
    for d in shape:
        size *= d
    if data is None and size:
        data = _cl_alloc(a, size * dtype.itemsize)
    if not _cl_fast:
        import inspect
        _cl_fast.append("_fast" in inspect.signature(cla.Array.__init__).parameters)
    if not _cl_fast[0] or not size:
        return cla.Array(a.queue, shape, dtype, allocator=a.allocator, data=data, offset=offset)
    strides = []
    step = dtype.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= builtins.max(d, 1)
    return cla.Array(None, shape, dtype, allocator=a.allocator, data=data, offset=offset,
                     strides=tuple(reversed(strides)), _fast=True, _size=size,
                     _context=a.context, _queue=a.queue)


def _cl_result(a: Any, res: Any) -> Any:
    """A result computed on the host as the pyopencl array's call gives it: a new pyopencl array
    on a's queue, allocated with a's allocator (a NumPy scalar becomes a 0-d array), written
    from the host (a blocking copy)."""
    res = np.asarray(res)
    if not res.flags.c_contiguous:
        res = np.ascontiguousarray(res)  # (of ndim >= 1: a 0-d array is contiguous)
    out = _cl_new(a, res.shape, res.dtype)
    if res.size:
        out.set(res)
    return out


_LIB_RT: dict = {}  # (op, the library's type name, acc) -> result dtype


def _lib_rt(op: str, tname: str, acc: str) -> np.dtype:
    """The library's result dtype of op on tname with accumulator acc (asked once)."""
    key = (op, tname, acc)
    rt = _LIB_RT.get(key)
    if rt is None:
        rt = _LIB_RT.setdefault(key, _FROM_LIB[_clreduce.result_dtype(op, tname, acc)])
    return rt


# The types the library's enqueue-only plans take (clreduce::Reduction, clreduce::Scan).
_PLANNED = frozenset(np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64,
                                           np.float32, np.float64))
_I64 = np.dtype(np.int64)
_INTP = np.dtype(np.intp)


def _cl_enqueue(dev: Device, op: str, x: Any, acc: str, shape: Tuple[int, ...]) -> Any:
    """op over every element of x (contiguous, at least one element, one of _PLANNED) by the
    Device's kept plan, written straight into a new 0-d (or `shape`: keepdims) pyopencl array
    on x's queue from x's allocator. Returns without waiting on an in-order queue: the result
    is there for the queue's later commands and get(). argmin/argmax: the plan writes {value,
    padding, int64 index}, 16 bytes; the result is the index, at byte 8."""
    tname = _LIB_NAME[x.dtype]
    arg = op == "argmin" or op == "argmax"
    if arg:
        buf = _cl_alloc(x, 16)
        res = _cl_new(x, shape, _I64, data=buf, offset=8)
    else:
        res = _cl_new(x, shape, _lib_rt(op, tname, acc))
    dev._dev.reduce_into(op, tname, x.base_data.int_ptr, x.offset // x.dtype.itemsize, x.size,
                         acc, res.base_data.int_ptr, 0)
    if arg and _INTP != _I64:
        res = res.astype(_INTP)
    return res


class _ClKept:
    """What a kept call of a pyopencl array shares (_ClCall, _ClScan): its result made as the
    first call's was, from the input's allocator. The result is a copy of the attributes of the
    first result (made by pyopencl.array.Array's fast constructor; its buffer and event list
    its own): a third of that constructor's cost; where the pyopencl version's arrays hold other
    attributes than those known here, or the allocator hands out another kind of memory (SVM),
    through the constructor."""

    __slots__ = ("op", "tname", "itemsize", "rt", "nbytes", "offset", "shape", "queue",
                 "template", "buf_type", "array_type")

    # The attributes of pyopencl.array.Array that a copy may share (immutable, or None) besides
    # base_data and events, which are each array's own.
    _SHARED = frozenset(("_flags", "allocator", "context", "dtype", "nbytes", "offset", "queue",
                         "shape", "size", "strides"))

    def __init__(self, op: str, a: Any, res: Any, nbytes: int, offset: int) -> None:
        self.op = op
        self.tname = _LIB_NAME[a.dtype]
        self.itemsize = a.dtype.itemsize
        self.rt = res.dtype
        self.nbytes = nbytes
        self.offset = offset
        self.shape = res.shape
        self.queue = a.queue  # kept alive, so that id(queue) in the key names no other
        d = getattr(res, "__dict__", None)
        ok = (type(res) is sys.modules["pyopencl.array"].Array and d is not None
              and set(d) == self._SHARED | {"base_data", "events"} and res._flags is None)
        # (no buffer, events or allocator of the first result's kept: each call sets its own)
        self.template = dict(d, base_data=None, events=None, allocator=None) if ok else None
        self.buf_type = sys.modules["pyopencl"].MemoryObjectHolder  # a Buffer, a pool's, ...
        self.array_type = type(res)

    def result(self, a: Any) -> Any:
        """A new result array for input a on a buffer from a's allocator (its queue is a's: the
        key's)."""
        alloc = a.allocator
        buf = alloc(self.nbytes) if alloc is not None else _cl_alloc(a, self.nbytes)
        tmpl = self.template
        if tmpl is not None and isinstance(buf, self.buf_type) and a.context is tmpl["context"]:
            res = _new_object(self.array_type)
            res.__dict__ = {**tmpl, "base_data": buf, "events": [], "allocator": alloc}
            return res
        return _cl_new(a, self.shape, self.rt, data=buf, offset=self.offset)


class _ClCall(_ClKept):
    """A whole-array reduction of a pyopencl array with every argument at its default, kept per
    (op, dtype, queue) once the general path has run it (_cl_reduce): what that path works out
    on every call (the Device, the library's type name and result dtype, the result's bytes)
    found once, the call itself the same allocation, 0-d result array and reduce_into as
    _cl_enqueue's."""

    __slots__ = ("reduce_into", "any_order")

    def __init__(self, dev: Device, op: str, a: Any, res: Any) -> None:
        arg = op == "argmin" or op == "argmax"
        super().__init__(op, a, res, 16 if arg else res.dtype.itemsize, 8 if arg else 0)
        self.reduce_into = dev._dev.reduce_into
        self.any_order = not arg  # argmin/argmax count in C order

    def __call__(self, a: Any) -> Any:
        res = self.result(a)
        self.reduce_into(self.op, self.tname, a.base_data.int_ptr, a.offset // self.itemsize,
                         a.size, "", res.base_data.int_ptr, 0)
        return res


class _ClScan(_ClKept):
    """A whole-array scan of a C-contiguous pyopencl array with every argument at its default
    (exclusive either way), kept per (op, dtype, queue, exclusive, size) once the general path
    has run it (_cl_scan): the call itself the same allocation, result array and scan_buffer as
    _cl_scan's."""

    __slots__ = ("scan_buffer", "exclusive", "acc")

    def __init__(self, dev: Device, op: str, a: Any, res: Any, exclusive: bool, acc: str) -> None:
        super().__init__(op, a, res, res.nbytes, 0)
        self.scan_buffer = dev._dev.scan_buffer
        self.exclusive = exclusive
        self.acc = acc

    def __call__(self, a: Any) -> Any:
        res = self.result(a)
        self.scan_buffer(self.op, self.tname, a.base_data.int_ptr, a.offset // self.itemsize,
                         a.size, res.base_data.int_ptr, 0, self.exclusive, None, self.acc)
        return res


_new_object = object.__new__
_cl_scans: dict = {}  # (op, dtype, id(queue), exclusive, size) -> _ClScan
_cl_calls: dict = {}  # (op, dtype, id(queue)) -> _ClCall
_cl_types: set = set()  # the pyopencl array types (Array, subclasses) the kept calls took


def _cl_reduce(fname: str, op: str, a: Any, axis: Any, dtype: Any, out: Any, keepdims: bool,
               device: DeviceSpec, offsets: Any):
    """op over a pyopencl array, on its context and queue: a new pyopencl array, 0-d for a
    whole-array reduction (NumPy's shape with keepdims, axes or offsets), from a's allocator."""
    defaults = (axis is None and dtype is None and out is None and device is None
                and offsets is None and keepdims is False)
    dev = _cl_device(a, device, fname)
    if out is not None:
        raise TypeError(f"clreduce.{fname}: out= is not taken with a pyopencl array (the result "
                        f"is a new pyopencl array)")
    _cl_check(a, fname, c_order=op.startswith("arg") or axis is not None or offsets is not None)
    if a.size == 0:  # nothing on the device to read: NumPy's answer (or its error)
        return _cl_result(a, _reduce(fname, op, np.empty(a.shape, a.dtype), axis, dtype, None,
                                     keepdims, None, offsets))
    if offsets is not None:
        if axis is not None or keepdims:
            raise ValueError(f"clreduce.{fname}: offsets= reduces the flattened array: no axis, "
                             f"no keepdims")
        o = _offsets_array(offsets, a.size, fname)
        x, acc, back = _segment_input(fname, op, a, dtype, None, o)
        if o.size == 1:
            rt = np.dtype(np.intp) if op.startswith("arg") else back if back is not None else (
                _lib_rt(op, _LIB_NAME[x.dtype], acc))
            return _cl_result(a, np.empty(0, dtype=rt))
        mem, first = _cl_at(x)
        values, indices, _, _ = dev._dev.segments_buffer(
            op, _LIB_NAME[x.dtype], mem, first + x.size, [int(v) + first for v in o], [], [],
            False, False, acc)
        res = indices.astype(np.intp, copy=False) if indices is not None else values
        return _cl_result(a, res if back is None else res.astype(back))
    axes = _axes(axis, a.ndim, fname, single=op.startswith("arg"))
    if _partial(axes, a.ndim):
        x, acc, back = _segment_input(fname, op, a, dtype, None, np.zeros(1, np.int64))
        mem, keep = _cl_start(x)  # the engine reads axes from the buffer's start
        values, indices, rshape, _ = dev._dev.segments_buffer(
            op, _LIB_NAME[x.dtype], mem, x.size, [], [int(d) for d in a.shape],
            list(axes), True, bool(keepdims), acc)
        del keep
        res = (indices.astype(np.intp, copy=False) if indices is not None else values)
        res = res.reshape(tuple(rshape))
        return _cl_result(a, res if back is None else res.astype(back))
    # The whole array: every type as it is (the library runs the narrow ones on its engine).
    if op in ("min", "max", "argmin", "argmax"):
        x, acc, back = a, "", None
    else:
        x, acc, back = _device_input(a, _op_dtype(a, dtype, None, fname), narrow=True)
    shape = (1,) * a.ndim if keepdims else ()
    if x.dtype in _PLANNED:  # enqueued into the result's buffer, not waited for
        res = _cl_enqueue(dev, op, x, acc, shape)
        if defaults and x is a and not acc and back is None and res.dtype == (
                _I64 if op.startswith("arg") else _lib_rt(op, _LIB_NAME[x.dtype], acc)):
            _cl_calls[(op, a.dtype, id(a.queue))] = _ClCall(dev, op, a, res)
            _cl_types.add(type(a))
        return res if back is None else res.astype(back)
    # The engine's types: computed and read back (the library has no enqueue-only path for
    # them), the value written to a new device array.
    mem, first = _cl_at(x)
    v, index, rname = dev._dev.reduce_buffer(op, _LIB_NAME[x.dtype], mem, first, x.size, acc)
    if op.startswith("arg"):
        value = np.intp(index)
    else:
        value = _FROM_LIB[rname].type(v)
        if back is not None:
            value = np.asarray(value).astype(back)[()]
    return _cl_result(a, np.full(shape, value, dtype=value.dtype))


def _cl_scan(fname: str, op: str, a: Any, axis: Any, dtype: Any, out: Any, exclusive: bool,
             device: DeviceSpec, segments: Any, offsets: Any):
    """A scan of a pyopencl array on its context and queue into a new pyopencl array from a's
    allocator (not waited for where the library's kept plan runs it on an in-order queue)."""
    dev = _cl_device(a, device, fname)
    if out is not None:
        raise TypeError(f"clreduce.{fname}: out= is not taken with a pyopencl array (the result "
                        f"is a new pyopencl array)")
    _cl_check(a, fname, c_order=True)
    _scan_type(a.dtype, dtype, fname)
    row = 0
    shape: Tuple[int, ...] = (a.size,)
    if axis is not None and a.ndim > 1:
        axes = _axes(axis, a.ndim, fname, single=True)
        if segments is not None or offsets is not None:
            raise ValueError(f"clreduce.{fname}: segments= and offsets= scan the flattened array "
                             f"(axis=None)")
        if axes[0] != a.ndim - 1:
            raise ValueError(f"clreduce.{fname}: scans run over the whole array (axis=None) or "
                             f"along the last axis")
        shape, row = a.shape, a.shape[-1]
    elif axis is not None:
        _axes(axis, a.ndim, fname, single=True)
    if not isinstance(exclusive, (bool, np.bool_)):
        raise TypeError(f"clreduce.{fname}: exclusive must be True or False")
    x, acc, back = _device_input(a, _op_dtype(a, dtype, None, fname))
    rt = _lib_rt(op, _LIB_NAME[x.dtype], acc)
    flags = None
    if segments is not None or offsets is not None or row:
        flags = _scan_flags(fname, x.size, row, segments, offsets)
    res = _cl_new(a, shape, rt)
    if x.size:
        mem, first = _cl_at(x)
        dev._dev.scan_buffer(op, _LIB_NAME[x.dtype], mem, first, x.size, res.base_data.int_ptr,
                             0, bool(exclusive), flags, acc)
        if (x is a and back is None and flags is None and axis is None and dtype is None
                and device is None and isinstance(exclusive, bool)):
            _cl_scans[(op, a.dtype, id(a.queue), exclusive, a.size)] = _ClScan(dev, op, a, res,
                                                                                exclusive, acc)
            _cl_types.add(type(a))
    return res if back is None else res.astype(back)
