// Static screening of a candidate before anything of it runs: the symbols its objects define and
// import (nm), raw system-call instructions in its host code (objdump), and the #include lines of
// its OpenCL C sources. A violation is a failed verdict whose log names the symbol, the rule and
// the fix; a missing or failing tool is the machine's fault and is reported apart.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "lang/lang.h"
#include "proc/process.h"

namespace kf {

struct ScreenRequest {
  Language language = Language::kCpp;
  // Objects compiled from the files the LLM changed (the files holding EVOLVE blocks).
  std::vector<std::filesystem::path> candidate_objects;
  // The package's other compiled objects (task.cpp, ...): trusted. The symbols they leave
  // undefined and a candidate defines are the task's entry points.
  std::vector<std::filesystem::path> task_objects;
  // Optional: objects of the task's reference (files holding a REFERENCE block). A candidate may
  // neither define nor call what they define. Without them, calling the reference is still
  // refused as "not on the allowlist", and defining it as "not an entry point" unless task.cpp
  // leaves it undefined in the candidate's build (then pass these, or the reference's symbols
  // pass as entry points).
  std::vector<std::filesystem::path> reference_objects;
  // Optional: libraries the binary links (the harness's libkf_harness_*.a, libc.so.6,
  // libstdc++.so.6, ...; see link_libraries()). A candidate may not define a symbol one of them
  // defines (a weak definition of a weak library symbol, i.e. a shared template instantiation, is
  // fine). Without them, the built-in name rules (kernelfoundry::, C library names, std::) apply.
  std::vector<std::filesystem::path> library_files;
  // OpenCL C sources of the candidate: (path relative to the package root, text). In an OCL
  // task, every file holding an EVOLVE block that is not compiled as host code (a header a .cl
  // includes as well as the .cl itself): checked for includes and inline assembly.
  std::vector<std::pair<std::string, std::string>> opencl_sources;
  // OCL: the EVOLVE files compiled as host code, as (path, text). Checked for inline assembly
  // names too, as an OpenCL build could still include them (a `#undef __asm__` there would undo
  // the harness's build options).
  std::vector<std::pair<std::string, std::string>> host_evolve_sources;
  // Paths relative to the package root of the files a .cl source may #include (the package's
  // files WITHOUT the reference's).
  std::vector<std::string> package_files;
  // Cwd/HOME for the tool children (nm, objdump); empty = the system temp directory.
  std::filesystem::path work_dir;
  double tool_timeout_s = 60;
};

struct ScreenViolation {
  std::string file;      // object file name or .cl path (relative) the violation is in
  std::string symbol;    // as in the object (mangled), the instruction, or the include target
  std::string readable;  // demangled symbol (same as `symbol` for C names)
  std::string rule;      // "definition", "import", "instruction", "include"
  std::string summary;   // short: "defines clock_gettime", "imports fopen (file and network I/O)"
  std::string message;   // full: what, why, and what to do instead
};

struct ScreenResult {
  bool ok = true;      // false on a violation or an environment error
  std::string reason;  // one line for the verdict
  std::string log;     // for the eval log: each violation (first 20) and a count
  std::vector<ScreenViolation> violations;  // all of them
  // Set when screening could not be done because of the machine (nm/objdump missing or failing,
  // an object missing): the candidate is not to blame. `ok` is then false and `reason` says why.
  std::string environment_error;
  double seconds = 0;
};

ScreenResult screen_candidate(const ScreenRequest& request, ProcessRunner& runner);

// The shared libraries a binary of `language` links and loads (libc, libm, libstdc++, libgcc_s,
// and libgomp for CPP), as the compiler `cxx` finds them (`cxx -print-file-name=`); those it
// cannot find are left out. Pass them, plus the harness library, as ScreenRequest::library_files.
std::vector<std::filesystem::path> link_libraries(Language language, ProcessRunner& runner,
                                                  const std::string& cxx = "g++");

// Exposed for tests: the #include checks of one OpenCL C source.
std::vector<ScreenViolation> screen_opencl_includes(const std::string& path,
                                                    const std::string& text,
                                                    const std::vector<std::string>& package_files);

// Exposed for tests: inline assembly in one OpenCL C source (`asm`, `__asm`, `__asm__` named
// anywhere outside comments and literals, `#undef` and `#define` included). On a CPU device
// (PoCL) it is native code: system calls, the cycle counter, the harness's memory. A name formed
// by token pasting meets the harness's build options, which define all three as macros.
std::vector<ScreenViolation> screen_opencl_assembly(const std::string& path,
                                                    const std::string& text);

}  // namespace kf
