// module.cpp: clreduce._clreduce, the Python extension over the public C++ API
// (<clreduce/clreduce.hpp> and libclreduce alone). It reduces C-contiguous host arrays of the
// library's twelve element types (scans: its six); NumPy's rules (dtypes, axes, out=, keepdims)
// live in the Python package around it (python/clreduce/__init__.py), which hands this module only
// arrays it can take as they are. Besides: the derived ops (mean, var, std, dot, ...), user
// expressions, and segmented and axis reductions of every kind, results as NumPy arrays.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <clreduce/clreduce.hpp>

namespace nb = nanobind;

namespace {

// clreduce.Error, a RuntimeError subclass made at import (PyErr_NewExceptionWithDoc).
PyObject* g_error_type = nullptr;

void raise_error(const char* category, const std::string& what) {
  nb::object type = nb::borrow(g_error_type);
  nb::object inst = type(nb::str(what.c_str(), what.size()));
  inst.attr("category") = nb::str(category);
  PyErr_SetObject(g_error_type, inst.ptr());
}

// ---- Ctrl-C. The library asks interrupt_check() while it waits for the device and between
// chunks (clreduce::set_interrupt_check: every 20 ms once a call has lasted 5 ms). On the main
// thread it takes the GIL and runs Python's signal handlers (PyErr_CheckSignals); an exception
// one of them raised (KeyboardInterrupt, or a user handler's own) is kept here, the library stops
// the call (Error(Errc::kInterrupted), once the commands it enqueued have finished), and the
// exception is raised in its place. Elsewhere the check says go on: Python runs its handlers on
// the main thread only. g_kept is read and written with the GIL held.
unsigned long g_main_thread = 0;  // PyThread_get_thread_ident() of the interpreter's main thread
nb::python_error* g_kept = nullptr;  // what a signal handler raised (never freed at exit)

// Keeps the exception being raised (the GIL held), replacing one kept before.
void keep_raised() {
  delete g_kept;
  g_kept = new nb::python_error();
}

// Raises the kept exception, if any (sets Python's error indicator; the GIL held): true if so.
bool restore_kept() {
  if (!g_kept) return false;
  g_kept->restore();
  delete g_kept;
  g_kept = nullptr;
  return true;
}

// Forgets the kept exception (the GIL held): the call it stopped ended with another error.
void drop_kept() {
  delete g_kept;
  g_kept = nullptr;
}

bool interrupt_check() {
  if (PyThread_get_thread_ident() != g_main_thread) return false;
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  keep_raised();
  return true;
}

// Runs f() with the GIL released: other Python threads run while the device works. Then raises
// what a signal handler raised meanwhile: also where the call finished before it heard the
// check's answer. A call stopped by the check throws Error(kInterrupted), which the exception
// translator turns into the kept exception; one that failed otherwise forgets it.
template <class F> auto without_gil(F&& f) {
  try {
    auto result = [&] {
      nb::gil_scoped_release release;
      return f();
    }();
    if (restore_kept()) throw nb::python_error();
    return result;
  } catch (const clreduce::Error& e) {
    if (e.category() == clreduce::Errc::kInterrupted) throw;
    drop_kept();
    // A signal that came meanwhile is raised in the error's place, the error as its context:
    // Ctrl-C during a kernel build makes PoCL's compiler remove its temporary files (LLVM's
    // signal handler), and the build fails.
    if (PyErr_CheckSignals() != 0) {
      nb::python_error stop;
      raise_error(clreduce::errc_name(e.category()), e.what());
      nb::python_error failed;
      PyException_SetContext(stop.value().ptr(), failed.value().inc_ref().ptr());
      throw stop;
    }
    throw;
  } catch (const nb::python_error&) {
    throw;
  } catch (...) {
    drop_kept();
    throw;
  }
}

// The library's element type of a NumPy array's dtype, by its code, bits and lanes; false when it
// is none of the twelve (the variants' six and the engine's float16, bool, int8, uint8, int16,
// uint16, which the library reduces through its engine).
bool dtype_of(const nb::dlpack::dtype& d, clreduce::DType& t) {
  if (d.lanes != 1) return false;
  const auto code = static_cast<nb::dlpack::dtype_code>(d.code);
  if (code == nb::dlpack::dtype_code::Int && d.bits == 32) t = clreduce::DType::kInt32;
  else if (code == nb::dlpack::dtype_code::Int && d.bits == 64) t = clreduce::DType::kInt64;
  else if (code == nb::dlpack::dtype_code::UInt && d.bits == 32) t = clreduce::DType::kUInt32;
  else if (code == nb::dlpack::dtype_code::UInt && d.bits == 64) t = clreduce::DType::kUInt64;
  else if (code == nb::dlpack::dtype_code::Float && d.bits == 32) t = clreduce::DType::kFloat;
  else if (code == nb::dlpack::dtype_code::Float && d.bits == 64) t = clreduce::DType::kDouble;
  else if (code == nb::dlpack::dtype_code::Float && d.bits == 16) t = clreduce::DType::kFloat16;
  else if (code == nb::dlpack::dtype_code::Bool && d.bits == 8) t = clreduce::DType::kBool;
  else if (code == nb::dlpack::dtype_code::Int && d.bits == 8) t = clreduce::DType::kInt8;
  else if (code == nb::dlpack::dtype_code::UInt && d.bits == 8) t = clreduce::DType::kUInt8;
  else if (code == nb::dlpack::dtype_code::Int && d.bits == 16) t = clreduce::DType::kInt16;
  else if (code == nb::dlpack::dtype_code::UInt && d.bits == 16) t = clreduce::DType::kUInt16;
  else return false;
  return true;
}

using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::c_contig, nb::device::cpu>;

clreduce::DType checked_dtype(const nb::dlpack::dtype& d, const char* what) {
  clreduce::DType t{};
  if (!dtype_of(d, t))
    throw nb::type_error((std::string(what) +
                          ": the element type must be int32, uint32, int64, uint64, float32, "
                          "float64, float16, bool, int8, uint8, int16 or uint16")
                             .c_str());
  return t;
}

nb::object value_object(const clreduce::Value& v) {
  if (clreduce::is_float(v.type)) return nb::float_(v.f);
  if (clreduce::is_signed(v.type)) return nb::int_(v.i);
  return nb::steal(PyLong_FromUnsignedLongLong(v.u));
}

nb::dict summary_dict(const clreduce::DeviceSummary& s) {
  nb::dict d;
  d["index"] = s.index;
  d["type"] = s.type;
  d["name"] = s.name;
  d["platform"] = s.platform;
  d["vendor"] = s.vendor;
  d["version"] = s.version;
  d["opencl_c"] = s.opencl_c;
  d["compute_units"] = s.compute_units;
  d["global_mem"] = s.global_mem;
  d["max_alloc"] = s.max_alloc;
  d["local_mem"] = s.local_mem;
  d["max_wg_size"] = s.max_wg_size;
  d["fp64"] = s.fp64;
  return d;
}

clreduce::Op reduce_op(const std::string& name) {
  return clreduce::parse_op(name);  // Error(kUsage) naming the valid ones
}

// The inputs of a derived op or an expression: C-contiguous arrays of one length.
std::vector<clreduce::ArrayRef> array_refs(const std::vector<InArray>& arrays, const char* what) {
  std::vector<clreduce::ArrayRef> refs;
  for (const InArray& a : arrays) {
    if (a.size() != arrays.front().size())
      throw nb::value_error((std::string(what) + ": the arrays must have one size").c_str());
    refs.emplace_back(checked_dtype(a.dtype(), what), static_cast<const void*>(a.data()));
  }
  if (refs.empty()) throw nb::value_error((std::string(what) + ": no array").c_str());
  return refs;
}

// An OpenCL object of the program's (PyOpenCL's int_ptr), kept by the C++ wrapper (retained).
template <class T, class H> T cl_object(std::uintptr_t ptr) {
  if (ptr == 0) throw nb::value_error("a null OpenCL handle");
  return T(reinterpret_cast<H>(ptr), /*retainObject=*/true);
}

// The inputs of a derived op or an expression on buffers of the Device's context: (the library's
// type name, a cl_mem by its int_ptr) each, every buffer holding the call's n elements from its
// start.
std::vector<clreduce::ArrayRef> buffer_refs(
    const std::vector<std::tuple<std::string, std::uintptr_t>>& buffers, const char* what) {
  std::vector<clreduce::ArrayRef> refs;
  for (const auto& [type, mem] : buffers)
    refs.emplace_back(clreduce::parse_dtype(type), cl_object<cl::Buffer, cl_mem>(mem));
  if (refs.empty()) throw nb::value_error((std::string(what) + ": no array").c_str());
  return refs;
}

// A 1-D NumPy array that owns what `values` held (no copy).
template <class T> nb::object owned_array(std::vector<T>&& values) {
  auto* holder = new std::vector<T>(std::move(values));
  nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const std::size_t shape[1] = {holder->size()};
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(holder->data(), 1, shape, owner));
}

nb::object values_array(const clreduce::HostArray& a) {
  return clreduce::dispatch_dtype(a.type, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> v(a.n);
    if (a.n) std::memcpy(v.data(), a.bytes.data(), a.n * sizeof(T));
    return owned_array(std::move(v));
  });
}

// What a segmented call takes: offsets, or a shape and its axes.
clreduce::Segments segments_of(const std::vector<std::int64_t>& offsets,
                               const std::vector<std::uint64_t>& shape,
                               const std::vector<std::int64_t>& axes, bool by_axes,
                               bool keepdims) {
  return by_axes ? clreduce::Segments::along_axes(shape, axes, keepdims)
                 : clreduce::Segments::from_offsets(offsets);
}

// A scan's segment flags: none, or n bytes (a C-contiguous uint8 array of n elements).
std::vector<std::uint8_t> flag_bytes(const nb::object& flags, std::size_t n) {
  if (flags.is_none()) return {};
  const auto f = nb::cast<nb::ndarray<nb::ro, std::uint8_t, nb::ndim<1>, nb::c_contig,
                                      nb::device::cpu>>(flags);
  if (f.size() != n) throw nb::value_error("scan: one segment flag per element");
  return std::vector<std::uint8_t>(f.data(), f.data() + n);
}


// Waits for event e, the last command of a call on its queue, polling its status (no blocking
// wait of the runtime, which has no time limit): past limit_s seconds Error(kTimeout), as the
// library's own waits. Past 5 ms it asks interrupt_check() every 20 ms, as the library does;
// when that says stop, it still waits for e (the commands may be using the caller's memory),
// then throws Error(kInterrupted).
void wait_for(const cl::Event& e, double limit_s, const char* what) {
  const auto t0 = std::chrono::steady_clock::now();
  double asked = 0;  // seconds into the wait when interrupt_check() was last asked
  bool stop = false;
  for (unsigned polls = 0;; ++polls) {
    const cl_int st = e.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>();
    if (st == CL_COMPLETE) {
      if (stop)
        throw clreduce::Error(clreduce::Errc::kInterrupted, "interrupted: " + std::string(what));
      return;
    }
    if (st < 0)
      throw clreduce::Error(clreduce::Errc::kRuntime,
                            std::string(what) + " failed: " + clreduce::cl_error_name(st));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > limit_s)
      throw clreduce::Error(
          clreduce::Errc::kTimeout,
          std::string(what) + " did not finish within " + std::to_string(limit_s) + " s");
    if (!stop && s > 5e-3 && s - asked > 20e-3) {
      asked = s;
      stop = interrupt_check();
    }
    // Short waits spin (a small reduction is done in microseconds), longer ones sleep.
    if (polls < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 20000 ? 20 : 500));
  }
}

// One open device. The library's Device is used by one thread at a time: calls take the mutex
// after the GIL is released, so Python threads sharing one Device wait for each other.
class PyDevice {
  // Runs f() with the GIL released and the Device held (Python threads sharing one Device take
  // turns), then raises what a signal handler raised meanwhile.
  template <class F> auto locked(F&& f) {
    return without_gil([&] {
      std::lock_guard<std::mutex> lock(mutex_);
      return f();
    });
  }

 public:
  PyDevice(const std::string& spec, const std::string& kernel_dir,
           const std::vector<std::string>& tune, bool from_env) {
    clreduce::Tuning t = from_env ? clreduce::tuning_from_env() : clreduce::Tuning{};
    for (const std::string& kv : tune) clreduce::set_tuning(t, kv);
    dev_ = without_gil([&] { return std::make_unique<clreduce::Device>(spec, kernel_dir, t); });
  }

  // A Device on the program's own context, device and queue (PyOpenCL's, by their int_ptr). An
  // in-order queue (PyOpenCL's default) is run on directly (QueueUse::kProgram): a call's
  // commands follow the program's on that one queue, and the program's later ones follow them,
  // with no second queue to wait across; an out-of-order one gets a queue of clreduce's own
  // beside it.
  PyDevice(std::uintptr_t context, std::uintptr_t device, std::uintptr_t queue,
           const std::string& kernel_dir, const std::vector<std::string>& tune, bool from_env) {
    clreduce::Tuning t = from_env ? clreduce::tuning_from_env() : clreduce::Tuning{};
    for (const std::string& kv : tune) clreduce::set_tuning(t, kv);
    const auto ctx = cl_object<cl::Context, cl_context>(context);
    const auto dev = cl_object<cl::Device, cl_device_id>(device);
    const auto q = cl_object<cl::CommandQueue, cl_command_queue>(queue);
    dev_ = without_gil([&] {
      const bool in_order =
          (q.getInfo<CL_QUEUE_PROPERTIES>() & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0;
      return std::make_unique<clreduce::Device>(
          ctx, dev, q, in_order ? clreduce::QueueUse::kProgram : clreduce::QueueUse::kOwn,
          kernel_dir, t);
    });
  }

  // "program" for a Device run on the program's queue itself, else "own".
  std::string queue_use() const {
    return dev_->queue_use() == clreduce::QueueUse::kProgram ? "program" : "own";
  }

  nb::dict summary() const { return summary_dict(dev_->summary()); }

  // op over elements [first, first + n) of `type` (the library's name) of a buffer of the
  // Device's context (a cl_mem by its int_ptr), computed and read back through Device::reduce:
  // (value, index, result type name). For what has no enqueue-only plan (the engine's types);
  // the variants' types go through reduce_into.
  std::tuple<nb::object, std::int64_t, std::string> reduce_buffer(
      const std::string& op_name, const std::string& type, std::uintptr_t mem, std::size_t first,
      std::size_t n, const std::string& acc) {
    const clreduce::Op op = reduce_op(op_name);
    const clreduce::DType t = clreduce::parse_dtype(type);
    const auto buf = cl_object<cl::Buffer, cl_mem>(mem);
    clreduce::Options o;
    o.acc = acc;
    const clreduce::Result r = locked([&] { return dev_->reduce(op, t, buf, first, n, o); });
    return {value_object(r.value), r.value.index, clreduce::dtype_name(r.acc)};
  }

  // op over elements [first, first + n) (n > 0) of `type`, one of the variants' six, of buffer
  // `in`, written into buffer `out` at byte out_offset by a plan (clreduce::Reduction) kept per
  // op, type, accumulator and power-of-two size class: result_dtype(op, type, acc)'s bytes, or
  // for argmin/argmax 16 bytes, {value, padding, the int64 index at byte 8}. No plan, scratch or
  // program is made again, nothing is read back. On the program's in-order queue
  // (QueueUse::kProgram) it returns once the launches are enqueued and flushed, with no event
  // made (NVIDIA's driver spends about 2 us a call on one): the program's later commands on
  // that queue follow them. Beside clreduce's own queue (an out-of-order program queue,
  // QueueUse::kOwn) it waits for the plan's event (within the library's time limit), so the
  // result is there for any queue. Argument errors are thrown before anything
  // is enqueued.
  void reduce_into(const std::string& op_name, const std::string& type, std::uintptr_t in,
                   std::size_t first, std::size_t n, const std::string& acc, std::uintptr_t out,
                   std::size_t out_offset) {
    const clreduce::Op op = reduce_op(op_name);
    const clreduce::DType t = clreduce::parse_dtype(type);
    if (n == 0 || !clreduce::is_variant_dtype(t))
      throw nb::value_error("reduce_into: n > 0 elements of one of the variants' six types");
    const auto ib = cl_object<cl::Buffer, cl_mem>(in);
    const auto ob = cl_object<cl::Buffer, cl_mem>(out);
    locked([&] {
      clreduce::Reduction& plan = reduction_plan(op, t, acc, n);
      if (dev_->queue_use() == clreduce::QueueUse::kProgram)  // the queue's order: no event
        plan.enqueue(ib, first, n, ob, out_offset, {}, nullptr);
      else
        wait_for(plan.enqueue(ib, first, n, ob, out_offset), limit_s(n, t), "the reduction");
      return true;
    });
  }

  // Scans elements [first, first + n) of buffer `in` into [out_first, out_first + n) of buffer
  // `out` (of result_dtype(op, type, acc)); flags as scan()'s. Whole buffers of the variants'
  // types, unsegmented, go through a kept plan (clreduce::Scan) and, on the program's in-order
  // queue, return once it is enqueued (as reduce_into); the rest through Device::scan, which
  // returns when the scan is done.
  void scan_buffer(const std::string& op_name, const std::string& type, std::uintptr_t in,
                   std::size_t first, std::size_t n, std::uintptr_t out, std::size_t out_first,
                   bool exclusive, const nb::object& flags, const std::string& acc) {
    const clreduce::Op op = reduce_op(op_name);
    const clreduce::DType t = clreduce::parse_dtype(type);
    const auto ib = cl_object<cl::Buffer, cl_mem>(in);
    const auto ob = cl_object<cl::Buffer, cl_mem>(out);
    clreduce::Options o;
    o.acc = acc;
    o.exclusive = exclusive;
    o.segments = flag_bytes(flags, n);
    locked([&] {
      if (n > 0 && first == 0 && out_first == 0 && o.segments.empty() &&
          clreduce::is_variant_dtype(t)) {
        // Whole buffers, unsegmented: a kept plan (clreduce::Scan), as reduce_into's.
        clreduce::Scan& plan = scan_plan(op, t, acc, exclusive, n);
        if (dev_->queue_use() == clreduce::QueueUse::kProgram)  // the queue's order: no event
          plan.enqueue(ib, 0, n, ob, 0, {}, nullptr);
        else
          wait_for(plan.enqueue(ib, n, ob), limit_s(n, t), "the scan");
        return true;
      }
      dev_->scan(op, t, ib, first, n, ob, out_first, o);
      return true;
    });
  }

  // A built-in op's segmented reduction of the first n elements of a buffer: as segments().
  std::tuple<nb::object, nb::object, std::vector<std::uint64_t>, std::string> segments_buffer(
      const std::string& name, const std::string& type, std::uintptr_t mem, std::size_t n,
      const std::vector<std::int64_t>& offsets, const std::vector<std::uint64_t>& shape,
      const std::vector<std::int64_t>& axes, bool by_axes, bool keepdims,
      const std::string& acc) {
    const clreduce::Op op = reduce_op(name);
    const clreduce::DType t = clreduce::parse_dtype(type);
    const auto buf = cl_object<cl::Buffer, cl_mem>(mem);
    const clreduce::Segments segs = segments_of(offsets, shape, axes, by_axes, keepdims);
    clreduce::Options o;
    o.acc = acc;
    clreduce::SegmentedResult r =
        locked([&] { return dev_->reduce_segments(op, t, buf, n, segs, o); });
    nb::object indices = nb::none();
    if (clreduce::is_arg_op(op)) indices = owned_array(std::move(r.indices));
    return {values_array(r.values), indices, r.shape, clreduce::dtype_name(r.values.type)};
  }
  std::string kernel_dir() const { return dev_->kernel_dir(); }

  // A user expression from its texts: map, reduce, identity, post, acc.
  static clreduce::Expression expression(const std::vector<std::string>& text) {
    return clreduce::Expression{text.at(0), text.at(1), text.at(2), text.at(3), text.at(4)};
  }

  // (value, result type name) of a derived op or a user expression (`what`) over n elements of
  // `refs`, the GIL released and the Device held while the library works.
  template <class What>
  std::tuple<nb::object, std::string> reduce_refs(const What& what,
                                                  const std::vector<clreduce::ArrayRef>& refs,
                                                  std::size_t n, const std::string& where,
                                                  double ddof) {
    clreduce::Options o;
    o.where = where;
    o.ddof = ddof;
    const clreduce::Result r = locked([&] { return dev_->reduce(what, refs, n, o); });
    return {value_object(r.value), clreduce::dtype_name(r.value.type)};
  }

  // (value, result type name) of a derived op (dot, mean, ...) over n elements of buffers, as
  // derived()'s.
  std::tuple<nb::object, std::string> derived_buffers(
      const std::string& op_name, const std::vector<std::tuple<std::string, std::uintptr_t>>& bufs,
      std::size_t n, const std::string& where, double ddof) {
    return reduce_refs(clreduce::parse_derived(op_name), buffer_refs(bufs, op_name.c_str()), n,
                       where, ddof);
  }

  // (value, result type name) of a user expression over n elements of buffers, as expr()'s.
  std::tuple<nb::object, std::string> expr_buffers(
      const std::vector<std::string>& text,
      const std::vector<std::tuple<std::string, std::uintptr_t>>& bufs, std::size_t n,
      const std::string& where) {
    return reduce_refs(expression(text), buffer_refs(bufs, "reduce"), n, where, 0.0);
  }

  // A derived op's ("derived") or a user expression's ("expr") segmented reduction of n elements
  // of buffers: as segments().
  std::tuple<nb::object, nb::object, std::vector<std::uint64_t>, std::string> segments_buffers(
      const std::string& kind, const std::string& name, const std::vector<std::string>& text,
      const std::vector<std::tuple<std::string, std::uintptr_t>>& bufs, std::size_t n,
      const std::vector<std::int64_t>& offsets, const std::vector<std::uint64_t>& shape,
      const std::vector<std::int64_t>& axes, bool by_axes, bool keepdims, const std::string& where,
      double ddof) {
    const std::vector<clreduce::ArrayRef> refs = buffer_refs(bufs, "segments");
    const clreduce::Segments segs = segments_of(offsets, shape, axes, by_axes, keepdims);
    clreduce::Options o;
    o.where = where;
    o.ddof = ddof;
    clreduce::SegmentedResult r = locked([&] {
      if (kind == "derived")
        return dev_->reduce_segments(clreduce::parse_derived(name), refs, n, segs, o);
      const clreduce::Expression e = expression(text);
      return dev_->reduce_segments(e, refs, n, segs, o);
    });
    return {values_array(r.values), nb::none(), r.shape, clreduce::dtype_name(r.values.type)};
  }

  // (value, index, result type name, builds, kernel_ms) of op over every element of a.
  std::tuple<nb::object, std::int64_t, std::string, std::size_t, double> reduce(
      const std::string& op_name, const InArray& a, const std::string& acc,
      const std::string& variant) {
    const clreduce::Op op = reduce_op(op_name);
    const clreduce::DType t = checked_dtype(a.dtype(), "reduce");
    clreduce::Options o;
    o.acc = acc;
    o.variant = variant;
    const clreduce::Result r =
        locked([&] { return dev_->reduce(op, t, a.data(), a.size(), o); });
    return {value_object(r.value), r.value.index, clreduce::dtype_name(r.acc), r.builds,
            r.kernel_ms};
  }

  // Scans every element of a into out (as many elements, of result_dtype(op, a's type, acc)).
  // flags: None, or a uint8 array of a's length (nonzero starts a segment: rows along the last
  // axis, or the caller's segments). Returns (builds, kernel_ms).
  std::tuple<std::size_t, double> scan(const std::string& op_name, const InArray& a, OutArray& out,
                                       bool exclusive, const nb::object& flags,
                                       const std::string& acc, const std::string& variant) {
    const clreduce::Op op = reduce_op(op_name);
    const clreduce::DType t = checked_dtype(a.dtype(), "scan input");
    const clreduce::DType ot = checked_dtype(out.dtype(), "scan output");
    if (out.size() != a.size())
      throw nb::value_error("scan: the output must have as many elements as the input");
    if (a.size() != 0 && out.data() == a.data())
      throw nb::value_error("scan: the output must not be the input itself");
    clreduce::Options o;
    o.acc = acc;
    o.variant = variant;
    o.exclusive = exclusive;
    o.segments = flag_bytes(flags, a.size());
    const clreduce::Result r =
        locked([&] { return dev_->scan(op, t, a.data(), a.size(), ot, out.data(), o); });
    return {r.builds, r.kernel_ms};
  }

  // (value, result type name) of a derived op (dot, mean, ...) over arrays of one length.
  std::tuple<nb::object, std::string> derived(const std::string& op_name,
                                              const std::vector<InArray>& arrays,
                                              const std::string& where, double ddof) {
    return reduce_refs(clreduce::parse_derived(op_name), array_refs(arrays, op_name.c_str()),
                       arrays.front().size(), where, ddof);
  }

  // (value, result type name) of a user expression over arrays of one length.
  std::tuple<nb::object, std::string> expr(const std::vector<std::string>& text,
                                           const std::vector<InArray>& arrays,
                                           const std::string& where) {
    return reduce_refs(expression(text), array_refs(arrays, "reduce"), arrays.front().size(),
                       where, 0.0);
  }

  // A segmented reduction: kind "op" (a built-in op), "derived" or "expr" (text: map, reduce,
  // identity, post, acc). Returns (values, indices or None, shape, values' type name).
  std::tuple<nb::object, nb::object, std::vector<std::uint64_t>, std::string> segments(
      const std::string& kind, const std::string& name, const std::vector<std::string>& text,
      const std::vector<InArray>& arrays, const std::vector<std::int64_t>& offsets,
      const std::vector<std::uint64_t>& shape, const std::vector<std::int64_t>& axes,
      bool by_axes, bool keepdims, const std::string& acc, const std::string& where,
      double ddof) {
    const std::vector<clreduce::ArrayRef> refs = array_refs(arrays, "segments");
    const clreduce::Segments segs = segments_of(offsets, shape, axes, by_axes, keepdims);
    clreduce::Options o;
    o.acc = acc;
    o.where = where;
    o.ddof = ddof;
    const std::size_t n = arrays.front().size();
    const clreduce::Op op = kind == "op" ? reduce_op(name) : clreduce::Op::kSum;
    clreduce::SegmentedResult r = locked([&] {
      if (kind == "op")
        return dev_->reduce_segments(op, refs[0].type, refs[0].data, n, segs, o);
      if (kind == "derived")
        return dev_->reduce_segments(clreduce::parse_derived(name), refs, n, segs, o);
      const clreduce::Expression e = expression(text);
      return dev_->reduce_segments(e, refs, n, segs, o);
    });
    nb::object indices = nb::none();
    if (!r.indices.empty() || (kind == "op" && clreduce::is_arg_op(op)))
      indices = owned_array(std::move(r.indices));
    return {values_array(r.values), indices, r.shape, clreduce::dtype_name(r.values.type)};
  }

 private:
  // A wait's time limit for n elements of t, as the library's: the tuning's timeout, else a
  // minute plus a second per 256 MiB.
  double limit_s(std::size_t n, clreduce::DType t) {
    const double bytes = static_cast<double>(n) * static_cast<double>(clreduce::dtype_size(t));
    return dev_->tuning().timeout > 0 ? dev_->tuning().timeout : 60.0 + bytes / (256.0 * (1 << 20));
  }

  static unsigned size_class(std::size_t n) {
    unsigned c = 0;
    while ((std::size_t{1} << c) < n) ++c;
    return c;
  }

  // The kept scan plan for op on t (mutex_ held).
  clreduce::Scan& scan_plan(clreduce::Op op, clreduce::DType t, const std::string& acc,
                            bool exclusive, std::size_t n) {
    const unsigned c = size_class(n);
    const auto key = std::make_tuple(static_cast<int>(op), static_cast<int>(t), acc, exclusive, c);
    std::unique_ptr<clreduce::Scan>& plan = scans_[key];
    if (!plan) {
      clreduce::PlanOptions po;
      po.acc = acc;
      po.exclusive = exclusive;
      plan = std::make_unique<clreduce::Scan>(*dev_, op, t, std::size_t{1} << c, po);
    }
    return *plan;
  }

  // The kept reduction plan for op on t taking n elements (mutex_ held).
  clreduce::Reduction& reduction_plan(clreduce::Op op, clreduce::DType t, const std::string& acc,
                                      std::size_t n) {
    const unsigned c = size_class(n);
    const auto key = std::make_tuple(static_cast<int>(op), static_cast<int>(t), acc, c);
    std::unique_ptr<clreduce::Reduction>& plan = plans_[key];
    if (!plan) {
      clreduce::PlanOptions po;
      po.acc = acc;
      plan = std::make_unique<clreduce::Reduction>(*dev_, op, t, std::size_t{1} << c, po);
    }
    return *plan;
  }

  std::unique_ptr<clreduce::Device> dev_;
  std::mutex mutex_;
  // Kept plans by (op, type, accumulator, [exclusive,] log2 of their largest n).
  std::map<std::tuple<int, int, std::string, unsigned>, std::unique_ptr<clreduce::Reduction>>
      plans_;
  std::map<std::tuple<int, int, std::string, bool, unsigned>, std::unique_ptr<clreduce::Scan>>
      scans_;
};

}  // namespace

NB_MODULE(_clreduce, m) {
  m.doc() = "clreduce's extension module: the C++ library's devices, reduce and scan. Use the "
            "clreduce package's functions instead.";

  g_error_type = PyErr_NewExceptionWithDoc(
      "clreduce.Error",
      "A failure the clreduce library reports. `category` names its kind: 'usage', 'input', "
      "'runtime', 'timeout', 'build', 'unsupported' or 'internal'. (A call stopped by Ctrl-C "
      "raises KeyboardInterrupt, or what the program's SIGINT handler raised, instead.)",
      PyExc_RuntimeError, nullptr);
  if (!g_error_type) throw nb::python_error();
  m.attr("Error") = nb::borrow(g_error_type);

  g_main_thread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  clreduce::set_interrupt_check(interrupt_check);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const clreduce::Error& e) {
      // A call the interrupt check stopped: what the signal handler raised.
      if (e.category() == clreduce::Errc::kInterrupted && restore_kept()) return;
      raise_error(clreduce::errc_name(e.category()), e.what());
    } catch (const cl::Error& e) {
      raise_error("runtime", std::string(e.what()) + ": " + clreduce::cl_error_name(e.err()));
    }
  });

  m.def(
      "list_devices",
      [] {
        nb::list out;
        for (const clreduce::DeviceSummary& s : clreduce::Device::list())
          out.append(summary_dict(s));
        return out;
      },
      "Every OpenCL device of every platform under one global index, as dicts.");
  m.def("version", [] { return clreduce::version(); }, "The C++ library's version.");
  m.def("result_dtype",
        [](const std::string& op, const std::string& type, const std::string& acc) {
          return clreduce::dtype_name(
              clreduce::result_dtype(clreduce::parse_op(op), clreduce::parse_dtype(type), acc));
        },
        nb::arg("op"), nb::arg("type"), nb::arg("acc") = "",
        "The library's result type name of op on elements of type (NumPy's rule).");
  m.def(
      "tuning_keys",
      [] {
        nb::list out;
        for (const clreduce::TuningKey& k : clreduce::tuning_keys())
          out.append(nb::make_tuple(k.key, k.values, k.meaning));
        return out;
      },
      "The tuning knobs: (key, values, meaning).");

  nb::class_<PyDevice>(m, "_Device")
      .def(nb::init<const std::string&, const std::string&, const std::vector<std::string>&, bool>(),
           nb::arg("spec"), nb::arg("kernel_dir"), nb::arg("tune"), nb::arg("from_env"))
      .def(nb::init<std::uintptr_t, std::uintptr_t, std::uintptr_t, const std::string&,
                    const std::vector<std::string>&, bool>(),
           nb::arg("context"), nb::arg("device"), nb::arg("queue"), nb::arg("kernel_dir"),
           nb::arg("tune"), nb::arg("from_env"))
      .def("summary", &PyDevice::summary)
      .def("queue_use", &PyDevice::queue_use)
      .def("reduce_buffer", &PyDevice::reduce_buffer, nb::arg("op"), nb::arg("type"),
           nb::arg("mem"), nb::arg("first"), nb::arg("n"), nb::arg("acc"))
      .def("reduce_into", &PyDevice::reduce_into, nb::arg("op"), nb::arg("type"), nb::arg("in"),
           nb::arg("first"), nb::arg("n"), nb::arg("acc"), nb::arg("out"),
           nb::arg("out_offset"))
      .def("scan_buffer", &PyDevice::scan_buffer, nb::arg("op"), nb::arg("type"), nb::arg("in"),
           nb::arg("first"), nb::arg("n"), nb::arg("out"), nb::arg("out_first"),
           nb::arg("exclusive"), nb::arg("flags").none(), nb::arg("acc"))
      .def("segments_buffer", &PyDevice::segments_buffer, nb::arg("name"), nb::arg("type"),
           nb::arg("mem"), nb::arg("n"), nb::arg("offsets"), nb::arg("shape"), nb::arg("axes"),
           nb::arg("by_axes"), nb::arg("keepdims"), nb::arg("acc"))
      .def("derived_buffers", &PyDevice::derived_buffers, nb::arg("op"), nb::arg("buffers"),
           nb::arg("n"), nb::arg("where"), nb::arg("ddof"))
      .def("expr_buffers", &PyDevice::expr_buffers, nb::arg("text"), nb::arg("buffers"),
           nb::arg("n"), nb::arg("where"))
      .def("segments_buffers", &PyDevice::segments_buffers, nb::arg("kind"), nb::arg("name"),
           nb::arg("text"), nb::arg("buffers"), nb::arg("n"), nb::arg("offsets"), nb::arg("shape"),
           nb::arg("axes"), nb::arg("by_axes"), nb::arg("keepdims"), nb::arg("where"),
           nb::arg("ddof"))
      .def("kernel_dir", &PyDevice::kernel_dir)
      .def("reduce", &PyDevice::reduce, nb::arg("op"), nb::arg("a").noconvert(), nb::arg("acc"),
           nb::arg("variant"))
      .def("scan", &PyDevice::scan, nb::arg("op"), nb::arg("a").noconvert(),
           nb::arg("out").noconvert(), nb::arg("exclusive"), nb::arg("flags").none(), nb::arg("acc"),
           nb::arg("variant"))
      .def("derived", &PyDevice::derived, nb::arg("op"), nb::arg("arrays"), nb::arg("where"),
           nb::arg("ddof"))
      .def("expr", &PyDevice::expr, nb::arg("text"), nb::arg("arrays"), nb::arg("where"))
      .def("segments", &PyDevice::segments, nb::arg("kind"), nb::arg("name"), nb::arg("text"),
           nb::arg("arrays"), nb::arg("offsets"), nb::arg("shape"), nb::arg("axes"),
           nb::arg("by_axes"), nb::arg("keepdims"), nb::arg("acc"), nb::arg("where"),
           nb::arg("ddof"));
}
