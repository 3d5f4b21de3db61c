// warmscope's C++ agent: the Python agent's loop (core/child/agent.py) for what libtorch runs
// without Python, TorchScript archives (torch::jit::load) and AOTInductor packages
// (torch::inductor::AOTIModelPackageLoader).
//
// It speaks the same protocol on the same descriptors (core/child/protocol.py), so the parent
// side is shared: the run's config is the first line of stdin; protocol lines go to a private
// duplicate of the original stdout, fd 1 then points at fd 2; marker lines carrying the run's
// secret go to fd 2 among libtorch's own output (PYTORCH_JIT_LOG_LEVEL dumps, TorchScript
// prints), after each iteration that wrote there, so the parent pins every line to its
// iteration; iterations also go to the shared ring (core/child/ring.py) a crash cannot take.
// It exits when its parent goes away (PR_SET_PDEATHSIG, EOF on stdin) and stops at the end of
// the iteration in progress on SIGINT/SIGTERM.
//
// Built on demand against the torch of the interpreter that runs the model, by
// core/run/cpp_build.py, which defines WARMSCOPE_TORCH_VERSION, WARMSCOPE_TORCH_GIT and
// WARMSCOPE_TORCH_CUDA from that torch's version.py.

#include <torch/cuda.h>
#include <torch/script.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/codegen/fuser/interface.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/runtime/print_handler.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/python_print.h>
#if __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define WARMSCOPE_HAVE_AOTI 1
#endif

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#ifndef WARMSCOPE_TORCH_VERSION
#define WARMSCOPE_TORCH_VERSION TORCH_VERSION
#endif
#ifndef WARMSCOPE_TORCH_GIT
#define WARMSCOPE_TORCH_GIT ""
#endif
#ifndef WARMSCOPE_TORCH_CUDA
#define WARMSCOPE_TORCH_CUDA ""
#endif

namespace {

// Kept equal to core/child/protocol.py, outcome.py, channel.py and ring.py.
constexpr int kProtocolVersion = 2;
constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitStopped = 130,
              kExitParentGone = 70;
constexpr int64_t kFlushEveryNs = 50'000'000;  // a batch at most every 50 ms...
constexpr size_t kFlushMaxIters = 4096;        // ... or every 4096 iterations
constexpr int64_t kBusyAfterNs = 500'000'000;  // an iteration this long is reported live
constexpr int kIdleProbeCalls = 3;
constexpr int kReplays = 3;
constexpr int kMaxOpening = 32;
const char* const kMarker = "\x1e@ws ";

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of Python's perf_counter_ns and monotonic
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A bad target, input or setting, named in one line: exit 2, as the Python agent's UsageError.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// -- JSON: the config in, protocol lines out ----------------------------------------------

struct Json {
  enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
  bool b = false;
  double num = 0;
  bool whole = false;  // a number written as digits alone that fits 64 bits: `bits` holds it
  uint64_t bits = 0;
  std::string s;
  std::vector<Json> arr;
  std::vector<std::pair<std::string, Json>> obj;

  const Json& operator[](const std::string& key) const {
    static const Json null;
    for (const auto& [k, v] : obj)
      if (k == key) return v;
    return null;
  }
  const Json& operator[](size_t i) const {
    static const Json null;
    return i < arr.size() ? arr[i] : null;
  }
  bool null() const { return kind == Null; }
  bool truthy() const {
    switch (kind) {
      case Bool: return b;
      case Num: return num != 0;
      case Str: return !s.empty();
      case Arr: return !arr.empty();
      case Obj: return !obj.empty();
      default: return false;
    }
  }
  std::string str(const std::string& otherwise = "") const { return kind == Str ? s : otherwise; }
  int64_t integer(int64_t otherwise = 0) const { return kind == Num ? int64_t(num) : otherwise; }
  double number(double otherwise = 0) const { return kind == Num ? num : otherwise; }
  // A non-negative integer to its last digit (a seed above 2^53 loses none through a double).
  uint64_t unsigned_integer(uint64_t otherwise = 0) const {
    return kind != Num ? otherwise : whole ? bits : uint64_t(int64_t(num));
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : t_(text) {}
  Json parse() {
    Json value = any();
    space();
    if (i_ != t_.size()) fail("text after the value");
    return value;
  }

 private:
  const std::string& t_;
  size_t i_ = 0;

  [[noreturn]] void fail(const char* what) {
    throw UsageError(std::string("the agent's config is not valid JSON: ") + what);
  }
  void space() {
    while (i_ < t_.size() && std::strchr(" \t\r\n", t_[i_])) ++i_;
  }
  bool take(const char* word) {
    size_t n = std::strlen(word);
    if (t_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }
  Json any() {
    space();
    if (i_ >= t_.size()) fail("it ends early");
    Json v;
    char c = t_[i_];
    if (c == '{') {
      v.kind = Json::Obj;
      ++i_;
      space();
      if (i_ < t_.size() && t_[i_] == '}') return ++i_, v;
      for (;;) {
        space();
        if (i_ >= t_.size() || t_[i_] != '"') fail("a key is not a string");
        std::string key = string();
        space();
        if (i_ >= t_.size() || t_[i_++] != ':') fail("no ':' after a key");
        v.obj.emplace_back(std::move(key), any());
        space();
        if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
        if (i_ < t_.size() && t_[i_] == '}') return ++i_, v;
        fail("an object is not closed");
      }
    }
    if (c == '[') {
      v.kind = Json::Arr;
      ++i_;
      space();
      if (i_ < t_.size() && t_[i_] == ']') return ++i_, v;
      for (;;) {
        v.arr.push_back(any());
        space();
        if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
        if (i_ < t_.size() && t_[i_] == ']') return ++i_, v;
        fail("an array is not closed");
      }
    }
    if (c == '"') {
      v.kind = Json::Str;
      v.s = string();
      return v;
    }
    if (take("true")) { v.kind = Json::Bool; v.b = true; return v; }
    if (take("false")) { v.kind = Json::Bool; return v; }
    if (take("null")) return v;
    size_t start = i_;
    while (i_ < t_.size() && std::strchr("+-0123456789.eE", t_[i_])) ++i_;
    if (start == i_) fail("an unexpected character");
    v.kind = Json::Num;
    std::string text = t_.substr(start, i_ - start);
    v.num = std::strtod(text.c_str(), nullptr);
    if (text.find_first_not_of("0123456789") == std::string::npos) {
      errno = 0;
      v.bits = std::strtoull(text.c_str(), nullptr, 10);
      v.whole = errno == 0;
    }
    return v;
  }
  void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    if (i_ + 4 > t_.size()) fail("a short \\u escape");
    uint32_t cp = std::stoul(t_.substr(i_, 4), nullptr, 16);
    i_ += 4;
    return cp;
  }
  std::string string() {
    std::string out;
    ++i_;  // the opening quote
    while (i_ < t_.size() && t_[i_] != '"') {
      char c = t_[i_++];
      if (c != '\\') { out += c; continue; }
      if (i_ >= t_.size()) break;
      char e = t_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && take("\\u")) {
            uint32_t low = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default: out += e;
      }
    }
    if (i_ >= t_.size()) fail("a string is not closed");
    ++i_;
    return out;
  }
};

// A JSON string: ASCII only, anything else escaped, bytes that are not UTF-8 as U+FFFD (the
// parent decodes each line as JSON, which must be UTF-8).
std::string quote(const std::string& text) {
  std::string out = "\"";
  char buf[16];
  auto escape = [&](uint32_t cp) {
    if (cp >= 0x10000) {
      cp -= 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    }
    out += buf;
  };
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c < 0x80) {
      if (c == '"') out += "\\\"";
      else if (c == '\\') out += "\\\\";
      else if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c < 0x20 || c == 0x7F) escape(c);
      else out += char(c);
      ++i;
      continue;
    }
    int len = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    uint32_t cp = len == 4 ? c & 0x07 : len == 3 ? c & 0x0F : c & 0x1F;
    bool ok = len > 0 && i + len <= n && !(len == 3 && c >= 0xF0);
    for (int k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) ||
               (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))))
      ok = false;
    if (!ok) {
      escape(0xFFFD);
      ++i;
      continue;
    }
    escape(cp);
    i += len;
  }
  return out + "\"";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", value);
  return buf;
}

// One protocol message, written as it is built: {"t":"...", ...}\n.
class Message {
 public:
  explicit Message(const char* type) { out_ = std::string("{\"t\":") + quote(type); }
  Message& raw(const char* key, const std::string& json) {
    out_ += ',';
    out_ += quote(key);
    out_ += ':';
    out_ += json;
    return *this;
  }
  Message& str(const char* key, const std::string& v) { return raw(key, quote(v)); }
  Message& num(const char* key, double v) { return raw(key, number(v)); }
  Message& integer(const char* key, int64_t v) { return raw(key, std::to_string(v)); }
  Message& boolean(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  Message& null(const char* key) { return raw(key, "null"); }
  std::string line() const { return out_ + "}\n"; }

 private:
  std::string out_;
};

std::string json_list(const std::vector<std::string>& items, bool quoted = true) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += quoted ? quote(items[i]) : items[i];
  }
  return out + "]";
}

// An iteration column: base64 of little-endian int64 (protocol.encode_iters).
std::string column(const std::vector<int64_t>& values) {
  static const char* const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * 8, '\0');
  for (size_t k = 0; k < values.size(); ++k) {
    auto v = uint64_t(values[k]);
    for (int j = 0; j < 8; ++j) bytes[k * 8 + j] = char((v >> (8 * j)) & 0xFF);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= uint32_t(uint8_t(bytes[i + 2]));
    out += abc[(n >> 18) & 63];
    out += abc[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? abc[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? abc[n & 63] : '=';
  }
  return out;
}

// -- the channel, the markers, what the agent is doing ---------------------------------------

struct State {
  std::atomic<int64_t> iteration{-1};  // -1: not in an iteration
  std::atomic<int64_t> iteration_start_ns{0};
  std::atomic<int64_t> marked{-1};  // the iteration of the last "it" marker
  std::mutex phase_lock;
  std::string phase = "start";
  int marker_fd = 2;
  std::string marker_prefix = kMarker;
  int64_t setup_end_ns = 0;
  int64_t first_call_ns = 0;
  bool watching = false;
};
State state;
volatile sig_atomic_t stop_asked = 0;

std::string current_phase() {
  std::lock_guard<std::mutex> guard(state.phase_lock);
  return state.phase;
}

void set_phase(const std::string& name) {
  std::lock_guard<std::mutex> guard(state.phase_lock);
  state.phase = name;
}

void write_all(int fd, const char* data, size_t size, bool parent_gone_on_error) {
  while (size) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (parent_gone_on_error && errno == EPIPE) _exit(kExitParentGone);
      return;
    }
    data += n;
    size -= size_t(n);
  }
}

void marker(const std::string& kind, const std::string& value) {
  if (kind == "it") state.marked = state.iteration.load();
  std::string line = state.marker_prefix + kind + " " + value + "\n";
  write_all(state.marker_fd, line.data(), line.size(), false);
}

class Channel {
 public:
  explicit Channel(int fd) : fd_(fd), last_flush_ns_(now_ns()) {}

  void send(const std::string& line, bool now = false) {
    std::lock_guard<std::mutex> guard(lock_);
    pending_ += line;
    if (now) flush_locked();
  }
  void flush(const std::string& extra = "") {
    std::lock_guard<std::mutex> guard(lock_);
    pending_ += extra;
    flush_locked();
  }
  bool has_pending() {
    std::lock_guard<std::mutex> guard(lock_);
    return !pending_.empty();
  }
  int64_t last_flush_ns() const { return last_flush_ns_; }

 private:
  void flush_locked() {
    last_flush_ns_ = now_ns();
    if (pending_.empty()) return;
    write_all(fd_, pending_.data(), pending_.size(), true);  // no reader: nobody to report to
    pending_.clear();
  }
  int fd_;
  std::mutex lock_;
  std::string pending_;
  std::atomic<int64_t> last_flush_ns_;
};

Message event(const std::string& kind, const std::string& title, const std::string& text = "") {
  Message m("event");
  m.str("kind", kind).str("title", title).str("text", text);
  int64_t i = state.iteration;
  if (i >= 0) m.integer("iteration", i);
  else m.str("phase", current_phase());
  return m;
}

// Bytes this process has read from storage and its major page faults (io_counters.py).
std::pair<int64_t, int64_t> disk_counters() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return {int64_t(usage.ru_inblock) * 512, int64_t(usage.ru_majflt)};
}

// Times a setup phase and tells the parent as it starts and ends (channel.Phases), with what
// it read from disk where it read any.
class Phase {
 public:
  Phase(Channel& channel, const std::string& name) : channel_(channel), name_(name) {
    set_phase(name);
    std::cerr.flush();
    marker("phase", name);
    channel_.send(Message("phase_start").str("name", name).line(), true);
    disk_ = disk_counters();
    start_ = now_ns();
  }
  ~Phase() {
    state.setup_end_ns = now_ns();
    double ms = double(state.setup_end_ns - start_) / 1e6;
    auto disk = disk_counters();
    Message m("phase");
    m.str("name", name_).num("ms", ms);
    if (disk.first != disk_.first || disk.second != disk_.second)
      m.integer("read_bytes", disk.first - disk_.first).integer("majflt", disk.second - disk_.second);
    channel_.send(m.line(), true);
  }

 private:
  Channel& channel_;
  std::string name_;
  int64_t start_ = 0;
  std::pair<int64_t, int64_t> disk_{0, 0};
};

// -- knowing when fd 2 was written to (channel.watch_stderr, in C++) ---------------------------

bool took_sigio() {
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, SIGIO);
  timespec zero{0, 0};
  return sigtimedwait(&only, nullptr, &zero) >= 0;
}
bool always() { return true; }
bool never() { return false; }
bool (*stderr_written)() = always;

void on_io(int) {}

bool arm(int fd, bool on) {
  f_owner_ex owner{F_OWNER_TID, pid_t(syscall(SYS_gettid))};
  if (fcntl(fd, F_SETOWN_EX, &owner) < 0) return false;
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, on ? flags | O_ASYNC : flags & ~O_ASYNC) == 0;
}

// A SIGIO to this (the main) thread on every write into the stderr pipe, never delivered (the
// signal is blocked) but left pending for the loop to take with one system call: an iteration
// that wrote nothing writes no marker and wakes nobody. Checked on a private pipe first.
// Called before any other thread exists, so every thread libtorch starts keeps SIGIO blocked.
bool watch_stderr(int fd) {
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  struct sigaction sa{};
  sa.sa_handler = on_io;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGIO, &sa, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, SIGIO);
  pthread_sigmask(SIG_BLOCK, &only, nullptr);
  took_sigio();  // nothing stale
  int p[2];
  if (pipe(p) != 0) return false;
  bool seen = arm(p[0], true);
  for (int k = 0; seen && k < 2; ++k) {
    (void)!::write(p[1], "x", 1);
    seen = took_sigio();
  }
  seen = seen && !took_sigio();
  close(p[0]);
  close(p[1]);
  if (!seen) {
    pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
    return false;
  }
  std::string self = "/proc/self/fd/" + std::to_string(fd);
  int watch = open(self.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (watch < 0 || !arm(watch, true)) {
    if (watch >= 0) close(watch);
    pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
    return false;
  }
  stderr_written = took_sigio;
  return true;
}

// TorchScript's print(): the iteration marked before its first line, so prints are pinned
// exactly even with no log capture on (channel.MarkedStream).
void marked_print(const std::string& text) {
  int64_t i = state.iteration;
  if (i >= 0 && state.marked != i) marker("it", std::to_string(i));
  write_all(1, text.data(), text.size(), false);
}

// libtorch's warnings (TORCH_WARN) as events of their iteration, as the Python agent's
// warnings.showwarning hook sends them.
class WarningEvents : public c10::WarningHandler {
 public:
  explicit WarningEvents(Channel& channel) : channel_(channel) {}
  void process(const c10::Warning& warning) override {
    const char* category =
        std::holds_alternative<c10::Warning::DeprecationWarning>(warning.type())
            ? "DeprecationWarning"
            : "UserWarning";
    std::string msg = warning.msg();
    std::string first = msg.substr(0, msg.find('\n'));
    std::string title = (std::string(category) + ": " + first).substr(0, 300);
    const auto& where = warning.source_location();
    std::string text = std::string(where.file ? where.file : "?") + ":" +
                       std::to_string(where.line) + ": " + category + ": " + msg;
    channel_.send(event("warning", title, text).line());
  }

 private:
  Channel& channel_;
};

// -- process plumbing ---------------------------------------------------------------------

std::string read_config() {
  std::string data;
  char buf[65536];
  while (data.empty() || data.back() != '\n') {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, size_t(n));
  }
  return data.empty() ? "{}" : data;
}

int take_protocol_fd() {
  int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  dup2(2, 1);
  return fd;
}

void die_with_parent(int64_t parent_pid) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (parent_pid && getppid() != pid_t(parent_pid)) _exit(kExitParentGone);
  std::thread([] {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      _exit(kExitParentGone);
    }
  }).detach();
}

void ask_stop(int) { stop_asked = 1; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a fatal signal";
  }
}

// Python's faulthandler, briefly: which signal, in which iteration, then the default action.
void on_fatal(int sig) {
  char line[160];
  int64_t i = state.iteration;
  int n = i >= 0 ? std::snprintf(line, sizeof line,
                                 "Fatal error: %s in warmscope's C++ agent, iteration %lld\n",
                                 signal_name(sig), static_cast<long long>(i))
                 : std::snprintf(line, sizeof line, "Fatal error: %s in warmscope's C++ agent\n",
                                 signal_name(sig));
  if (n > 0) (void)!::write(state.marker_fd, line, size_t(n));
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_signals() {
  struct sigaction sa{};
  sa.sa_handler = ask_stop;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a write to a closed pipe fails with EPIPE instead
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    struct sigaction fatal{};
    fatal.sa_handler = on_fatal;
    fatal.sa_flags = SA_RESETHAND;
    sigemptyset(&fatal.sa_mask);
    sigaction(sig, &fatal, nullptr);
  }
}

struct Stopped {};  // a stop asked for between setup phases

void check_stop() {
  if (stop_asked) throw Stopped{};
}

void start_flusher(Channel& channel) {
  std::thread([&channel] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      int64_t now = now_ns();
      int64_t i = state.iteration, started = state.iteration_start_ns;
      if (i >= 0 && started && now - started > kBusyAfterNs) {
        channel.send(Message("busy")
                         .integer("iteration", i)
                         .num("ms", double(now - started) / 1e6)
                         .str("activity", "")
                         .line());
      }
      if (now - channel.last_flush_ns() > kFlushEveryNs * 2 && channel.has_pending())
        channel.flush();
    }
  }).detach();
}

// -- Python's random.Random, so that --schedule random serves the same shapes ----------------

class PyRandom {
 public:
  explicit PyRandom(uint64_t seed) {
    // random.seed(int): init_by_array over the seed's 32-bit words, least significant first.
    std::vector<uint32_t> key;
    do {
      key.push_back(uint32_t(seed & 0xFFFFFFFFu));
      seed >>= 32;
    } while (seed);
    init(19650218u);
    size_t i = 1, j = 0;
    for (size_t k = std::max<size_t>(624, key.size()); k; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
      ++i, ++j;
      if (i >= 624) { mt_[0] = mt_[623]; i = 1; }
      if (j >= key.size()) j = 0;
    }
    for (size_t k = 623; k; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
      ++i;
      if (i >= 624) { mt_[0] = mt_[623]; i = 1; }
    }
    mt_[0] = 0x80000000u;
  }
  // randrange(n): getrandbits(n.bit_length()) until it falls below n.
  int64_t randrange(int64_t n) {
    int bits = 0;
    for (int64_t m = n; m; m >>= 1) ++bits;
    for (;;) {
      uint64_t r = bits <= 32 ? next() >> (32 - bits) : 0;
      if (bits > 32) {
        // getrandbits(k > 32): 32-bit words, least significant first, the last one shifted.
        int left = bits;
        for (int shift = 0; left > 0; shift += 32, left -= 32) {
          uint64_t word = next();
          if (left < 32) word >>= 32 - left;
          r |= word << shift;
        }
      }
      if (int64_t(r) < n) return int64_t(r);
    }
  }

 private:
  void init(uint32_t s) {
    mt_[0] = s;
    for (index_ = 1; index_ < 624; ++index_)
      mt_[index_] = 1812433253u * (mt_[index_ - 1] ^ (mt_[index_ - 1] >> 30)) + uint32_t(index_);
  }
  uint32_t next() {
    if (index_ >= 624) {
      for (int k = 0; k < 624; ++k) {
        uint32_t y = (mt_[k] & 0x80000000u) | (mt_[(k + 1) % 624] & 0x7FFFFFFFu);
        mt_[k] = mt_[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908B0DFu : 0);
      }
      index_ = 0;
    }
    uint32_t y = mt_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9D2C5680u;
    y ^= (y << 15) & 0xEFC60000u;
    return y ^ (y >> 18);
  }
  uint32_t mt_[624]{};
  int index_ = 624;
};

// -- the model ------------------------------------------------------------------------------

// One call's arguments: positional, keyword (TorchScript), or the flat tensors of a package.
struct Feed {
  std::vector<c10::IValue> args;
  torch::jit::Kwargs kwargs;
  std::vector<std::string> names;  // the keyword arguments in the order given
};

Feed clone_feed(const Feed& feed) {
  Feed out = feed;
  auto copy = [](c10::IValue& v) {
    if (v.isTensor()) v = v.toTensor().clone();
  };
  for (auto& a : out.args) copy(a);
  for (auto& [name, v] : out.kwargs) copy(v);
  return out;
}

class Model {
 public:
  virtual ~Model() = default;
  virtual void call(const Feed& feed) = 0;
  virtual bool scripted() const { return false; }
};

class ScriptModel : public Model {
 public:
  explicit ScriptModel(torch::jit::Module module)
      : module(std::move(module)), forward(this->module.get_method("forward")) {}
  void refresh() { forward = module.get_method("forward"); }
  void call(const Feed& feed) override { forward(feed.args, feed.kwargs); }
  bool scripted() const override { return true; }
  torch::jit::Module module;
  torch::jit::Method forward;
};

#ifdef WARMSCOPE_HAVE_AOTI
class PackageModel : public Model {
 public:
  PackageModel(const std::string& path, c10::DeviceIndex index)
      : loader(path, "model", false, 1, index) {}
  void call(const Feed& feed) override {
    std::vector<at::Tensor> flat;
    flat.reserve(feed.args.size() + feed.names.size());
    for (const auto& a : feed.args) flat.push_back(a.toTensor());
    for (const auto& name : feed.names) flat.push_back(feed.kwargs.at(name).toTensor());
    loader.run(flat);
  }
  torch::inductor::AOTIModelPackageLoader loader;
};
#endif

// -- inputs ---------------------------------------------------------------------------------

// The input maker's rule, as every maker follows it (core/child/input_spec.py): this table is
// generated from it, and a test holds it to the rule.
// BEGIN input_spec (generated: python -m warmscope.core.output.inputs_cpp)
struct InputDtype {
  const char* name;
  c10::ScalarType type;
  bool floating;
};
static const InputDtype kInputDtypes[] = {
    {"float32", torch::kFloat, true},
    {"float64", torch::kDouble, true},
    {"float16", torch::kHalf, true},
    {"bfloat16", torch::kBFloat16, true},
    {"int64", torch::kLong, false},
    {"int32", torch::kInt, false},
    {"int16", torch::kShort, false},
    {"int8", torch::kChar, false},
    {"uint8", torch::kByte, false},
    {"bool", torch::kBool, false},
};
static const std::pair<const char*, const char*> kInputAliases[] = {
    {"float", "float32"},
    {"double", "float64"},
    {"half", "float16"},
    {"long", "int64"},
    {"int", "int32"},
};
static const char* const kDefaultFillFloating = "normal";
static const char* const kDefaultFillOther = "zeros";
// The fills that make their values in another dtype than the input's, and that dtype.
static const std::pair<const char*, c10::ScalarType> kDrawnAs[] = {
    {"normal", torch::kFloat},
    {"uniform", torch::kFloat},
};
static const uint64_t kDefaultSeed = 0ULL;
// END input_spec

const InputDtype* input_dtype(const std::string& name) {
  std::string canonical = name;
  for (const auto& [alias, to] : kInputAliases)
    if (name == alias) canonical = to;
  for (const auto& d : kInputDtypes)
    if (canonical == d.name) return &d;
  return nullptr;
}

c10::ScalarType dtype_of(const std::string& name) {
  const InputDtype* d = input_dtype(name);
  if (d == nullptr) throw UsageError("unknown dtype " + name);
  return d->type;
}

std::string dtype_name(c10::ScalarType t) {
  for (const auto& d : kInputDtypes)
    if (d.type == t) return d.name;
  return c10::toString(t);
}

// One input, as input_spec says: its fill (the dtype's default where the spec names none)
// drawn from the call's generator in the fill's own dtype where it has one, then converted;
// floating inputs cast to `cast` where it is set.
at::Tensor make_input(at::Generator& generator, const InputDtype& dtype,
                      const std::vector<int64_t>& shape, std::string gen, const Json& a,
                      const std::string& cast) {
  if (gen.empty()) gen = dtype.floating ? kDefaultFillFloating : kDefaultFillOther;
  c10::ScalarType made = dtype.type;
  for (const auto& [fill, as] : kDrawnAs)
    if (gen == fill) made = as;
  auto opts = at::TensorOptions().dtype(made);
  at::Tensor tensor;
  if (gen == "zeros") tensor = at::zeros(shape, opts);
  else if (gen == "ones") tensor = at::ones(shape, opts);
  else if (gen == "fill") tensor = at::full(shape, a[0].number(), opts);
  else if (gen == "randint")
    tensor = at::randint(a[0].integer(), a[1].integer(), shape, generator, opts);
  else if (gen == "uniform") tensor = at::empty(shape, opts).uniform_(a[0].number(), a[1].number(), generator);
  else if (gen == "normal") tensor = at::randn(shape, generator, opts);
  else throw UsageError("unknown input fill " + gen);
  if (tensor.scalar_type() != dtype.type) tensor = tensor.to(dtype.type);
  if (!cast.empty() && dtype.floating) tensor = tensor.to(dtype_of(cast));
  return tensor;
}

// One call's tensors, as inputs.build_inputs makes them: one CPU generator seeded for the
// call, drawn by the specs in their order, so the values equal the Python agent's.
Feed build_inputs(const Json& specs, const c10::Device& device, const std::string& cast,
                  const Json& dims, uint64_t seed) {
  auto generator = at::detail::createCPUGenerator(seed);
  Feed feed;
  for (const auto& spec : specs.arr) {
    const InputDtype* dtype = input_dtype(spec["dtype"].str());
    if (dtype == nullptr) throw UsageError("unknown dtype " + spec["dtype"].str());
    std::vector<int64_t> shape;
    for (const auto& d : spec["shape"].arr) {
      if (d.kind == Json::Num) shape.push_back(d.integer());
      else shape.push_back(dims[d.str()].integer());
    }
    at::Tensor tensor = make_input(generator, *dtype, shape, spec["gen"].str(), spec["args"], cast).to(device);
    std::string name = spec["name"].str();
    if (name.empty()) {
      feed.args.emplace_back(tensor);
    } else {
      feed.kwargs[name] = tensor;
      feed.names.push_back(name);
    }
  }
  return feed;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("--inputs " + path + ": cannot read it");
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// --inputs FILE.pt: what torch.save wrote (a tensor, a tuple/list, a dict with string keys),
// read by torch::pickle_load: tensors and containers only, no code from the file runs.
Feed load_inputs_file(const std::string& path, const c10::Device& device) {
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(read_file(path));
  } catch (const c10::Error& exc) {
    std::string what = exc.what_without_backtrace();
    throw UsageError("--inputs " + path + ": torch::pickle_load cannot read it: " +
                     what.substr(0, what.find('\n')).substr(0, 300));
  }
  auto move = [&](const c10::IValue& v) -> c10::IValue {
    return v.isTensor() ? c10::IValue(v.toTensor().to(device)) : v;
  };
  Feed feed;
  if (value.isGenericDict()) {
    for (const auto& item : value.toGenericDict()) {
      if (!item.key().isString())
        throw UsageError("--inputs " + path + ": a dict of inputs needs string keys (argument names)");
      std::string name = item.key().toStringRef();
      feed.kwargs[name] = move(item.value());
      feed.names.push_back(name);
    }
  } else if (value.isTuple()) {
    for (const auto& v : value.toTupleRef().elements()) feed.args.push_back(move(v));
  } else if (value.isList()) {
    for (const auto& v : value.toListRef()) feed.args.push_back(move(v));
  } else if (value.isTensor()) {
    feed.args.push_back(move(value));
  } else {
    throw UsageError("--inputs " + path + " holds a " + value.tagKind() +
                     ": expected a tensor, a tuple/list or a dict of inputs");
  }
  return feed;
}

std::string describe_value(const c10::IValue& v) {
  if (!v.isTensor()) return v.tagKind();
  const auto& t = v.toTensor();
  std::string out = dtype_name(t.scalar_type()) + "[";
  for (int64_t d = 0; d < t.dim(); ++d) out += (d ? "," : "") + std::to_string(t.size(d));
  return out + "]";
}

std::vector<std::string> describe(const Feed& feed) {
  std::vector<std::string> out;
  for (const auto& a : feed.args) out.push_back(describe_value(a));
  for (const auto& name : feed.names) out.push_back(name + "=" + describe_value(feed.kwargs.at(name)));
  return out;
}

std::string shape_key(const Json& dims) {
  std::string out;
  for (const auto& [k, v] : dims.obj)
    out += (out.empty() ? "" : ",") + k + "=" + std::to_string(v.integer());
  return out;
}

// Which shape iteration i serves (loading.shape_schedule); -1: the run ends (once).
std::function<int64_t(int64_t)> shape_schedule(const Json& cfg, int64_t count) {
  if (count <= 1) return nullptr;
  std::string schedule = cfg["schedule"].str("cycle");
  if (schedule == "random") {
    auto rng = std::make_shared<PyRandom>(uint64_t(cfg["seed"].integer()));
    return [rng, count](int64_t) { return rng->randrange(count); };
  }
  if (schedule == "ramp") {
    int64_t iters = cfg["iters"].integer(1);
    int64_t block = std::max<int64_t>(1, (iters + count - 1) / count);
    return [block, count](int64_t i) { return std::min(i / block, count - 1); };
  }
  if (schedule == "once") return [count](int64_t i) { return i < count ? i : -1; };
  return [count](int64_t i) { return i % count; };
}

// -- AOTInductor packages: the inputs the compiled wrapper checks (pt2.checked_inputs) --------

#ifdef WARMSCOPE_HAVE_AOTI
// One tensor per input of the wrapper's check_input_N: its dtype and every size, where each
// size is fixed; empty otherwise (or for a dtype the input maker has no rule for). Made as
// specs of those dtypes and sizes are (make_input, one generator for the call), as in Python.
std::vector<at::Tensor> checked_inputs(const std::string& code) {
  auto generator = at::detail::createCPUGenerator(kDefaultSeed);
  static const std::regex check(R"(static void check_input_(\d+)\()");
  static const std::regex dtype(R"(_expected_dtype = aoti_torch_dtype_(\w+)\(\))");
  static const std::regex dim(R"(unmatched dim value at (\d+), \"\s*<< \"expected: (\d+), \")");
  static const std::regex checked(R"((?:dim|stride) value (?:is too (?:small|large) )?at (\d+))");
  std::vector<std::pair<int64_t, std::string>> blocks;
  for (std::sregex_iterator it(code.begin(), code.end(), check), end; it != end; ++it) {
    size_t body = size_t(it->position(0) + it->length(0));
    size_t stop = code.find("\n}", body);
    blocks.emplace_back(std::stoll((*it)[1]), code.substr(body, stop == std::string::npos ? std::string::npos : stop - body));
  }
  std::vector<at::Tensor> tensors;
  for (const auto& [index, body] : blocks) {
    std::smatch m;
    if (index != int64_t(tensors.size()) || !std::regex_search(body, m, dtype)) return {};
    std::string name = m[1];
    std::map<int64_t, int64_t> sizes;
    for (std::sregex_iterator it(body.begin(), body.end(), dim), end; it != end; ++it)
      sizes[std::stoll((*it)[1])] = std::stoll((*it)[2]);
    int64_t rank = 0;
    for (std::sregex_iterator it(body.begin(), body.end(), checked), end; it != end; ++it)
      rank = std::max<int64_t>(rank, std::stoll((*it)[1]) + 1);
    std::vector<int64_t> shape;
    for (int64_t k = 0; k < rank; ++k) {
      if (!sizes.count(k)) return {};
      shape.push_back(sizes[k]);
    }
    if (int64_t(sizes.size()) != rank) return {};
    const InputDtype* t = input_dtype(name);
    if (t == nullptr) return {};
    tensors.push_back(make_input(generator, *t, shape, "", Json(), ""));
  }
  return tensors;
}

std::string package_wrapper(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  static const std::regex member(R"(^data/aotinductor/[^/]+/.*wrapper\.cpp$)");
  for (const auto& name : reader.getAllRecords()) {
    if (std::regex_match(name, member)) {
      auto [data, size] = reader.getRecord(name);
      return std::string(static_cast<const char*>(data.get()), size);
    }
  }
  return "";
}
#endif

// -- knobs ----------------------------------------------------------------------------------

// Whether this libtorch's TensorExpr fuser can generate CPU code (torch._C._llvm_enabled): its
// LLVM code generator is there only in builds with LLVM.
bool llvm_enabled() {
  return dlsym(RTLD_DEFAULT, "_ZN5torch3jit10tensorexpr11LLVMCodeGenD1Ev") != nullptr ||
         dlsym(RTLD_DEFAULT, "_ZN5torch3jit10tensorexpr11LLVMCodeGenD2Ev") != nullptr;
}

std::string engine_name(at::QEngine e) {
  switch (e) {
    case at::QEngine::FBGEMM: return "fbgemm";
    case at::QEngine::QNNPACK: return "qnnpack";
    case at::QEngine::ONEDNN: return "onednn";
    case at::QEngine::X86: return "x86";
    default: return "none";
  }
}

void check_capabilities(const Json& knobs) {
  std::string engine = knobs["quantized_engine"].str();
  if (!engine.empty()) {
    std::vector<std::string> names;
    bool found = false;
    for (auto e : at::globalContext().supportedQEngines()) {
      if (engine_name(e) == "none") continue;
      names.push_back(engine_name(e));
      found = found || engine_name(e) == engine;
    }
    if (!found) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw UsageError("quantized_engine=" + engine + ": this torch (" WARMSCOPE_TORCH_VERSION
                       ") has the engines " + list);
    }
  }
  if (knobs["onednn_fusion"].truthy() && !at::hasMKLDNN())
    throw UsageError("onednn_fusion=on: this torch (" WARMSCOPE_TORCH_VERSION
                     ") was built without oneDNN (torch.backends.mkldnn.is_available() is False)");
  if (knobs["cpu_fusion"].truthy() && !llvm_enabled())
    throw UsageError("cpu_fusion=on: this torch (" WARMSCOPE_TORCH_VERSION
                     ") was built without LLVM, so the TensorExpr fuser cannot generate CPU "
                     "code; leave cpu_fusion at default");
}

torch::jit::FusionStrategy fusion_strategy(const std::string& text) {
  torch::jit::FusionStrategy stages;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ';')) {
    auto comma = part.find(',');
    std::string kind = part.substr(0, comma);
    kind.erase(0, kind.find_first_not_of(' '));
    kind.erase(kind.find_last_not_of(' ') + 1);
    for (auto& c : kind) c = char(std::toupper(c));
    size_t depth = comma == std::string::npos ? 0 : std::stoul(part.substr(comma + 1));
    stages.emplace_back(kind == "DYNAMIC" ? torch::jit::FusionBehavior::DYNAMIC
                                          : torch::jit::FusionBehavior::STATIC,
                        depth);
  }
  return stages;
}

// The knobs libtorch has, each as its Python form sets it (the Knob entries' apply paths);
// one a call refuses is an event, as in Python.
void apply_knobs(const Json& knobs, Channel& channel) {
  auto apply = [&](const char* name, const std::function<void(const Json&)>& set) {
    const Json& value = knobs[name];
    if (value.null()) return;
    try {
      set(value);
    } catch (const std::exception& exc) {
      std::string shown = value.kind == Json::Bool ? (value.b ? "on" : "off")
                          : value.kind == Json::Str ? value.s
                                                    : number(value.num);
      std::string why = exc.what();
      if (auto* e = dynamic_cast<const c10::Error*>(&exc)) why = e->what_without_backtrace();
      channel.send(event("knob", std::string("knob ") + name + "=" + shown + " refused: " +
                                     why.substr(0, why.find('\n')))
                       .line());
    }
  };
  apply("intra_op_threads", [](const Json& v) { at::set_num_threads(int(v.integer())); });
  apply("inter_op_threads", [](const Json& v) { at::set_num_interop_threads(int(v.integer())); });
  apply("matmul_precision",
        [](const Json& v) { at::globalContext().setFloat32MatmulPrecision(v.str()); });
  apply("profiling_executor", [](const Json& v) { torch::jit::getExecutorMode() = v.b; });
  apply("graph_optimizer", [](const Json& v) { torch::jit::setGraphExecutorOptimize(v.b); });
  apply("num_profiled_runs",
        [](const Json& v) { torch::jit::getNumProfiledRuns() = size_t(v.integer()); });
  apply("fusion_strategy", [](const Json& v) {
    auto stages = fusion_strategy(v.str());
    torch::jit::setFusionStrategy(stages);
  });
  apply("texpr_fuser", [](const Json& v) { torch::jit::setTensorExprFuserEnabled(v.b); });
  apply("cpu_fusion", [](const Json& v) { torch::jit::overrideCanFuseOnCPU(v.b); });
  apply("onednn_fusion", [](const Json&) {
    throw std::runtime_error("oneDNN graph fusion is set from Python only (torch.jit.enable_onednn_fusion)");
  });
  apply("cudnn_benchmark", [](const Json& v) { at::globalContext().setBenchmarkCuDNN(v.b); });
  apply("quantized_engine", [](const Json& v) {
    for (auto e : at::globalContext().supportedQEngines())
      if (engine_name(e) == v.str()) at::globalContext().setQEngine(e);
  });
}

// -- what the child reports -----------------------------------------------------------------

void send_env(Channel& channel, const std::string& device, const std::string& self) {
  Message m("env");
  m.str("runtime", "cpp");
  m.str("torch", WARMSCOPE_TORCH_VERSION);
  if (std::strlen(WARMSCOPE_TORCH_GIT)) m.str("torch_git", WARMSCOPE_TORCH_GIT);
  else m.null("torch_git");
  if (std::strlen(WARMSCOPE_TORCH_CUDA)) m.str("torch_cuda", WARMSCOPE_TORCH_CUDA);
  else m.null("torch_cuda");
  m.integer("intra_op_threads", at::get_num_threads());
  m.integer("inter_op_threads", at::get_num_interop_threads());
  m.str("quantized_engine", engine_name(at::globalContext().qEngine()));
  m.boolean("cuda_available", torch::cuda::is_available());
  m.boolean("mkldnn", at::hasMKLDNN());
  std::string agent = "{\"path\":" + quote(self) + ",\"compiler\":" + quote(__VERSION__) +
                      ",\"device\":" + quote(device) + "}";
  m.raw("cpp_agent", agent);
  channel.send(m.line(), true);
}

void send_memory(Channel& channel) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  channel.send(Message("memory").num("peak_rss_mb", std::round(usage.ru_maxrss / 102.4) / 10).line(),
               true);
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The name Python gives the same error (pybind11 and torch's own translations): what the
// parent and its views already read.
std::string exception_name(const std::exception& exc) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&exc)) return "OutOfMemoryError";
  if (dynamic_cast<const c10::IndexError*>(&exc)) return "IndexError";
  if (dynamic_cast<const c10::ValueError*>(&exc)) return "ValueError";
  if (dynamic_cast<const c10::TypeError*>(&exc)) return "TypeError";
  if (dynamic_cast<const c10::NotImplementedError*>(&exc)) return "NotImplementedError";
  return "RuntimeError";
}

void report_error(Channel& channel, const std::string& where, const std::string& exception,
                  const std::string& message, const std::string& traceback, bool usage) {
  Message m("error");
  m.str("where", where);
  int64_t i = state.iteration;
  if (i >= 0) m.integer("iteration", i);
  else m.null("iteration");
  m.str("phase", current_phase());
  m.boolean("usage", usage);
  m.str("exception", exception);
  m.str("message", usage ? message : exception + ": " + message);
  m.str("traceback", traceback);
  channel.send(m.line(), true);
}

// The graphs of a TorchScript module as loaded (loading.loaded_graphs): forward's code as
// TorchScript prints it, and its graph.
std::vector<std::pair<std::string, std::string>> loaded_graphs(ScriptModel& model) {
  std::vector<std::pair<std::string, std::string>> graphs;
  try {
    std::vector<c10::IValue> constants;
    torch::jit::PrintDepsTable deps;
    torch::jit::PythonPrint printer(constants, deps);
    printer.printMethod(model.forward.function());
    graphs.emplace_back("code", printer.str());
  } catch (const std::exception&) {
  }
  try {
    graphs.emplace_back("graph", model.forward.graph()->toString());
  } catch (const std::exception&) {
  }
  return graphs;
}

// -- the loop -------------------------------------------------------------------------------

struct Sync {
  // A wait for the work queued on the device's current stream: an event recorded after the
  // call, then waited on (agent.stream_sync), through the device-generic event of c10.
  explicit Sync(const c10::Device& device)
      : impl(device.type()), stream(impl.getStream(device)), done(device.type()) {}
  void operator()() {
    done.record(stream);
    done.synchronize();
  }
  c10::impl::VirtualGuardImpl impl;
  c10::Stream stream;
  c10::Event done;
};

struct GradMode {
  explicit GradMode(const std::string& mode) {
    if (mode == "inference_mode") inference.emplace();
    else if (mode != "enabled") no_grad.emplace();
  }
  std::optional<c10::InferenceMode> inference;
  std::optional<torch::NoGradGuard> no_grad;
};

struct Loop {
  std::string status = "ok";
  int64_t count = 0;
};

Loop run_loop(Model& model, std::vector<Feed>& feeds, const Json& cfg, Channel& channel,
              const c10::Device& device, bool markers) {
  const Json& knobs = cfg["knobs"];
  int64_t iters = cfg["iters"].integer(1);
  int64_t duration_ns = cfg["duration"].null() ? -1 : int64_t(cfg["duration"].number() * 1e9);
  std::optional<Sync> sync;
  if (device.is_cuda()) sync.emplace(device);
  auto shape_at = shape_schedule(cfg, int64_t(feeds.size()));
  const Feed* feed = &feeds[0];
  Feed fresh;
  bool fresh_inputs = cfg["fresh_inputs"].truthy();
  int64_t current = 0;
  double gap = cfg["gap"].number(0);
  std::vector<int64_t> durations, starts, shapes;
  durations.reserve(kFlushMaxIters);
  starts.reserve(kFlushMaxIters);
  int64_t first_unsent = 0;

  // The shared ring (core/child/ring.py); an anonymous one where the parent gave none.
  int64_t slots = cfg["ring_slots"].integer(1);
  size_t ring_size = size_t(1 + 2 * slots) * 8;
  void* mapped = cfg["ring_fd"].null()
                     ? mmap(nullptr, ring_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
                     : mmap(nullptr, ring_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                            int(cfg["ring_fd"].integer()), 0);
  if (mapped == MAP_FAILED) throw std::runtime_error("cannot map the shared ring");
  auto* ring = static_cast<int64_t*>(mapped);
  int64_t first_slot = 1, last_slot = 1 + 2 * (slots - 1), slot = first_slot;
  bool (*wrote)() = markers ? stderr_written : never;
  std::string done_prefix = state.marker_prefix + "done ";
  int64_t loop_start = 0;
  // What the process read from storage since the last batch (io_counters.py's DiskReads),
  // read once a batch, never inside a call.
  std::pair<int64_t, int64_t> disk_last{0, 0};

  auto flush = [&] {
    if (!durations.empty()) {
      if (!first_unsent) state.first_call_ns = loop_start + starts[0];
      std::string batch = "{\"t\":\"iters\",\"i0\":" + std::to_string(first_unsent) +
                          ",\"ns\":\"" + column(durations) + "\",\"st\":\"" + column(starts) + "\"";
      if (shape_at) batch += ",\"sh\":\"" + column(shapes) + "\"";
      batch += "}\n";
      auto disk = disk_counters();
      int64_t read = disk.first - disk_last.first, faults = disk.second - disk_last.second;
      disk_last = disk;
      if (read || faults)
        batch += Message("reads")
                     .integer("i0", first_unsent)
                     .integer("n", int64_t(durations.size()))
                     .integer("bytes", read)
                     .integer("majflt", faults)
                     .line();
      first_unsent += int64_t(durations.size());
      durations.clear();
      starts.clear();
      shapes.clear();
      channel.flush(batch);
    } else if (channel.has_pending()) {
      channel.flush();
    }
  };
  auto mark_done = [&](int64_t i) {
    std::string line = done_prefix + std::to_string(i) + "\n";
    write_all(state.marker_fd, line.data(), line.size(), false);
  };

  Loop loop;
  set_phase("");
  std::cout.flush();
  marker("loop", "start");
  wrote();  // the loop marker's own write
  int64_t next_flush = now_ns() + kFlushEveryNs;
  disk_last = disk_counters();
  loop_start = now_ns();
  int64_t i = 0;
  {
    GradMode grad(knobs["grad_mode"].str("no_grad"));
    for (;;) {
      if (stop_asked) {
        loop.status = "stopped";
        break;
      }
      if (duration_ns < 0) {
        if (i >= iters) break;
      } else if (now_ns() - loop_start >= duration_ns) {
        break;
      }
      if (shape_at) {
        int64_t k = shape_at(i);
        if (k < 0) break;  // once: every shape has run
        feed = &feeds[size_t(k)];
        shapes.push_back(k);
        current = k;
      }
      if (fresh_inputs) {  // made before the clock starts
        fresh = clone_feed(feeds[size_t(shape_at ? current : 0)]);
        feed = &fresh;
      }
      if (gap > 0) std::this_thread::sleep_for(std::chrono::duration<double>(gap));
      state.iteration = i;
      int64_t t0 = now_ns();
      state.iteration_start_ns = t0;
      try {
        model.call(*feed);
        if (sync) (*sync)();
      } catch (...) {
        state.iteration_start_ns = 0;
        std::cout.flush();
        if (wrote()) mark_done(i);
        durations.resize(std::min(durations.size(), starts.size()));
        flush();
        throw;
      }
      int64_t t1 = now_ns();
      state.iteration_start_ns = 0;
      durations.push_back(t1 - t0);
      starts.push_back(t0 - loop_start);
      ring[slot] = t1 - t0;
      ring[slot + 1] = t0 - loop_start;
      std::cout.flush();
      if (wrote()) {  // before the count moves on: the parent relies on that order
        mark_done(i);
        wrote();  // the marker's own write
      }
      ++i;
      __atomic_store_n(&ring[0], i, __ATOMIC_RELEASE);
      slot = slot < last_slot ? slot + 2 : first_slot;
      if (t1 >= next_flush || durations.size() >= kFlushMaxIters) {
        flush();
        next_flush = now_ns() + kFlushEveryNs;
      }
    }
  }
  state.iteration = -1;
  flush();
  set_phase("end");
  std::cerr.flush();
  marker("phase", "end");
  munmap(mapped, ring_size);
  loop.count = i;
  return loop;
}

// After the run: its opening (each shape's first call, in the order served) replayed warm,
// kReplays times, each after the pause before the run's first call (agent.replay_opening).
std::string replay_opening(Model& model, std::vector<Feed>& feeds, const Json& cfg,
                           Channel& channel, const c10::Device& device) {
  int64_t pause_ns = state.first_call_ns ? std::max<int64_t>(0, state.first_call_ns - state.setup_end_ns) : 0;
  auto shape_at = shape_schedule(cfg, int64_t(feeds.size()));
  std::vector<int64_t> order;
  std::set<int64_t> seen;
  for (int j = 0; j < kMaxOpening; ++j) {
    int64_t k = shape_at ? shape_at(j) : 0;
    if (k < 0) break;
    order.push_back(k);
    seen.insert(k);
    if (seen.size() == feeds.size()) break;
  }
  std::optional<Sync> sync;
  if (device.is_cuda()) sync.emplace(device);
  set_phase("opening replay");
  marker("phase", "opening replay");
  std::string status = "ok";
  std::vector<std::string> replays;
  {
    GradMode grad(cfg["knobs"]["grad_mode"].str("no_grad"));
    for (int r = 0; r < kReplays && !stop_asked; ++r) {
      std::vector<Feed> calls;
      for (auto k : order)
        calls.push_back(cfg["fresh_inputs"].truthy() ? clone_feed(feeds[size_t(k)]) : feeds[size_t(k)]);
      std::this_thread::sleep_for(std::chrono::nanoseconds(pause_ns));
      std::vector<std::string> times;
      for (const auto& call : calls) {
        int64_t t0 = now_ns();
        model.call(call);
        if (sync) (*sync)();
        times.push_back(number(double(now_ns() - t0) / 1e6));
      }
      replays.push_back(json_list(times, false));
    }
  }
  if (stop_asked) status = "stopped";
  std::vector<std::string> shapes;
  for (auto k : order) shapes.push_back(std::to_string(k));
  channel.send(Message("opening")
                   .num("pause_ms", double(pause_ns) / 1e6)
                   .raw("shapes", json_list(shapes, false))
                   .raw("ms", json_list(replays, false))
                   .line(),
               true);
  set_phase("end");
  return status;
}

// After the run: for each gap, sleep it, then time one call; three times each (agent.idle_probe).
std::string idle_probe(Model& model, const Feed& feed, const Json& cfg, Channel& channel,
                       const c10::Device& device) {
  std::optional<Sync> sync;
  if (device.is_cuda()) sync.emplace(device);
  set_phase("idle probe");
  marker("phase", "idle probe");
  std::vector<std::string> results;
  {
    GradMode grad(cfg["knobs"]["grad_mode"].str("no_grad"));
    for (const auto& gap : cfg["idle_probe"].arr) {
      if (stop_asked) break;
      std::vector<std::string> times;
      for (int k = 0; k < kIdleProbeCalls && !stop_asked; ++k) {
        std::this_thread::sleep_for(std::chrono::duration<double>(gap.number()));
        int64_t t0 = now_ns();
        model.call(feed);
        if (sync) (*sync)();
        times.push_back(number(double(now_ns() - t0) / 1e6));
      }
      results.push_back("{\"idle_s\":" + number(gap.number()) + ",\"ms\":" + json_list(times, false) + "}");
    }
  }
  Message m("idle_probe");
  m.raw("results", json_list(results, false));
  const Json& shapes = cfg["shapes"];
  if (!shapes.arr.empty()) m.str("shape", shape_key(shapes[0]));
  channel.send(m.line(), true);
  set_phase("end");
  return stop_asked ? "stopped" : "ok";
}

std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : "";
}

// What a refusal says where the parent let something through that C++ cannot run.
void check_runs_here(const Json& cfg) {
  std::string kind = cfg["target"]["kind"].str();
  std::string spec = cfg["target"]["spec"].str();
  if (kind != "archive" && kind != "aoti")
    throw UsageError(spec + ": the C++ runtime runs TorchScript archives (torch.jit.save) and "
                            "AOTInductor packages (aoti_compile_and_package), not a " + kind + " target");
#ifndef WARMSCOPE_HAVE_AOTI
  if (kind == "aoti")
    throw UsageError(spec + ": this libtorch (" WARMSCOPE_TORCH_VERSION
                            ") has no AOTIModelPackageLoader");
#endif
  std::string mode = cfg["mode"].str();
  if ((kind == "archive" && mode != "script") || (kind == "aoti" && mode != "eager"))
    throw UsageError("--mode " + mode + " has no C++ form for " + spec);
  if (!cfg["recipe"].null() && kind != "archive")
    throw UsageError("--recipe: a C++ recipe prepares a TorchScript module, and " + spec +
                     " is not one");
  if (cfg["imports"].truthy()) throw UsageError("--import: the C++ runtime imports no Python");
  if (cfg["profile_iters"].truthy() || cfg["profile_steady"].truthy())
    throw UsageError("--profile-iters in the C++ runtime: the profile comes from a Python process");
}

int run(int argc, char** argv) {
  (void)argc;
  (void)argv;
  int64_t started_main = now_ns();
  Channel channel(take_protocol_fd());
  std::string text = read_config();
  Json cfg;
  try {
    cfg = JsonParser(text).parse();
  } catch (const UsageError& exc) {
    report_error(channel, "load", "UsageError", exc.what(), exc.what(), true);
    return kExitUsage;
  }
  state.marker_prefix = std::string(kMarker) + cfg["marker_secret"].str() + " ";
  die_with_parent(cfg["parent_pid"].integer());
  install_signals();
  state.marker_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
  bool markers = cfg["markers"].truthy();
  const char* every = std::getenv("WARMSCOPE_MARK_EVERY_ITERATION");
  if (markers && !(every && *every)) state.watching = watch_stderr(state.marker_fd);
  std::cout.setf(std::ios::unitbuf);  // TorchScript prints reach fd 2 before the marker
  torch::jit::setPrintHandler(marked_print);
  channel.send(Message("hello").integer("v", kProtocolVersion).integer("pid", getpid()).str("runtime", "cpp").line(), true);
  WarningEvents warnings(channel);
  c10::WarningUtils::set_warning_handler(&warnings);
  start_flusher(channel);

  // From exec to main: the dynamic loader mapping libtorch and running its static
  // initializers, what `import torch` is to the Python agent. The parent's spawn time, by the
  // same clock, comes with the config.
  int64_t spawned = cfg["spawn_ns"].integer(0);
  if (const char* there = std::getenv("WARMSCOPE_SPAWN_NS"); there && !spawned)
    spawned = std::strtoll(there, nullptr, 10);  // over --host: the guardian's fork, there
  if (spawned > 0 && spawned < started_main) {
    channel.send(Message("phase_start").str("name", "start to main").line(), true);
    channel.send(Message("phase").str("name", "start to main").num("ms", double(started_main - spawned) / 1e6).line(), true);
  }

  const Json& knobs = cfg["knobs"];
  std::string device_text = knobs["device"].str("cpu");
  std::unique_ptr<Model> model;
  std::vector<Feed> feeds;
  std::vector<std::pair<std::string, std::string>> graphs;
  c10::Device device(c10::kCPU);
  std::string kind = cfg["target"]["kind"].str();
  std::string spec = cfg["target"]["spec"].str();
  std::string path = cfg["target"]["path"].str();
  try {
    check_runs_here(cfg);
    {
      Phase phase(channel, "apply knobs");
      check_capabilities(knobs);
      apply_knobs(knobs, channel);
    }
    check_stop();
    device = c10::Device(device_text);
    if (device.is_cuda()) {
      if (!torch::cuda::is_available())
        throw UsageError("--device " + device_text + ": CUDA is not available to this torch (" WARMSCOPE_TORCH_VERSION ")");
      Phase phase(channel, "cuda init");
      at::empty({1}, at::TensorOptions().device(device));
      Sync sync(device);
      sync();
    }
    send_env(channel, device_text, self_path());
    if (kind == "aoti") {
#ifdef WARMSCOPE_HAVE_AOTI
      Phase phase(channel, "load package");
      try {
        model = std::make_unique<PackageModel>(path, device.has_index() ? device.index() : -1);
      } catch (const c10::Error& exc) {
        throw UsageError(path + ": libtorch " WARMSCOPE_TORCH_VERSION " cannot load this AOTInductor package: " +
                         first_line(exc.what_without_backtrace()) +
                         " (a package loads only with the torch, and on the kind of device, it was built for)");
      }
#endif
    } else {
      Phase phase(channel, "load");
      try {
        model = std::make_unique<ScriptModel>(torch::jit::load(path, device));
      } catch (const c10::Error& exc) {
        throw UsageError(path + ": not a loadable TorchScript archive: " +
                         first_line(exc.what_without_backtrace()));
      }
    }
    check_stop();
    {
      Phase phase(channel, "inputs");
      std::string cast = knobs["dtype"].str();
      uint64_t seed = cfg["seed"].unsigned_integer(kDefaultSeed);
      if (cfg["inputs_file"].kind == Json::Str) {
        feeds.push_back(load_inputs_file(cfg["inputs_file"].str(), device));
      } else if (!cfg["inputs"].arr.empty()) {
        const Json& shapes = cfg["shapes"];
        if (shapes.arr.empty()) feeds.push_back(build_inputs(cfg["inputs"], device, cast, Json(), seed));
        for (const auto& dims : shapes.arr) feeds.push_back(build_inputs(cfg["inputs"], device, cast, dims, seed));
      } else {
#ifdef WARMSCOPE_HAVE_AOTI
        if (kind == "aoti") {
          auto flat = checked_inputs(package_wrapper(path));
          if (flat.empty())
            throw UsageError(spec + ": the AOTInductor package records no fixed input shapes "
                                    "(no sample inputs, or a dynamic dimension): pass --input SPEC");
          Feed feed;
          for (auto& t : flat) feed.args.emplace_back(t.to(device));
          feeds.push_back(std::move(feed));
        }
#endif
        if (feeds.empty()) throw UsageError(spec + " has no example inputs: pass --input SPEC");
      }
    }
    std::string source = cfg["inputs_file"].kind == Json::Str ? "file" : cfg["inputs"].arr.empty() ? "target" : "spec";
    channel.send(Message("inputs").str("source", source).raw("inputs", json_list(describe(feeds[0]))).line(), true);
    if (feeds.size() > 1) {
      std::vector<std::string> keys, dims;
      for (const auto& d : cfg["shapes"].arr) {
        keys.push_back(shape_key(d));
        std::string obj = "{";
        for (const auto& [k, v] : d.obj) obj += (obj.size() > 1 ? "," : "") + quote(k) + ":" + std::to_string(v.integer());
        dims.push_back(obj + "}");
      }
      channel.send(Message("shapes").raw("keys", json_list(keys)).raw("dims", json_list(dims, false)).line(), true);
    }
    check_stop();
    if (auto* script = dynamic_cast<ScriptModel*>(model.get())) {
      if (knobs["eval"].kind != Json::Bool || knobs["eval"].b) script->module.eval();
      if (knobs["freeze"].truthy()) {
        Phase phase(channel, "freeze");
        script->module = torch::jit::freeze(script->module);
        script->refresh();
      }
      if (knobs["optimize_for_inference"].truthy()) {
        Phase phase(channel, "optimize_for_inference");
        script->module = torch::jit::optimize_for_inference(script->module);
        script->refresh();
      }
      graphs = loaded_graphs(*script);
      if (cfg["recipe"].kind == Json::Str) {
        // The recipe's own prepare(module), built from its file without its main
        // (core/run/cpp_build.py): settings, warm-up calls; its time is its start-up cost.
        Phase phase(channel, "recipe");
        std::string library = cfg["recipe"].str();
        void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) throw UsageError("--recipe: cannot load " + library + ": " + dlerror());
        using Prepare = void (*)(torch::jit::Module*);
        auto prepare = reinterpret_cast<Prepare>(dlsym(handle, "warmscope_prepare"));
        if (!prepare) throw UsageError("--recipe: " + library + " has no prepare(module)");
        prepare(&script->module);
        script->refresh();
      }
    }
    check_stop();
  } catch (const Stopped&) {
    channel.send(Message("done").str("status", "stopped").integer("iterations", 0).line(), true);
    return kExitStopped;
  } catch (const UsageError& exc) {
    report_error(channel, "load", "UsageError", exc.what(), exc.what(), true);
    return kExitUsage;
  } catch (const std::exception& exc) {
    std::string phase = current_phase();
    const auto* error = dynamic_cast<const c10::Error*>(&exc);
    report_error(channel, phase.empty() ? "load" : phase, exception_name(exc),
                 error ? error->what_without_backtrace() : exc.what(), exc.what(), false);
    return kExitFailed;
  }

  Loop loop;
  try {
    loop = run_loop(*model, feeds, cfg, channel, device, markers);
    if (loop.status == "ok" && cfg["replay_opening"].truthy())
      loop.status = replay_opening(*model, feeds, cfg, channel, device);
    if (loop.status == "ok" && !cfg["idle_probe"].arr.empty())
      loop.status = idle_probe(*model, feeds[0], cfg, channel, device);
  } catch (const std::exception& exc) {
    std::string phase = current_phase();
    const auto* error = dynamic_cast<const c10::Error*>(&exc);
    report_error(channel, phase.empty() ? "forward" : phase, exception_name(exc),
                 error ? error->what_without_backtrace() : exc.what(), exc.what(), false);
    send_memory(channel);
    return kExitFailed;
  }
  send_memory(channel);
  if (!graphs.empty()) {
    // What the profiling executor made of the graph: guards, fusion groups, no profile nodes.
    try {
      if (auto optimized = torch::jit::lastExecutedOptimizedGraph())
        graphs.emplace_back("optimized", optimized->toString());
    } catch (const std::exception&) {
    }
    Message m("graphs");
    for (const auto& [name, text] : graphs) m.str(name.c_str(), text);
    channel.send(m.line());
  }
  channel.send(Message("done").str("status", loop.status).integer("iterations", loop.count).line(), true);
  return loop.status == "stopped" ? kExitStopped : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  int code = run(argc, argv);
  std::cout.flush();
  std::cerr.flush();
  _exit(code);  // no static destructors: libtorch's threads may still be parked
}
