// Static screening of candidate objects and OpenCL sources: which symbols a candidate may define
// and import (tables at the top, meant to be extended), raw system calls, OpenCL #include lines.
#include "eval/screen.h"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "proc/sandbox.h"
#include "util/strings.h"

namespace kf {
namespace fs = std::filesystem;
namespace {

// ------------------------------------------------------------------------------------------------
// Tables. C names are matched exactly or by prefix on the symbol; C++ names on the demangled
// qualified name (return type and arguments dropped, inline namespaces such as __cxx11 and _V2
// removed), by prefix. Forbidden classes are checked before the allowlist, so an allowlist
// prefix can never let a forbidden name through.
// ------------------------------------------------------------------------------------------------

constexpr unsigned kCpp = 1, kCuda = 2, kOcl = 4, kSycl = 8, kAllLanguages = 15;

unsigned language_bit(Language language) {
  switch (language) {
    case Language::kCpp:
      return kCpp;
    case Language::kCuda:
      return kCuda;
    case Language::kOcl:
      return kOcl;
    case Language::kSycl:
      return kSycl;
    case Language::kTriton:
      return 0;
  }
  return 0;
}

struct NameSet {
  std::vector<std::string_view> c_names;       // exact C symbol names
  std::vector<std::string_view> c_prefixes;    // C symbol name prefixes
  std::vector<std::string_view> cxx_prefixes;  // demangled qualified-name prefixes
};

// APIs a candidate may not import (nor define: defining one would replace it for the harness).
struct ForbiddenClass {
  std::string_view name;     // "file and network I/O"
  std::string_view why;      // why a kernel may not use it
  std::string_view instead;  // what to do instead
  NameSet names;
};

// The tables are packed by hand, several names a line.
// clang-format off
const std::vector<ForbiddenClass>& forbidden_classes() {
  static const std::vector<ForbiddenClass> kClasses = {
      {"file and network I/O",
       "a candidate computes its outputs from its inputs only; files and sockets could keep state "
       "between runs or reach the harness's results",
       "Read and write only the buffers the task passes in (printf/puts to stdout are allowed for "
       "debugging)",
       {{"fopen", "fopen64", "freopen", "freopen64", "fdopen", "fmemopen", "open", "open64",
         "openat", "openat64", "__open_2", "__open64_2", "creat", "creat64", "read", "__read_chk",
         "pread", "pread64", "readv", "preadv", "write", "pwrite", "pwrite64", "writev", "pwritev",
         "tmpfile64", "fread", "fread_unlocked", "fclose", "fgets", "fgetc", "getc",
         "fscanf", "__isoc99_fscanf", "fseek", "ftell", "rewind", "close", "lseek", "lseek64",
         "stat", "stat64", "fstat", "fstat64", "lstat", "lstat64", "fstatat", "fstatat64",
         "__xstat", "__fxstat", "__lxstat", "__xstat64", "__fxstat64", "statx", "access",
         "faccessat", "euidaccess", "unlink", "unlinkat", "rename", "renameat", "renameat2",
         "remove", "mkdir", "mkdirat", "rmdir", "opendir", "fdopendir", "readdir", "readdir64",
         "scandir", "truncate", "ftruncate", "chmod", "fchmod", "chown", "fchown", "link", "linkat",
         "symlink", "symlinkat", "readlink", "readlinkat", "realpath", "getcwd", "chdir", "fchdir",
         "tmpfile", "mkstemp", "mkostemp", "mkdtemp", "tmpnam", "tempnam", "dup", "dup2", "dup3",
         "pipe", "pipe2", "fsync", "fdatasync", "sync", "sendfile", "splice", "ioctl", "fcntl",
         "fcntl64", "flock", "inotify_init", "socket", "socketpair", "connect", "bind", "listen",
         "accept", "accept4", "send", "sendto", "sendmsg", "recv", "recvfrom", "recvmsg",
         "getaddrinfo", "gethostbyname", "shutdown", "setsockopt", "getsockopt", "poll", "select",
         "epoll_create", "epoll_create1", "epoll_wait"},
        {},
        {"std::basic_ofstream", "std::basic_ifstream", "std::basic_fstream", "std::basic_filebuf",
         "std::filesystem::", "std::experimental::filesystem::", "std::random_device::"}}},
      {"process control",
       "a candidate may not start, signal or inspect other processes (the orchestrator included)",
       "Compute in the calling process and thread; use OpenMP or the GPU for parallelism",
       {{"fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl",
         "execlp", "execle", "fexecve", "system", "popen", "pclose", "posix_spawn", "posix_spawnp",
         "kill", "killpg", "raise", "tgkill", "tkill", "getppid", "getpid", "gettid", "setsid",
         "setpgid", "setpgrp", "ptrace", "prctl", "wait", "waitpid", "wait3", "wait4", "waitid",
         "daemon", "setuid", "setgid", "seteuid", "setegid", "setreuid", "setresuid", "chroot",
         "unshare", "setns", "process_vm_readv", "process_vm_writev", "sched_setaffinity",
         "setpriority", "nice", "main", "__libc_start_main"},
        {"posix_spawn", "__libc_"},
        {}}},
      {"threads and streams",
       "work left running in another thread or stream after the entry point returns escapes the "
       "harness's timing and synchronisation",
       "Use OpenMP (#pragma omp parallel for) for host threads; launch CUDA kernels on the default "
       "stream (no stream argument) and let the harness synchronise",
       {{"thrd_create", "cudaLaunchHostFunc", "cudaStreamAddCallback", "cudaLaunchKernel_ptsz",
         "cudaLaunchKernelExC_ptsz", "__cudaLaunchKernel_ptsz", "cudaLaunchHostFunc_ptsz",
         "cudaSetDevice", "cudaDeviceReset", "cudaThreadExit", "cudaSetDeviceFlags",
         "cudaCtxResetPersistingL2Cache", "cudaProfilerStart", "cudaProfilerStop", "cuLaunchKernel",
         "cuLaunchKernelEx", "cuStreamCreate", "cuCtxCreate", "cuLaunchHostFunc"},
        {"pthread_create", "pthread_detach", "pthread_join", "pthread_exit", "pthread_kill",
         "pthread_cancel", "pthread_attr_", "pthread_tryjoin", "pthread_timedjoin",
         "cudaStreamCreate", "cudaStreamDestroy", "cudaStreamBeginCapture", "cudaStreamEndCapture",
         "cudaGraph", "cudaIpc", "cudaHostRegister", "cudaStreamAttachMemAsync"},
        {"std::thread::", "std::jthread::", "std::__future_base::", "std::async",
         "std::this_thread::", "std::execution::", "std::__pstl::"}}},
      {"signals", "signal handlers and timers run candidate code outside the timed call",
       "Remove the handler; report problems through the outputs",
       {{"signal",        "sigaction",  "sigprocmask", "pthread_sigmask", "sigaltstack",
         "alarm",         "setitimer",  "getitimer",   "timer_create",    "timer_settime",
         "__sysv_signal", "bsd_signal", "sigset",      "sysv_signal",     "signalfd",
         "sigsuspend",    "sigwait",    "sigqueue",    "setjmp",          "_setjmp",
         "__sigsetjmp",   "longjmp",    "_longjmp",    "siglongjmp",      "__longjmp_chk"},
        {},
        {}}},
      {"clocks and timers",
       "only the harness measures time; a candidate reading clocks or events can tell timed calls "
       "from correctness calls",
       "Remove the timing code (the harness times the entry point for you)",
       {{"clock_gettime", "__clock_gettime", "__clock_gettime64", "clock_getres", "gettimeofday",
         "time", "clock", "times", "ftime", "timespec_get", "getrusage", "sleep", "usleep",
         "nanosleep", "clock_nanosleep", "sched_yield", "omp_get_wtime", "omp_get_wtick",
         "__rdtsc_syscall"},
        {"cudaEvent", "cuEvent"},
        {"std::chrono::"}}},
      {"dynamic loading", "loading code at run time bypasses this screening",
       "Write the code in the candidate's source; no library may be loaded",
       {{"dlopen", "dlsym", "dlvsym", "dlclose", "dladdr", "dladdr1", "dlinfo", "dlmopen",
         "dl_iterate_phdr", "dlerror", "getauxval", "__tls_get_addr_slow"},
        {"__libc_dl"},
        {}}},
      {"exit handlers",
       "code registered to run at exit runs after the harness has checked the candidate",
       "Do not register exit handlers or end the process; return from the entry point",
       {{"exit", "_exit", "_Exit", "quick_exit", "at_quick_exit", "atexit", "on_exit",
         "__cxa_atexit", "__cxa_thread_atexit", "__cxa_thread_atexit_impl", "__cxa_finalize"},
        {},
        {"std::exit", "std::quick_exit", "std::_Exit"}}},
      {"system calls and memory mapping",
       "raw system calls and page-protection changes bypass every other rule",
       "Allocate memory with new/malloc/std::vector; no system calls",
       {{"syscall",       "mmap",     "mmap64",       "munmap",      "mprotect",
         "pkey_mprotect", "mremap",   "brk",          "sbrk",        "shmget",
         "shmat",         "shm_open", "memfd_create", "personality", "arch_prctl",
         "modify_ldt",    "seccomp",  "madvise",      "mlock",       "munlock"},
        {},
        {}}},
      {"the environment", "the environment can hold credentials and differs between runs",
       "Take every parameter from the entry point's arguments",
       {{"getenv", "secure_getenv", "__secure_getenv", "environ", "__environ", "_environ", "setenv",
         "putenv", "unsetenv", "clearenv", "getlogin", "getpwuid", "getpwnam", "gethostname",
         "uname", "sysconf", "get_nprocs", "get_nprocs_conf"},
        {},
        {}}},
  };
  return kClasses;
}

// What a candidate may import, by language. Anything else is refused as "not on the allowlist".
struct AllowGroup {
  std::string_view name;
  unsigned languages;
  NameSet names;
};

const std::vector<AllowGroup>& allow_groups() {
  static const std::vector<AllowGroup> kGroups = {
      {"memory",
       kAllLanguages,
       {{"memcpy", "memmove", "memset", "memcmp", "memchr", "bcmp", "bzero", "malloc", "calloc",
         "realloc", "free", "aligned_alloc", "posix_memalign", "memalign", "__memcpy_chk",
         "__memmove_chk", "__memset_chk", "__mempcpy_chk", "mempcpy", "strlen", "strnlen", "strcmp",
         "strncmp", "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr",
         "__strcpy_chk", "__strcat_chk", "qsort", "bsearch", "abs", "labs", "llabs", "div", "ldiv",
         "strtol", "strtoul", "strtoll", "strtoull", "strtod", "strtof", "atoi", "atol", "atof",
         "rand", "srand", "rand_r", "__errno_location", "__ctype_b_loc", "__ctype_tolower_loc",
         "__ctype_toupper_loc", "__assert_fail", "abort", "__stack_chk_fail", "__stack_chk_guard",
         "_GLOBAL_OFFSET_TABLE_", "__tls_get_addr", "__dso_handle", "__libc_single_threaded"},
        {},
        {"operator new", "operator delete", "std::__throw_", "std::terminate", "std::_Rb_tree_",
         "std::_Hash_bytes", "std::_Fnv_hash_bytes", "std::__detail::_Prime_rehash_policy::",
         "std::__detail::_List_node_base::", "std::_List_node_base::", "std::basic_string<",
         "std::string::", "std::wstring::", "std::bad_alloc", "std::bad_array_new_length",
         "std::exception", "std::bad_function_call", "std::runtime_error", "std::logic_error",
         "std::length_error", "std::out_of_range", "std::invalid_argument", "std::overflow_error",
         "std::range_error", "std::domain_error", "std::bad_cast", "std::nothrow",
         "std::align_val_t", "std::__glibcxx_assert_fail", "std::__replacement_assert",
         "std::_Sp_make_shared_tag::", "std::__shared_ptr", "std::_Sp_counted_",
         "std::__atomic_futex_unsigned_base::"}}},
      {"C++ runtime",
       kAllLanguages,
       {{"__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort", "__cxa_pure_virtual",
         "__cxa_deleted_virtual", "__gxx_personality_v0", "_Unwind_Resume", "__cxa_begin_catch",
         "__cxa_end_catch", "__cxa_rethrow", "__cxa_allocate_exception", "__cxa_free_exception",
         "__cxa_throw", "__cxa_call_unexpected", "__cxa_call_terminate", "__cxa_bad_cast",
         "__cxa_bad_typeid", "__cxa_throw_bad_array_new_length", "__cxa_get_exception_ptr",
         "__cxa_end_cleanup", "__cxa_vec_new", "__cxa_vec_delete"},
        // libgcc arithmetic helpers (128-bit integers, half/quad floats, complex, powi, popcount).
        {"__powi",         "__mulsc3",    "__muldc3",   "__mulxc3",    "__multc3",
         "__divsc3",       "__divdc3",    "__divxc3",   "__divtc3",    "__udivti3",
         "__divti3",       "__umodti3",   "__modti3",   "__extend",    "__trunc",
         "__floatti",      "__floatunti", "__fixsfti",  "__fixdfti",   "__fixunssfti",
         "__fixunsdfti",   "__popcount",  "__clz",      "__ctz",       "__bswap",
         "__ffs",          "__parity",    "__addtf3",   "__subtf3",    "__multf3",
         "__divtf3",       "__eqtf2",     "__netf2",    "__lttf2",     "__letf2",
         "__gttf2",        "__getf2",     "__unordtf2", "__cpu_model", "__cpu_indicator_init",
         "__cpu_features2"},
        {"__cxxabiv1::", "__gnu_cxx::__verbose_terminate_handler"}}},
      {"printing to stdout/stderr",
       kAllLanguages,
       // fwrite too: with every way to open a file refused, its stream is stdout or stderr.
       {{"printf", "puts", "putchar", "fprintf", "fputs", "fputc", "putc", "fflush", "vprintf",
         "fwrite", "fwrite_unlocked",
         "vfprintf", "snprintf", "sprintf", "vsnprintf", "vsprintf", "__printf_chk",
         "__fprintf_chk", "__vfprintf_chk", "__vprintf_chk", "__sprintf_chk", "__snprintf_chk",
         "__vsnprintf_chk", "__vsprintf_chk", "stdout", "stderr", "sscanf", "__isoc99_sscanf",
         "__isoc23_sscanf", "__isoc23_strtol", "__isoc23_strtoul", "__isoc23_strtoll",
         "__isoc23_strtoull"},
        {},
        {"std::cout", "std::cerr", "std::clog", "std::ostream::", "std::basic_ostream<",
         "std::__ostream_insert<", "std::operator<<", "std::endl<", "std::flush<",
         "std::ios_base::", "std::basic_ios<", "std::ctype<", "std::locale::", "std::ostringstream",
         "std::basic_ostringstream<", "std::basic_stringstream<", "std::basic_istringstream<",
         "std::basic_stringbuf<", "std::basic_streambuf<", "std::stringstream", "std::stringbuf",
         "std::to_string", "std::__convert_from_v", "std::__to_chars", "std::to_chars",
         "std::from_chars"}}},
      {"OpenMP runtime",
       kCpp,
       // omp_get_wtime/omp_get_wtick are refused above as clocks.
       {{}, {"GOMP_", "omp_", "__kmpc_"}, {}}},
      // CUDA: what a kernel launch and its setup need. Operations queued on the default stream
      // (cudaMemsetAsync/cudaMemcpyAsync without a stream, cudaMalloc/cudaFree for scratch,
      // cudaMemcpyToSymbol for constant memory) are covered by the harness's device
      // synchronisation and its timing, so they cannot make the timing lie; the default stream is
      // the only one a candidate can name, because creating streams, events, graphs and host
      // callbacks is refused above.
      {"CUDA runtime for kernel launches",
       kCuda,
       {{"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
         "__cudaLaunchKernel", "__cudaLaunch", "__cudaGetKernel", "__cudaPushCallConfiguration",
         "__cudaPopCallConfiguration", "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd",
         "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaRegisterManagedVar",
         "__cudaRegisterTexture", "__cudaRegisterSurface", "__cudaUnregisterFatBinary",
         "__cudaInitModule", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString",
         "cudaGetErrorName", "cudaFuncSetAttribute", "cudaFuncGetAttributes",
         "cudaFuncSetCacheConfig", "cudaFuncSetSharedMemConfig", "cudaGetFuncBySymbol",
         "cudaDeviceGetAttribute", "cudaGetDevice", "cudaGetDeviceProperties",
         "cudaGetDeviceProperties_v2", "cudaDeviceGetLimit", "cudaDeviceSynchronize",
         "cudaStreamSynchronize", "cudaStreamQuery", "cudaDriverGetVersion",
         "cudaRuntimeGetVersion", "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync",
         "cudaMemset", "cudaMemsetAsync", "cudaMemset2D", "cudaMemset2DAsync", "cudaMemcpy",
         "cudaMemcpyAsync", "cudaMemcpy2D", "cudaMemcpy2DAsync", "cudaMemcpyToSymbol",
         "cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbol", "cudaMemcpyFromSymbolAsync",
         "cudaGetSymbolAddress", "cudaGetSymbolSize", "cudaCreateChannelDesc",
         "cudaCreateTextureObject", "cudaDestroyTextureObject"},
        {"__cudaRegisterLinkedBinary", "cudaOccupancy"},
        {}}},
  };
  return kGroups;
}

// Math functions (libm): the base names; "f"/"l" suffixes, glibc's __*_finite forms and libmvec's
// _ZGV vector variants of them are accepted too.
const std::unordered_set<std::string_view>& math_names() {
  static const std::unordered_set<std::string_view> kNames = {
      "sin",    "cos",       "tan",       "asin",      "acos",         "atan",      "atan2",
      "sinh",   "cosh",      "tanh",      "asinh",     "acosh",        "atanh",     "exp",
      "exp2",   "expm1",     "exp10",     "log",       "log2",         "log10",     "log1p",
      "logb",   "ilogb",     "pow",       "sqrt",      "cbrt",         "hypot",     "fabs",
      "fmod",   "remainder", "remquo",    "fma",       "fmax",         "fmin",      "fdim",
      "ceil",   "floor",     "trunc",     "round",     "lround",       "llround",   "rint",
      "lrint",  "llrint",    "nearbyint", "frexp",     "ldexp",        "scalbn",    "scalbln",
      "modf",   "copysign",  "nan",       "nextafter", "nexttoward",   "erf",       "erfc",
      "tgamma", "lgamma",    "lgamma_r",  "sincos",    "significand",  "isnan",     "isinf",
      "finite", "__isnan",   "__isinf",   "__finite",  "__fpclassify", "__signbit", "j0",
      "j1",     "jn",        "y0",        "y1",        "yn",           "gamma",     "drem",
      "pow10",  "cexp",      "clog",      "cpow",      "csqrt",        "cabs",      "carg",
      "csin",   "ccos",      "ctan"};
  return kNames;
}
// clang-format on

bool is_math_name(std::string_view name) {
  const auto& names = math_names();
  if (names.count(name)) return true;
  if (name.size() > 2 && name.substr(0, 2) == "__" && name.size() > 9 &&
      name.substr(name.size() - 7) == "_finite")
    name = name.substr(2, name.size() - 9);
  if (names.count(name)) return true;
  for (std::string_view suffix : {"f", "l", "f128", "f64", "f32"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix &&
        names.count(name.substr(0, name.size() - suffix.size())))
      return true;
  }
  // libmvec: _ZGV<isa><mask><lanes><params>_<name>, e.g. _ZGVdN8v_expf.
  if (name.substr(0, 4) == "_ZGV" && name.size() > 5 && (name[5] == 'N' || name[5] == 'M')) {
    size_t underscore = name.find('_', 4);
    if (underscore != std::string_view::npos) return is_math_name(name.substr(underscore + 1));
  }
  return false;
}

// Symbols compilers generate for CUDA and OpenMP that may be defined with external linkage.
bool is_compiler_generated_definition(std::string_view name) {
  return name.substr(0, 7) == "DW.ref." || name.find("._omp_fn.") != std::string_view::npos ||
         name.find("._omp_cpyfn.") != std::string_view::npos ||
         name.substr(0, 26) == "__cudaRegisterLinkedBinary" ||
         name.substr(0, 13) == "__fatbinwrap_" || name.substr(0, 12) == "__nv_module_" ||
         name == "fatbinData" || name == "__sti____cudaRegisterAll";
}

// ------------------------------------------------------------------------------------------------
// Names
// ------------------------------------------------------------------------------------------------

std::string demangle(const std::string& name) {
  if (!starts_with(name, "_Z")) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string result(out);
  std::free(out);
  return result;
}

// Removes inline namespaces, so "std::__cxx11::basic_string" matches "std::basic_string".
std::string normalise_namespaces(std::string name) {
  for (std::string_view inline_ns : {"__cxx11::", "_V2::", "__1::", "__8::"}) {
    size_t at;
    while ((at = name.find(inline_ns)) != std::string::npos) name.erase(at, inline_ns.size());
  }
  return name;
}

// The qualified name of a demangled symbol, without return type, arguments and "vtable for"-like
// prefixes: "std::ostream& std::ostream::_M_insert<long>(long)" -> "std::ostream::_M_insert<long>".
std::string qualified_name(const std::string& demangled) {
  std::string d = demangled;
  for (std::string_view prefix :
       {"vtable for ", "typeinfo for ", "typeinfo name for ", "VTT for ", "guard variable for ",
        "construction vtable for ", "non-virtual thunk to ", "virtual thunk to ",
        "covariant return thunk to ", "TLS init function for ", "TLS wrapper function for ",
        "transaction clone for ", "reference temporary #0 for "}) {
    if (starts_with(d, prefix)) {
      d = d.substr(prefix.size());
      break;
    }
  }
  int depth = 0;
  size_t start = 0, end = d.size();
  for (size_t i = 0; i < d.size(); ++i) {
    char c = d[i];
    if (starts_with(std::string_view(d).substr(i), "(anonymous namespace)")) {
      i += std::strlen("(anonymous namespace)") - 1;
      continue;
    }
    if (starts_with(std::string_view(d).substr(i), "operator") &&
        (i == 0 || !(std::isalnum(static_cast<unsigned char>(d[i - 1])) || d[i - 1] == '_'))) {
      // Skip the operator's spelling: "operator<<", "operator()", "operator new[]".
      i += 8;
      if (starts_with(std::string_view(d).substr(i), "()")) {
        i += 1;
      } else if (i < d.size() && d[i] == ' ') {
        while (i + 1 < d.size() && (std::isalnum(static_cast<unsigned char>(d[i + 1])) ||
                                    d[i + 1] == '_' || d[i + 1] == '[' || d[i + 1] == ']'))
          ++i;
      } else {
        while (i < d.size() && std::strchr("<>=!+-*/%&|^~[],", d[i]) != nullptr) ++i;
        --i;
      }
      continue;
    }
    if (c == '<' || c == '(' || c == '{' || c == '[') {
      if (c == '(' && depth == 0) {
        end = i;
        break;
      }
      ++depth;
    } else if (c == '>' || c == ')' || c == '}' || c == ']') {
      if (depth > 0) --depth;
    } else if (c == ' ' && depth == 0 && i + 1 < d.size() && d[i + 1] != '<' && d[i + 1] != '[' &&
               d[i + 1] != '&' && d[i + 1] != '*') {
      start = i + 1;  // what came before was a return type
    }
  }
  if (start > end) start = 0;
  return normalise_namespaces(d.substr(start, end - start));
}

bool matches(const NameSet& set, const std::string& symbol, const std::string& qname) {
  bool cxx = starts_with(symbol, "_Z");
  if (!cxx) {
    for (auto n : set.c_names)
      if (symbol == n) return true;
    for (auto p : set.c_prefixes)
      if (starts_with(symbol, p)) return true;
    return false;
  }
  for (auto p : set.cxx_prefixes)
    if (starts_with(qname, p)) return true;
  return false;
}

const ForbiddenClass* forbidden_class(const std::string& symbol, const std::string& qname) {
  for (const auto& fc : forbidden_classes())
    if (matches(fc.names, symbol, qname)) return &fc;
  return nullptr;
}

const AllowGroup* allow_group(const std::string& symbol, const std::string& qname,
                              unsigned language) {
  for (const auto& group : allow_groups())
    if ((group.languages & language) && matches(group.names, symbol, qname)) return &group;
  return nullptr;
}

// A C name that belongs to the C library, the compiler runtime or a device runtime (defining it
// would replace it for the harness).
bool is_runtime_c_name(const std::string& symbol) {
  if (starts_with(symbol, "_Z")) return false;
  if (symbol.empty() || symbol[0] == '_') return true;  // reserved to the implementation
  if (is_math_name(symbol)) return true;
  for (const auto& group : allow_groups())
    if (matches(group.names, symbol, symbol)) return true;
  // Runtime APIs by prefix; "cuda"/"cu"/"cl"/"nv" only before a capital (cudaMalloc, clFinish),
  // so that task entry points such as cuda_softmax stay possible.
  for (std::string_view p :
       {"GOMP_", "omp_", "kmp_", "pthread_", "sem_", "mtx_", "cnd_", "thrd_", "tss_"}) {
    if (starts_with(symbol, p)) return true;
  }
  for (std::string_view p : {"cuda", "cu", "cl", "nv"}) {
    if (starts_with(symbol, p) && symbol.size() > p.size() &&
        std::isupper(static_cast<unsigned char>(symbol[p.size()])))
      return true;
  }
  return false;
}

// ------------------------------------------------------------------------------------------------
// Tools
// ------------------------------------------------------------------------------------------------

std::string find_in_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / tool;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return "";
}

struct ToolRun {
  bool ok = false;
  std::string output;
  std::string error;  // environment fault in words when !ok
};

ToolRun run_tool(ProcessRunner& runner, const std::vector<std::string>& argv,
                 const fs::path& work_dir, double timeout_s) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.work_dir = work_dir;
  spec.timeout_s = timeout_s;
  spec.output_cap = size_t{256} << 20;
  SandboxOptions options;
  options.create_tmp_dir = false;
  ProcessResult r = runner.run(sandboxed(std::move(spec), options));
  ToolRun out;
  if (!r.success()) {
    std::string first_line = r.output.substr(0, r.output.find('\n'));
    out.error = "'" + join(argv, " ") + "' failed: " + r.describe() +
                (first_line.empty() ? "" : " (" + first_line + ")");
    return out;
  }
  if (r.output_bytes > r.output.size()) {
    out.error = "'" + argv[0] + "' wrote more than 256 MiB on " + argv.back();
    return out;
  }
  out.ok = true;
  out.output = std::move(r.output);
  return out;
}

struct Sym {
  std::string name;
  char type = 0;
};

bool is_undefined(char t) {
  return t == 'U' || t == 'w' || t == 'v';
}
bool is_global_definition(char t) {
  return !is_undefined(t) && (std::isupper(t) || t == 'u');
}
bool is_weak_definition(char t) {
  return t == 'W' || t == 'V' || t == 'u';
}

// nm -P output: "name type [value size]" per line; archive member headers end in ':'.
std::vector<Sym> parse_nm(const std::string& output, bool strip_versions) {
  std::vector<Sym> out;
  for (const auto& line : split(output, '\n')) {
    if (line.empty() || line.back() == ':') continue;
    size_t space = line.find(' ');
    if (space == std::string::npos || space + 1 >= line.size()) continue;
    Sym s{line.substr(0, space), line[space + 1]};
    if (space + 2 < line.size() && line[space + 2] != ' ') continue;  // not "name T ..."
    if (strip_versions) s.name = s.name.substr(0, s.name.find('@'));
    out.push_back(std::move(s));
  }
  return out;
}

// Symbol tables of trusted files (task objects, libraries) are cached by path, size and mtime:
// they are the same for every candidate of a job.
struct Cached {
  std::string key;
  std::vector<Sym> symbols;
};

Result<std::vector<Sym>> trusted_symbols(ProcessRunner& runner, const std::string& nm,
                                         const fs::path& file, const fs::path& work_dir,
                                         double timeout_s) {
  static std::mutex mutex;
  static std::map<std::string, Cached> cache;
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec)
    return Result<std::vector<Sym>>::error("cannot read " + file.string() + ": " + ec.message());
  auto mtime = fs::last_write_time(file, ec).time_since_epoch().count();
  std::string key = std::to_string(size) + ":" + std::to_string(mtime);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(file.string());
    if (it != cache.end() && it->second.key == key) return it->second.symbols;
  }
  bool shared = file.filename().string().find(".so") != std::string::npos;
  std::vector<std::string> argv = {nm, "-P"};
  if (shared) argv.push_back("-D");
  argv.push_back(file.string());
  ToolRun run = run_tool(runner, argv, work_dir, timeout_s);
  if (!run.ok) return Result<std::vector<Sym>>::error(run.error);
  std::vector<Sym> symbols = parse_nm(run.output, shared);
  std::lock_guard<std::mutex> lock(mutex);
  cache[file.string()] = {key, symbols};
  return symbols;
}

// What objdump tells about one candidate object: raw system calls and, per referenced symbol,
// how many relocations name it in all, and in which functions.
struct Disassembly {
  std::vector<std::pair<std::string, std::string>> syscalls;  // (function, instruction)
  std::map<std::string, std::map<std::string, int>> refs_by_function;
  std::map<std::string, int> refs_total;
};

std::string reloc_target(std::string_view value) {
  size_t cut = value.find_first_of("+-", 1);
  return std::string(value.substr(0, cut));
}

void parse_disassembly(const std::string& output, Disassembly& d) {
  std::string function;
  for (const auto& raw : split(output, '\n')) {
    std::string_view line = raw;
    if (!line.empty() && line.back() == ':' && line.find(" <") != std::string_view::npos) {
      size_t open = line.find(" <");
      function = std::string(line.substr(open + 2, line.size() - open - 4));
      continue;
    }
    size_t r = line.find(": R_");
    if (r != std::string_view::npos) {
      size_t tab = line.find_first_of("\t ", r + 2);
      if (tab == std::string_view::npos) continue;
      std::string_view value = line.substr(tab);
      value.remove_prefix(std::min(value.find_first_not_of("\t "), value.size()));
      d.refs_by_function[reloc_target(value)][function]++;
      continue;
    }
    size_t colon = line.find(":\t");
    if (colon == std::string_view::npos) continue;
    std::string_view insn = line.substr(colon + 2);
    insn.remove_prefix(std::min(insn.find_first_not_of("\t "), insn.size()));
    std::string_view mnemonic = insn.substr(0, insn.find_first_of(" \t"));
    if (mnemonic == "syscall" || mnemonic == "sysenter" ||
        (mnemonic == "int" && insn.find("$0x80") != std::string_view::npos))
      d.syscalls.emplace_back(function, std::string(mnemonic == "int" ? "int $0x80" : mnemonic));
  }
}

// objdump -r: "OFFSET TYPE VALUE" lines under "RELOCATION RECORDS FOR [section]:".
void parse_relocations(const std::string& output, Disassembly& d) {
  for (const auto& raw : split(output, '\n')) {
    std::string_view line = raw;
    if (line.empty() || !std::isxdigit(static_cast<unsigned char>(line[0]))) continue;
    size_t a = line.find_first_of(" \t");
    if (a == std::string_view::npos) continue;
    size_t b = line.find_first_not_of(" \t", a);
    size_t c = line.find_first_of(" \t", b);
    if (b == std::string_view::npos || c == std::string_view::npos) continue;
    std::string_view value = line.substr(c);
    value.remove_prefix(std::min(value.find_first_not_of(" \t"), value.size()));
    if (!starts_with(line.substr(b), "R_")) continue;
    d.refs_total[reloc_target(value)]++;
  }
}

// ------------------------------------------------------------------------------------------------
// Screening
// ------------------------------------------------------------------------------------------------

std::string shown(const std::string& symbol, const std::string& readable) {
  if (readable == symbol) return "`" + symbol + "`";
  return "`" + readable + "` (" + symbol + ")";
}

class Screener {
 public:
  Screener(const ScreenRequest& request, ProcessRunner& runner)
      : request_(request), runner_(runner) {}

  ScreenResult run();

 private:
  bool load_trusted();
  void screen_object(const fs::path& object, const std::vector<Sym>& symbols,
                     const Disassembly& disassembly);
  void check_definition(const std::string& file, const Sym& sym);
  void check_import(const std::string& file, const Sym& sym, const Disassembly& disassembly);
  void add(std::string file, const std::string& symbol, std::string rule, std::string summary,
           std::string message);
  std::string entry_point_list() const;

  const ScreenRequest& request_;
  ProcessRunner& runner_;
  fs::path work_dir_;
  std::string nm_, objdump_;
  std::string environment_error_;
  std::vector<ScreenViolation> violations_;

  std::unordered_set<std::string> task_undefined_, task_defined_, reference_defined_;
  std::unordered_map<std::string, std::pair<bool, std::string>> library_defined_;  // strong, lib
  std::unordered_set<std::string> candidate_defined_, entry_points_, kernels_;
};

void Screener::add(std::string file, const std::string& symbol, std::string rule,
                   std::string summary, std::string message) {
  ScreenViolation v;
  v.file = std::move(file);
  v.symbol = symbol;
  v.readable = demangle(symbol);
  v.rule = std::move(rule);
  v.summary = std::move(summary);
  v.message = std::move(message);
  violations_.push_back(std::move(v));
}

std::string Screener::entry_point_list() const {
  std::vector<std::string> names;
  for (const auto& e : entry_points_) names.push_back(qualified_name(demangle(e)));
  std::sort(names.begin(), names.end());
  if (names.empty()) return "the functions task.cpp calls";
  return join(names, ", ");
}

bool Screener::load_trusted() {
  for (const auto& obj : request_.task_objects) {
    auto syms = trusted_symbols(runner_, nm_, obj, work_dir_, request_.tool_timeout_s);
    if (!syms) {
      environment_error_ = syms.message();
      return false;
    }
    for (const auto& s : *syms) {
      if (is_undefined(s.type)) task_undefined_.insert(s.name);
      if (is_global_definition(s.type)) task_defined_.insert(s.name);
    }
  }
  for (const auto& obj : request_.reference_objects) {
    auto syms = trusted_symbols(runner_, nm_, obj, work_dir_, request_.tool_timeout_s);
    if (!syms) {
      environment_error_ = syms.message();
      return false;
    }
    for (const auto& s : *syms)
      if (is_global_definition(s.type) && !is_weak_definition(s.type))
        reference_defined_.insert(s.name);
  }
  for (const auto& lib : request_.library_files) {
    auto syms = trusted_symbols(runner_, nm_, lib, work_dir_, request_.tool_timeout_s);
    if (!syms) {
      environment_error_ = syms.message();
      return false;
    }
    for (const auto& s : *syms) {
      if (!is_global_definition(s.type)) continue;
      bool strong = !is_weak_definition(s.type);
      auto [it, inserted] = library_defined_.try_emplace(s.name, strong, lib.filename().string());
      if (!inserted && strong && !it->second.first) it->second = {true, lib.filename().string()};
    }
  }
  return true;
}

void Screener::check_definition(const std::string& file, const Sym& sym) {
  const std::string& name = sym.name;
  std::string readable = demangle(name);
  std::string qname = starts_with(name, "_Z") ? qualified_name(readable) : name;
  bool weak = is_weak_definition(sym.type);
  std::string what = shown(name, readable);
  // The hidden pointer to the C++ personality routine every object with exception tables gets.
  if (starts_with(name, "DW.ref.")) return;
  std::string fix = "A candidate may define only the task's entry points (" + entry_point_list() +
                    ") and its own helpers; make helpers `static` or put them in an anonymous "
                    "namespace, and give them names of their own";

  if (starts_with(qname, "kernelfoundry::") || starts_with(qname, "kf::")) {
    add(file, name, "definition", "defines " + qname + " (the harness's namespace)",
        "defines " + what +
            ", a symbol in the harness's namespace kernelfoundry: it would "
            "replace the harness's own code. " +
            fix + ".");
    return;
  }
  if (reference_defined_.count(name)) {
    add(file, name, "definition", "defines " + qname + " (the task's reference)",
        "defines " + what +
            ", the task's reference implementation, which the candidate may "
            "neither replace nor call. " +
            fix + ".");
    return;
  }
  if (kernels_.count(name) || is_compiler_generated_definition(name) ||
      qname.find("__device_stub__") != std::string::npos) {
    // CUDA kernels and their stubs, OpenMP outlined functions: allowed unless they carry the
    // name of a runtime function.
    if (!is_runtime_c_name(name) && !forbidden_class(name, qname) && !library_defined_.count(name))
      return;
  }
  auto lib = library_defined_.find(name);
  if (lib != library_defined_.end() && (lib->second.first || !weak)) {
    add(file, name, "definition",
        "defines " + qname + " (already defined by " + lib->second.second + ")",
        "defines " + what + ", which " + lib->second.second +
            " already defines: the candidate's copy would replace it for the harness. " + fix +
            ".");
    return;
  }
  if (const ForbiddenClass* fc = forbidden_class(name, qname)) {
    add(file, name, "definition", "defines " + qname + " (" + std::string(fc->name) + ")",
        "defines " + what + ", a function of the C or C++ library or a runtime (" +
            std::string(fc->name) + "): it would replace the real one for the harness. " + fix +
            ".");
    return;
  }
  if (is_runtime_c_name(name) || (is_math_name(name))) {
    add(file, name, "definition", "defines " + name + " (a C library or runtime name)",
        "defines " + what +
            ", a C library, compiler or device runtime function: it would "
            "replace the real one for the harness. " +
            fix + ".");
    return;
  }
  if (starts_with(qname, "std::") || starts_with(qname, "__gnu_cxx::") ||
      starts_with(qname, "__cxxabiv1::")) {
    if (!weak) {
      add(file, name, "definition", "defines " + qname + " (the C++ standard library)",
          "defines " + what +
              ", a function of the C++ standard library: it would replace the "
              "library's own for the harness. " +
              fix + ".");
      return;
    }
    return;  // a template instantiation or inline function of a standard header
  }
  if (entry_points_.count(name)) return;
  if (starts_with(name, "_Z") && weak) return;  // template instantiation, inline function, vtable
  // Typeinfo, vtables and their names for the candidate's own classes (strong when the class has
  // a key function in the candidate).
  if (starts_with(name, "_ZTV") || starts_with(name, "_ZTI") || starts_with(name, "_ZTS") ||
      starts_with(name, "_ZTT") || starts_with(name, "_ZTh") || starts_with(name, "_ZTv") ||
      starts_with(name, "_ZTc"))
    return;
  add(file, name, "definition", "defines " + qname + ", which the task does not call",
      "defines " + what + " with external linkage, which is not one of the task's entry points. " +
          fix + ".");
}

// Whether every relocation naming `symbol` in the object lies in a function accepted by `ok`
// (and `ok` is given the number of references there).
template <typename Pred>
bool refs_only_from(const Disassembly& d, const std::string& symbol, Pred ok) {
  auto total = d.refs_total.find(symbol);
  auto by_fn = d.refs_by_function.find(symbol);
  int in_code = 0;
  if (by_fn != d.refs_by_function.end()) {
    for (const auto& [fn, count] : by_fn->second) {
      if (!ok(fn, count)) return false;
      in_code += count;
    }
  }
  int all = total == d.refs_total.end() ? 0 : total->second;
  return all == in_code;
}

void Screener::check_import(const std::string& file, const Sym& sym, const Disassembly& d) {
  const std::string& name = sym.name;
  std::string readable = demangle(name);
  std::string qname = starts_with(name, "_Z") ? qualified_name(readable) : name;
  std::string what = shown(name, readable);
  if (const ForbiddenClass* fc = forbidden_class(name, qname)) {
    // nvcc's registration code registers the fat binary's unloading with atexit.
    if (name == "atexit" && request_.language == Language::kCuda &&
        refs_only_from(d, name, [](const std::string& fn, int) {
          return fn == "_ZL24__sti____cudaRegisterAllv" || fn == "__sti____cudaRegisterAll";
        }))
      return;
    // <iostream>'s static std::ios_base::Init object registers its destructor with __cxa_atexit;
    // that is allowed, any other static object with a destructor is not.
    if (name == "__cxa_atexit") {
      const auto& ios = d.refs_by_function.find("_ZNSt8ios_base4InitD1Ev");
      if (refs_only_from(d, name, [&](const std::string& fn, int count) {
            if (ios == d.refs_by_function.end()) return false;
            auto it = ios->second.find(fn);
            return it != ios->second.end() && it->second >= count;
          }))
        return;
      add(file, name, "import", "imports __cxa_atexit (a static object with a destructor)",
          "imports " + what +
              ": static objects with destructors (a function-local `static "
              "std::vector` or a global one) register exit handlers, which are not allowed (" +
              std::string(fc->why) +
              "). Use a plain array, or keep such objects local to the "
              "call.");
      return;
    }
    add(file, name, "import", "imports " + qname + " (" + std::string(fc->name) + ")",
        "imports " + what + " (" + std::string(fc->name) + "): " + std::string(fc->why) + ". " +
            std::string(fc->instead) + ".");
    return;
  }
  if (starts_with(qname, "kernelfoundry::") || starts_with(qname, "kf::")) {
    add(file, name, "import", "imports " + qname + " (the harness)",
        "imports " + what +
            ", a function of the harness: candidate code may not call the "
            "harness; only the task's own code does.");
    return;
  }
  if (reference_defined_.count(name)) {
    add(file, name, "import", "calls " + qname + " (the task's reference)",
        "calls " + what +
            ", the task's reference implementation: a candidate must compute the "
            "result itself.");
    return;
  }
  if (candidate_defined_.count(name) || task_defined_.count(name) || entry_points_.count(name))
    return;
  if (is_math_name(name) || allow_group(name, qname, language_bit(request_.language))) return;
  // Weak references the C++ runtime makes to probe for threads and the profiler.
  if (sym.type == 'w' &&
      (name == "__pthread_key_create" || name == "__gmon_start__" || starts_with(name, "_ITM_")))
    return;
  std::string groups;
  for (const auto& g : allow_groups())
    if (g.languages & language_bit(request_.language))
      groups += (groups.empty() ? "" : ", ") + std::string(g.name);
  add(file, name, "import", "imports " + qname + " (not on the allowlist)",
      "imports " + what + ", which is not on the allowlist for " +
          std::string(language_name(request_.language)) + " candidates (" + groups +
          ", math, and the task's own functions). Compute with plain code instead, or use an "
          "allowed function.");
}

void Screener::screen_object(const fs::path& object, const std::vector<Sym>& symbols,
                             const Disassembly& d) {
  std::string file = object.filename().string();
  for (const auto& s : symbols)
    if (is_global_definition(s.type)) check_definition(file, s);
  for (const auto& s : symbols)
    if (is_undefined(s.type)) check_import(file, s, d);
  for (const auto& [function, insn] : d.syscalls) {
    std::string readable = demangle(function);
    add(file, insn, "instruction", "raw `" + insn + "` instruction in " + qualified_name(readable),
        "contains a raw `" + insn + "` instruction in " + shown(function, readable) +
            ": system calls bypass every other rule. Remove the inline assembly; a kernel needs "
            "no system calls.");
  }
}

ScreenResult Screener::run() {
  ScreenResult result;
  work_dir_ = request_.work_dir.empty() ? fs::temp_directory_path() : request_.work_dir;
  bool need_tools = !request_.candidate_objects.empty();
  if (need_tools) {
    nm_ = find_in_path("nm");
    objdump_ = find_in_path("objdump");
    if (nm_.empty() || objdump_.empty()) {
      environment_error_ = std::string(nm_.empty() ? "nm" : "objdump") +
                           " (GNU binutils) was not found in PATH; install binutils so that "
                           "candidates can be screened";
    }
  }
  std::vector<std::pair<fs::path, std::pair<std::vector<Sym>, Disassembly>>> objects;
  if (need_tools && environment_error_.empty() && load_trusted()) {
    for (const auto& obj : request_.candidate_objects) {
      std::error_code ec;
      if (!fs::is_regular_file(obj, ec)) {
        environment_error_ = "the candidate object " + obj.string() + " to screen is missing";
        break;
      }
      ToolRun syms =
          run_tool(runner_, {nm_, "-P", obj.string()}, work_dir_, request_.tool_timeout_s);
      ToolRun dis =
          syms.ok
              ? run_tool(runner_, {objdump_, "-d", "-r", "-w", "--no-show-raw-insn", obj.string()},
                         work_dir_, request_.tool_timeout_s)
              : syms;
      ToolRun rel = dis.ok ? run_tool(runner_, {objdump_, "-r", "-w", obj.string()}, work_dir_,
                                      request_.tool_timeout_s)
                           : dis;
      if (!rel.ok) {
        environment_error_ = rel.error;
        break;
      }
      Disassembly d;
      parse_disassembly(dis.output, d);
      parse_relocations(rel.output, d);
      objects.push_back({obj, {parse_nm(syms.output, false), std::move(d)}});
    }
  }
  if (environment_error_.empty()) {
    // Entry points, kernels, and everything the candidate defines (one file may call another).
    for (const auto& [obj, data] : objects) {
      for (const auto& s : data.first) {
        std::string readable = demangle(s.name);
        std::string qname = qualified_name(readable);
        size_t at = qname.find("__device_stub__");
        if (at != std::string::npos && s.type != 'U') {
          std::string kernel = qname.substr(at + 15);
          if (!kernel.empty() && kernel[0] == 'Z') {
            kernels_.insert("_" + kernel);
            kernels_.insert(qualified_name(demangle("_" + kernel)));  // extern "C" kernels
          } else if (!kernel.empty()) {
            kernels_.insert(kernel);
          }
        }
        if (!is_global_definition(s.type)) continue;
        candidate_defined_.insert(s.name);
        if (task_undefined_.count(s.name) && !reference_defined_.count(s.name) &&
            !starts_with(qname, "kernelfoundry::") && !is_runtime_c_name(s.name) &&
            !forbidden_class(s.name, qname) && !library_defined_.count(s.name))
          entry_points_.insert(s.name);
      }
    }
    for (const auto& [obj, data] : objects) screen_object(obj, data.first, data.second);
    for (const auto& [path, text] : request_.opencl_sources) {
      auto found = screen_opencl_includes(path, text, request_.package_files);
      violations_.insert(violations_.end(), found.begin(), found.end());
      found = screen_opencl_assembly(path, text);
      violations_.insert(violations_.end(), found.begin(), found.end());
    }
    for (const auto& [path, text] : request_.host_evolve_sources) {
      auto found = screen_opencl_assembly(path, text);
      violations_.insert(violations_.end(), found.begin(), found.end());
    }
  }

  result.violations = violations_;
  if (!environment_error_.empty()) {
    result.ok = false;
    result.environment_error = environment_error_;
    result.reason = "static screening could not run: " + environment_error_;
    result.log = "static screening: " + environment_error_ +
                 " (a fault of this machine, not of "
                 "the candidate)\n";
    return result;
  }
  if (violations_.empty()) {
    result.log = "static screening: passed (" + std::to_string(objects.size()) + " object(s), " +
                 std::to_string(request_.opencl_sources.size()) + " OpenCL source(s))\n";
    return result;
  }
  result.ok = false;
  result.reason = "static screening refused the candidate: " + violations_.front().summary;
  if (violations_.size() > 1)
    result.reason += " (and " + std::to_string(violations_.size() - 1) + " more; see the eval log)";
  constexpr size_t kShown = 20;
  result.log = "static screening refused the candidate (" + std::to_string(violations_.size()) +
               " violation(s)):\n";
  for (size_t i = 0; i < violations_.size() && i < kShown; ++i)
    result.log += "  " + violations_[i].file + ": " + violations_[i].message + "\n";
  if (violations_.size() > kShown)
    result.log += "  ... and " + std::to_string(violations_.size() - kShown) +
                  " more violation(s) not shown\n";
  return result;
}

// ------------------------------------------------------------------------------------------------
// OpenCL C includes
// ------------------------------------------------------------------------------------------------

// The source with trigraphs replaced (OpenCL C builds have them on: `??/` and a newline join two
// lines, `??=` is `#`), comments blanked (newlines kept, so line numbers stay) and continuations
// joined into their first line's number.
std::vector<std::pair<int, std::string>> logical_lines(const std::string& source) {
  static const std::string kFrom = "=/'()!<>-", kTo = "#\\^[]|{}~";
  std::string text;
  text.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    std::size_t at = i + 2 < source.size() && source[i] == '?' && source[i + 1] == '?'
                         ? kFrom.find(source[i + 2])
                         : std::string::npos;
    if (at == std::string::npos) {
      text += source[i];
    } else {
      text += kTo[at];
      i += 2;
    }
  }
  std::string clean;
  clean.reserve(text.size());
  bool block = false, line_comment = false, in_string = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (block) {
      if (c == '*' && next == '/') {
        block = false;
        clean += "  ";
        ++i;
      } else {
        clean += c == '\n' ? '\n' : ' ';
      }
      continue;
    }
    if (line_comment) {
      if (c == '\n') {
        line_comment = false;
        clean += '\n';
      } else {
        clean += ' ';
      }
      continue;
    }
    if (in_string) {
      clean += c;
      if (c == '\\' && next != '\0') {
        clean += next;
        ++i;
      } else if (c == quote || c == '\n') {
        in_string = false;
      }
      continue;
    }
    if (c == '/' && next == '*') {
      block = true;
      clean += "  ";
      ++i;
    } else if (c == '/' && next == '/') {
      line_comment = true;
      clean += "  ";
      ++i;
    } else {
      if (c == '"' || c == '\'') {
        in_string = true;
        quote = c;
      }
      clean += c;
    }
  }
  std::vector<std::pair<int, std::string>> lines;
  int number = 1;
  std::string current;
  int start = 1;
  for (size_t i = 0; i < clean.size(); ++i) {
    if (clean[i] == '\\' && i + 1 < clean.size() && clean[i + 1] == '\n') {
      ++i;
      ++number;
      continue;
    }
    if (clean[i] == '\n') {
      lines.emplace_back(start, current);
      current.clear();
      start = ++number;
      continue;
    }
    current += clean[i];
  }
  lines.emplace_back(start, current);
  return lines;
}

std::string trim_left(std::string_view s) {
  size_t i = s.find_first_not_of(" \t\r\f\v");
  return i == std::string_view::npos ? "" : std::string(s.substr(i));
}

}  // namespace

std::vector<ScreenViolation> screen_opencl_includes(const std::string& path,
                                                    const std::string& text,
                                                    const std::vector<std::string>& package_files) {
  std::vector<ScreenViolation> out;
  std::set<std::string> allowed;
  for (const auto& f : package_files) allowed.insert(fs::path(f).lexically_normal().string());
  std::string allowed_list;
  for (const auto& f : allowed) {
    if (allowed_list.size() > 200) {
      allowed_list += ", ...";
      break;
    }
    allowed_list += (allowed_list.empty() ? "" : ", ") + f;
  }
  fs::path dir = fs::path(path).parent_path();

  auto report = [&](int line, const std::string& target, const std::string& why) {
    ScreenViolation v;
    v.file = path;
    v.symbol = target;
    v.readable = target;
    v.rule = "include";
    v.summary = path + ":" + std::to_string(line) + " includes " + target;
    v.message = "line " + std::to_string(line) + " includes " + target + ": " + why +
                ". A kernel may include only files of its own package (" + allowed_list +
                "); write what it needs in the kernel's file.";
    out.push_back(std::move(v));
  };
  // Checks one include target (the text after the directive or inside __has_include( ... )).
  auto check = [&](int line, std::string arg) {
    arg = trim_left(arg);
    if (arg.empty()) return report(line, "(nothing)", "the directive names no file");
    if (arg[0] == '<') {
      size_t close = arg.find('>');
      return report(line, arg.substr(0, close == std::string::npos ? arg.size() : close + 1),
                    "system headers (<...>) are not available to kernels");
    }
    if (arg[0] != '"')
      return report(line, arg.substr(0, arg.find_first_of(" \t)")),
                    "the file must be named in double quotes, not through a macro");
    size_t close = arg.find('"', 1);
    std::string name = arg.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    std::string shown_name = "\"" + name + "\"";
    fs::path p(name);
    if (p.is_absolute() || name.find('\\') != std::string::npos)
      return report(line, shown_name, "absolute paths are not allowed");
    for (const auto& part : p)
      if (part == "..") return report(line, shown_name, "paths may not leave the package (`..`)");
    std::string direct = p.lexically_normal().string();
    std::string relative = (dir / p).lexically_normal().string();
    if (allowed.count(direct) || allowed.count(relative)) return;
    report(line, shown_name, "it is not a file of the candidate's package");
  };

  for (const auto& [number, raw] : logical_lines(text)) {
    std::string line = trim_left(raw);
    bool directive = false;
    for (std::string_view hash : {"#", "%:"}) {
      if (starts_with(line, hash)) {
        line = trim_left(std::string_view(line).substr(hash.size()));
        directive = true;
        break;
      }
    }
    if (directive) {
      for (std::string_view keyword : {"include_next", "include", "import", "embed"}) {
        if (starts_with(line, keyword)) {
          check(number, line.substr(keyword.size()));
          break;
        }
      }
    }
    for (std::string_view probe : {"__has_include_next", "__has_include", "__has_embed"}) {
      size_t at = 0;
      while ((at = raw.find(probe, at)) != std::string::npos) {
        size_t open = raw.find('(', at);
        at += probe.size();
        if (open == std::string::npos) continue;
        check(number, raw.substr(open + 1));
      }
      if (raw.find(probe) != std::string::npos) break;  // "__has_include" is in "..._next"
    }
  }
  return out;
}

std::vector<ScreenViolation> screen_opencl_assembly(const std::string& path,
                                                    const std::string& text) {
  std::vector<ScreenViolation> out;
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const auto& [number, line] : logical_lines(text)) {
    char quote = 0;
    for (size_t i = 0; i < line.size();) {
      char c = line[i];
      if (quote != 0) {  // inside a literal: skip it, escapes included
        i += c == '\\' ? 2 : 1;
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
        ++i;
        continue;
      }
      if (!is_word(c)) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < line.size() && is_word(line[end])) ++end;
      std::string word = line.substr(i, end - i);
      i = end;
      if (word != "asm" && word != "__asm" && word != "__asm__") continue;
      ScreenViolation v;
      v.file = path;
      v.symbol = v.readable = word;
      v.rule = "inline assembly";
      v.summary = path + ":" + std::to_string(number) + " uses inline assembly (" + word + ")";
      v.message = "line " + std::to_string(number) + " names `" + word +
                  "`: kernels may not use inline assembly (on a CPU device it runs as native "
                  "code, able to make system calls and read the cycle counter); write the kernel "
                  "in OpenCL C and its built-in functions.";
      out.push_back(std::move(v));
    }
  }
  return out;
}

ScreenResult screen_candidate(const ScreenRequest& request, ProcessRunner& runner) {
  auto start = std::chrono::steady_clock::now();
  Screener screener(request, runner);
  ScreenResult result = screener.run();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<fs::path> link_libraries(Language language, ProcessRunner& runner,
                                     const std::string& cxx) {
  std::vector<std::string> names = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"};
  if (language == Language::kCpp) names.push_back("libgomp.so.1");
  std::vector<fs::path> out;
  for (const auto& name : names) {
    ToolRun run =
        run_tool(runner, {cxx, "-print-file-name=" + name}, fs::temp_directory_path(), 30);
    if (!run.ok) continue;
    std::string path = run.output.substr(0, run.output.find('\n'));
    std::error_code ec;
    // The compiler echoes the bare name when it does not find the file.
    if (fs::path(path).is_absolute() && fs::exists(path, ec))
      out.push_back(fs::weakly_canonical(path, ec));
  }
  return out;
}

}  // namespace kf
