// npy.cpp: .npy I/O with a small Python-literal parser for the header dict.
// Sizes are checked against the file size before allocating, so a lying header cannot hurt.
#include "io/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <new>

#include "clreduce/error.hpp"
#include "io/files.hpp"
#include "io/text.hpp"

#include <unistd.h>

namespace clreduce {
namespace {

const char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::uint64_t kMaxHeaderLen = 1u << 20;  // far above anything a 1-D array needs
constexpr int kMaxDepth = 32;                      // nesting limit for tuples and lists

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(Errc::kInput, printable(path) + ": " + what);
}

// Text from the header, quoted for a message: control characters escaped, long text cut.
std::string quote(const std::string& text) { return "'" + printable(text, 60) + "'"; }

// A parsed Python literal; text is its source spelling.
struct PyValue {
  enum Kind { kStr, kBool, kInt, kNone, kTuple, kList } kind = kNone;
  std::string str;
  bool b = false;
  bool neg = false;
  std::uint64_t i = 0;
  std::vector<PyValue> items;
  std::string text;
};

// Parses the header: a dict of string keys to strings, ints, True/False/None, tuples or lists.
class Parser {
 public:
  Parser(const std::string& path, const std::string& s) : path_(path), s_(s) {}

  std::map<std::string, PyValue> dict() {
    std::map<std::string, PyValue> d;
    expect('{');
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      if (p_ >= s_.size() || (s_[p_] != '\'' && s_[p_] != '"')) bad("expected a quoted key");
      std::string key = quoted();
      expect(':');
      if (!d.emplace(key, value(0)).second) bad("duplicate key " + quote(key));
      skip_ws();
      if (eat(',')) continue;
      expect('}');
      break;
    }
    skip_ws();
    if (p_ != s_.size()) bad("unexpected text after the dict");
    return d;
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail(path_, "bad header: " + what + " at offset " + std::to_string(p_));
  }
  void skip_ws() {
    while (p_ < s_.size() && std::string(" \t\n\r").find(s_[p_]) != std::string::npos) ++p_;
  }
  bool eat(char c) {
    if (p_ >= s_.size() || s_[p_] != c) return false;
    ++p_;
    return true;
  }
  void expect(char c) {
    skip_ws();
    if (!eat(c)) bad(std::string("expected '") + c + "'");
  }
  std::string quoted() {
    const char q = s_[p_++];
    std::string out;
    for (;;) {
      if (p_ >= s_.size()) bad("unterminated string");
      char c = s_[p_++];
      if (c == q) return out;
      if (c == '\\' && p_ < s_.size()) c = s_[p_++];
      out += c;
    }
  }
  PyValue value(int depth) {
    if (depth > kMaxDepth) bad("nesting too deep");
    skip_ws();
    if (p_ >= s_.size()) bad("unexpected end");
    const std::size_t start = p_;
    const char c = s_[p_];
    PyValue v;
    if (c == '\'' || c == '"') {
      v.kind = PyValue::kStr;
      v.str = quoted();
    } else if (c == '(' || c == '[') {
      const char close = c == '(' ? ')' : ']';
      v.kind = c == '(' ? PyValue::kTuple : PyValue::kList;
      bool comma = false;
      ++p_;
      for (;;) {
        skip_ws();
        if (eat(close)) break;
        v.items.push_back(value(depth + 1));
        skip_ws();
        if (eat(',')) {
          comma = true;
          continue;
        }
        expect(close);
        break;
      }
      if (c == '(' && v.items.size() == 1 && !comma) return v.items[0];  // "(5)" is just 5
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::kInt;
      v.neg = eat('-');
      if (p_ >= s_.size() || s_[p_] < '0' || s_[p_] > '9') bad("expected a digit");
      constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
      while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
        const auto digit = static_cast<std::uint64_t>(s_[p_++] - '0');
        if (v.i > (kMax - digit) / 10) bad("integer too large");
        v.i = v.i * 10 + digit;
      }
      if (!eat('L')) eat('l');  // Python 2 long suffix
    } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
      while (p_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[p_]))) ++p_;
      const std::string name = s_.substr(start, p_ - start);
      if (name != "True" && name != "False" && name != "None") bad("unknown name " + quote(name));
      v.kind = name == "None" ? PyValue::kNone : PyValue::kBool;
      v.b = name == "True";
    } else {
      bad("unexpected character (byte " + std::to_string(static_cast<unsigned char>(c)) + ")");
    }
    v.text = s_.substr(start, p_ - start);
    return v;
  }

  const std::string& path_;
  const std::string& s_;
  std::size_t p_ = 0;
};

// What a header says about the array.
struct Header {
  PyValue descr;
  bool fortran = false;
  std::vector<std::uint64_t> shape;
};

// A simple dtype string such as '<i4': kind in "iufb", size 1/2/4/8, big-endian flag.
struct Descr {
  char kind = 0;
  std::size_t size = 0;
  bool big = false;
};

// Parses a descr string; returns false for anything that is not a simple scalar type.
bool parse_descr(const std::string& s, Descr& d) {
  std::size_t k = 0;
  char order = '=';
  if (!s.empty() && std::string("<>|=").find(s[0]) != std::string::npos) order = s[k++];
  if (s.size() != k + 2 || std::string("iufb").find(s[k]) == std::string::npos) return false;
  d.kind = s[k];
  switch (s[k + 1]) {
    case '1': d.size = 1; break;
    case '2': d.size = 2; break;
    case '4': d.size = 4; break;
    case '8': d.size = 8; break;
    default: return false;
  }
  if (order == '|' && d.size > 1) return false;
  if (d.kind == 'b' && d.size != 1) return false;
  d.big = order == '>' && d.size > 1;
  return true;
}

// Checks the preamble from its first `got` bytes (at most 12: fewer when the input is shorter);
// sets prefix to its length (10 for version 1.0, else 12) and hlen to the header's.
void parse_preamble(const std::string& path, const unsigned char* pre, std::uint64_t got,
                    std::uint64_t& prefix, std::uint64_t& hlen) {
  if (got < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0)
    fail(path, "not a .npy file (bad magic)");
  if (got < 8) fail(path, "truncated: no format version");
  if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0)
    fail(path,
         "unsupported format version " + std::to_string(pre[6]) + "." + std::to_string(pre[7]));
  prefix = pre[6] == 1 ? 10 : 12;
  if (got < prefix) fail(path, "truncated: no header length");
  hlen = pre[8] | std::uint64_t{pre[9]} << 8;
  if (prefix == 12) hlen |= std::uint64_t{pre[10]} << 16 | std::uint64_t{pre[11]} << 24;
}

// Parses the header dict.
Header parse_header(const std::string& path, const std::string& text) {
  std::map<std::string, PyValue> d = Parser(path, text).dict();
  for (const auto& kv : d)
    if (kv.first != "descr" && kv.first != "fortran_order" && kv.first != "shape")
      fail(path, "bad header: unexpected key " + quote(kv.first));
  for (const char* key : {"descr", "fortran_order", "shape"})
    if (!d.count(key)) fail(path, std::string("bad header: missing key '") + key + "'");
  Header h;
  h.descr = d["descr"];
  const PyValue& fo = d["fortran_order"];
  if (fo.kind != PyValue::kBool) fail(path, "bad header: 'fortran_order' is not True or False");
  h.fortran = fo.b;
  const PyValue& sh = d["shape"];
  if (sh.kind != PyValue::kTuple) fail(path, "bad header: 'shape' is not a tuple");
  for (const PyValue& x : sh.items) {
    if (x.kind != PyValue::kInt || (x.neg && x.i != 0))
      fail(path, "bad header: bad dimension " + quote(x.text) + " in 'shape'");
    h.shape.push_back(x.i);
  }
  return h;
}

// Reads the preamble and header dict; sets data_at to where the data starts and data_bytes to
// how much follows.
Header read_header(const InputFile& in, const std::string& path, std::uint64_t& data_at,
                   std::uint64_t& data_bytes) {
  const std::uint64_t file_size = in.size();
  unsigned char pre[12] = {};
  in.read_at(0, pre, std::min<std::uint64_t>(file_size, sizeof pre));
  std::uint64_t prefix = 0, hlen = 0;
  parse_preamble(path, pre, std::min<std::uint64_t>(file_size, sizeof pre), prefix, hlen);
  if (hlen > file_size - prefix)
    fail(path, "bad header: header length " + std::to_string(hlen) +
                   " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  if (hlen > kMaxHeaderLen)
    fail(path, "bad header: header length " + std::to_string(hlen) + " is too large");
  std::string text(static_cast<std::size_t>(hlen), '\0');
  in.read_at(prefix, &text[0], hlen);
  data_at = prefix + hlen;
  data_bytes = file_size - prefix - hlen;
  return parse_header(path, text);
}

// The message for a dtype outside the supported set.
[[noreturn]] void unsupported_dtype(const std::string& path, const PyValue& descr,
                                    const char* supported) {
  const std::string shown =
      descr.kind == PyValue::kStr ? quote(descr.str) : printable(descr.text, 60);
  fail(path, "unsupported dtype " + shown + " (supported: " + supported + ")");
}

// Arrays of this many bytes or more are mapped, not read.
constexpr std::uint64_t kMapAtLeast = std::uint64_t{1} << 20;

// A shape as NumPy prints it: "(3, 4)", "(5,)", "()".
std::string shape_words(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Checks order and rank (1-D, or with nd any rank up to kMaxNpyDims); returns the number of
// elements (the dimensions' product, refused past 2^64).
std::uint64_t check_shape(const std::string& path, const Header& h, bool nd = false) {
  if (h.fortran) fail(path, "Fortran order is not supported");
  if (!nd && h.shape.size() != 1) fail(path, "shape " + shape_words(h.shape) + " is not 1-D");
  if (nd && h.shape.size() > kMaxNpyDims)
    fail(path, "shape " + shape_words(h.shape) + " has " + std::to_string(h.shape.size()) +
                   " dimensions (0 to " + std::to_string(kMaxNpyDims) + " are read)");
  std::uint64_t n = 1;
  for (std::uint64_t d : h.shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d)
      fail(path, "shape " + shape_words(h.shape) + " holds more than 2^64 elements");
    n *= d;
  }
  return n;
}

// The message for data of data_bytes after a header that says n elements of `size` bytes.
[[noreturn]] void wrong_length(const std::string& path, std::uint64_t n, std::size_t size,
                               const std::string& data_bytes, bool trailing) {
  const bool fits = n <= std::numeric_limits<std::uint64_t>::max() / size;
  const std::string want = fits ? std::to_string(n * size) + " bytes" : "more than 2^64 bytes";
  fail(path, std::string(trailing ? "trailing data" : "truncated") + ": header says " +
                 std::to_string(n) + " elements (" + want + ") but " + data_bytes +
                 " of data follow");
}

// Checks the shape (check_shape()), and that the data holds exactly n elements of `size` bytes
// (rejecting short or long data); sets n_out to n.
void check_data(const std::string& path, const Header& h, std::size_t size,
                std::uint64_t data_bytes, std::size_t& n_out, bool nd = false) {
  const std::uint64_t n = check_shape(path, h, nd);
  const bool fits = n <= std::numeric_limits<std::uint64_t>::max() / size;
  if (!fits || n * size != data_bytes)
    wrong_length(path, n, size, std::to_string(data_bytes) + " bytes",
                 fits && n * size < data_bytes);
  if (data_bytes > std::numeric_limits<std::size_t>::max())
    fail(path, "too large for this platform");
  n_out = static_cast<std::size_t>(n);
}

// Checks the data as check_data does, then reads it (or maps it, when it is large and map is
// true: the pages are read as they are used and memory is not spent twice).
void read_data(const InputFile& in, const std::string& path, const Header& h, std::size_t size,
               std::uint64_t data_at, std::uint64_t data_bytes, std::size_t& n_out, Bytes& bytes,
               bool map, bool nd = false) {
  check_data(path, h, size, data_bytes, n_out, nd);
  if (map && data_bytes >= kMapAtLeast && in.map(data_at, data_bytes, bytes)) return;
  bytes.allocate_uninit(static_cast<std::size_t>(data_bytes));
  if (data_bytes) in.read_at(data_at, bytes.data(), data_bytes);
}

// The little-endian descr of a dtype; its last character is the element size.
std::string descr_of(DType t) {
  switch (t) {
    case DType::kInt32: return "<i4";
    case DType::kUInt32: return "<u4";
    case DType::kInt64: return "<i8";
    case DType::kUInt64: return "<u8";
    case DType::kFloat: return "<f4";
    case DType::kDouble: return "<f8";
    case DType::kFloat16: return "<f2";
    case DType::kBool: return "|b1";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt16: return "<i2";
    case DType::kUInt16: return "<u2";
  }
  return "<?0";
}

// The element type of a header's descr, for the types read_npy() reads.
DType array_dtype(const std::string& path, const Header& h, Descr& d) {
  if (h.descr.kind != PyValue::kStr || !parse_descr(h.descr.str, d) ||
      (d.kind == 'f' && d.size == 1))
    unsupported_dtype(path, h.descr,
                      "bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, "
                      "float32, float64");
  if (d.kind == 'b') return DType::kBool;
  const DType ints[2][4] = {{DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64},
                            {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64}};
  const int w = d.size == 1 ? 0 : d.size == 2 ? 1 : d.size == 4 ? 2 : 3;
  if (d.kind == 'i' || d.kind == 'u') return ints[d.kind == 'u'][w];
  return d.size == 2 ? DType::kFloat16 : d.size == 4 ? DType::kFloat : DType::kDouble;
}

void swap_bytes(Bytes& bytes, std::size_t size) {
  for (std::size_t k = 0; k < bytes.size(); k += size) std::reverse(&bytes[k], &bytes[k] + size);
}

}  // namespace

HostArray read_npy(const std::string& path) { return read_npy_nd(path, nullptr); }

HostArray read_npy_nd(const std::string& path, std::vector<std::uint64_t>* shape) {
  const InputFile in(path, Errc::kInput);
  std::uint64_t data_at = 0, data_bytes = 0;
  const Header h = read_header(in, path, data_at, data_bytes);
  Descr d;
  HostArray a;
  a.type = array_dtype(path, h, d);
  // Little-endian data is used where it lies in the file; big-endian is read and swapped.
  read_data(in, path, h, d.size, data_at, data_bytes, a.n, a.bytes, !d.big, shape != nullptr);
  if (d.big) swap_bytes(a.bytes, d.size);
  if (shape) *shape = h.shape;
  return a;
}

namespace {

// Reads up to n bytes from fd, retrying interrupted and short reads; returns how many it read
// (fewer only at the end of the input). A read error throws.
std::uint64_t read_fully(int fd, const std::string& name, void* dst, std::uint64_t n) {
  auto* p = static_cast<unsigned char*>(dst);
  std::uint64_t got = 0;
  while (got < n) {
    const std::size_t chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(n - got, std::uint64_t{1} << 30));
    const ssize_t r = ::read(fd, p + got, chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(name, std::string("read error: ") + std::strerror(errno));
    if (r == 0) break;
    got += static_cast<std::uint64_t>(r);
  }
  return got;
}

}  // namespace

HostArray read_npy_stream(int fd, const std::string& name) {
  return read_npy_stream_nd(fd, name, nullptr);
}

HostArray read_npy_stream_nd(int fd, const std::string& name, std::vector<std::uint64_t>* shape) {
  // The preamble's longest form; a version 1.0 header's first two bytes (or a tiny header and the
  // data's first bytes) come with it. Reads stop for good at the input's end (`ended`).
  unsigned char pre[12] = {};
  const std::uint64_t got = read_fully(fd, name, pre, sizeof pre);
  if (got == 0) fail(name, "empty input");
  bool ended = got < sizeof pre;
  std::uint64_t prefix = 0, hlen = 0;
  parse_preamble(name, pre, got, prefix, hlen);
  if (hlen > kMaxHeaderLen)
    fail(name, "bad header: header length " + std::to_string(hlen) + " is too large");
  const std::uint64_t early = std::min<std::uint64_t>(got - prefix, hlen);
  std::string text(reinterpret_cast<const char*>(pre) + prefix, static_cast<std::size_t>(early));
  text.resize(static_cast<std::size_t>(hlen));
  std::uint64_t have = early;
  if (!ended && have < hlen) {
    have += read_fully(fd, name, &text[have], hlen - have);
    ended = have < hlen;
  }
  if (have < hlen)
    fail(name, "bad header: header length " + std::to_string(hlen) +
                   " runs past the end of the input (" + std::to_string(prefix + have) + " bytes)");
  const Header h = parse_header(name, text);
  Descr d;
  HostArray a;
  a.type = array_dtype(name, h, d);
  const std::uint64_t n = check_shape(name, h, shape != nullptr);
  if (shape) *shape = h.shape;
  if (n > std::numeric_limits<std::size_t>::max() / d.size)
    wrong_length(name, n, d.size, "fewer bytes", false);
  a.n = static_cast<std::size_t>(n);
  const std::uint64_t data_bytes = n * d.size;
  // Data bytes that came with the preamble first, then the rest: no more than declared.
  const std::uint64_t spare = got - prefix - early;
  if (spare > data_bytes) wrong_length(name, n, d.size, std::to_string(spare) + " bytes", true);
  try {
    a.bytes.allocate_uninit(static_cast<std::size_t>(data_bytes));
  } catch (const std::bad_alloc&) {
    throw Error(Errc::kUnsupported, printable(name) + ": header says " + std::to_string(n) +
                                        " elements (" + std::to_string(data_bytes) +
                                        " bytes): out of host memory");
  }
  if (spare) std::memcpy(a.bytes.data(), pre + prefix + early, static_cast<std::size_t>(spare));
  std::uint64_t data = spare;
  if (!ended && data < data_bytes) {
    data += read_fully(fd, name, a.bytes.data() + data, data_bytes - data);
    ended = data < data_bytes;
  }
  if (data < data_bytes) wrong_length(name, n, d.size, std::to_string(data) + " bytes", false);
  // One byte more tells whether the input ends where the header says, as a file's size does.
  unsigned char extra = 0;
  if (!ended && read_fully(fd, name, &extra, 1) == 1)
    wrong_length(name, n, d.size, "more bytes", true);
  if (d.big) swap_bytes(a.bytes, d.size);
  return a;
}

namespace {

// The header of an open .npy, checked as read_npy() checks it; d gets the element description.
NpyInfo info_of(const InputFile& in, const std::string& path, Descr& d) {
  std::uint64_t data_at = 0, data_bytes = 0;
  const Header h = read_header(in, path, data_at, data_bytes);
  NpyInfo info;
  info.type = array_dtype(path, h, d);
  std::size_t n = 0;
  check_data(path, h, d.size, data_bytes, n);
  info.n = n;
  info.data_at = data_at;
  info.big_endian = d.big;
  return info;
}

}  // namespace

NpyInfo npy_info(const std::string& path) {
  const InputFile in(path, Errc::kInput);
  Descr d;
  return info_of(in, path, d);
}

HostArray read_npy_slice(const std::string& path, std::uint64_t first, std::uint64_t count) {
  const InputFile in(path, Errc::kInput);
  Descr d;
  const NpyInfo info = info_of(in, path, d);
  const std::uint64_t n = info.n, data_at = info.data_at;
  HostArray a;
  a.type = info.type;
  if (first > n || count > n - first)
    fail(path, "elements [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                   std::to_string(count) + ") run past the end of its " + std::to_string(n) +
                   " elements");
  a.n = static_cast<std::size_t>(count);
  const std::uint64_t at = data_at + first * d.size, bytes = count * d.size;
  if (!d.big && bytes >= kMapAtLeast && in.map(at, bytes, a.bytes)) return a;
  a.bytes.allocate_uninit(static_cast<std::size_t>(bytes));
  if (bytes) in.read_at(at, a.bytes.data(), bytes);
  if (d.big) swap_bytes(a.bytes, d.size);
  return a;
}

std::vector<std::uint8_t> read_npy_flags(const std::string& path) {
  const InputFile in(path, Errc::kInput);
  std::uint64_t data_at = 0, data_bytes = 0;
  const Header h = read_header(in, path, data_at, data_bytes);
  Descr d;
  if (h.descr.kind != PyValue::kStr || !parse_descr(h.descr.str, d) || d.kind == 'f')
    unsupported_dtype(path, h.descr,
                      "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64");
  std::size_t n = 0;
  Bytes bytes;
  read_data(in, path, h, d.size, data_at, data_bytes, n, bytes, false);
  // Nonzero does not depend on byte order; compacting in place is safe: element i starts at i*size
  // >= i.
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char any = 0;
    for (std::size_t k = 0; k < d.size; ++k) any |= bytes[i * d.size + k];
    bytes[i] = any != 0;
  }
  return std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + n);
}

std::string npy_header(DType t, std::uint64_t n) {
  return npy_header(t, std::vector<std::uint64_t>{n});
}

std::string npy_header(DType t, const std::vector<std::uint64_t>& shape) {
  std::string header = "{'descr': '" + descr_of(t) +
                       "', 'fortran_order': False, 'shape': " + shape_words(shape) + ", }";
  // Pad with spaces and a newline so the data starts at a multiple of 64; v2.0 when v1.0's 16 bits
  // are short.
  std::size_t prefix = 10;
  const auto pad = [&] { return (64 - (prefix + header.size() + 1) % 64) % 64; };
  if (header.size() + pad() + 1 > 0xffff) prefix = 12;
  header.append(pad(), ' ') += '\n';
  std::string pre(kMagic, kMagicLen);
  pre += static_cast<char>(prefix == 10 ? 1 : 2);
  pre += '\0';
  for (std::size_t k = 0; k < prefix - 8; ++k)
    pre += static_cast<char>((header.size() >> (8 * k)) & 0xff);
  return pre + header;
}

void write_npy(const std::string& path, const HostArray& a) {
  write_npy(path, a, std::vector<std::uint64_t>{a.n});
}

void write_npy(const std::string& path, const HostArray& a,
               const std::vector<std::uint64_t>& shape) {
  const std::size_t size = dtype_size(a.type);
  if (size == 0 || a.n > a.bytes.size() / size || a.n * size != a.bytes.size())
    fail(path, "internal error: array of " + std::to_string(a.n) + " elements holds " +
                   std::to_string(a.bytes.size()) + " bytes");
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  if (n != a.n)
    fail(path, "internal error: shape " + shape_words(shape) + " for " + std::to_string(a.n) +
                   " elements");
  const std::string header = npy_header(a.type, shape);
  write_file_atomically(
      path,
      {header, std::string_view(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size())});
}

}  // namespace clreduce
