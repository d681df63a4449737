// The verdict ladder (DESIGN.md §6.1): an integer score with a reason.
#pragma once

#include <string_view>

namespace kf {

enum Verdict : int {
  kNoCode = 0,         // no code could be extracted from the answer
  kCompileError = 1,   // did not compile (or the build timed out)
  kRuntimeError = 2,   // crash, hang/timeout, device fault
  kShapeMismatch = 3,  // output shape/size mismatch
  kWrongValues = 4,    // wrong values
  kCorrect = 5,        // correct
};

inline std::string_view verdict_name(int verdict) {
  switch (verdict) {
    case kNoCode:
      return "no code";
    case kCompileError:
      return "compile error";
    case kRuntimeError:
      return "runtime error";
    case kShapeMismatch:
      return "shape mismatch";
    case kWrongValues:
      return "wrong values";
    case kCorrect:
      return "correct";
  }
  return "unknown";
}

}  // namespace kf
