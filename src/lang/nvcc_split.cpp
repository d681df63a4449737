// Regrouping nvcc's dry-run steps into a host chain, a device chain and the final host compile.
#include "lang/nvcc_split.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "util/strings.h"

namespace kf {
namespace {

bool is_assignment(const std::string& line) {
  size_t eq = line.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  for (size_t i = 0; i < eq; ++i) {
    char c = line[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return !std::isdigit(static_cast<unsigned char>(line[0]));
}

// The first word of a command, without quotes and directories ("$CICC_PATH/cicc" -> cicc).
std::string tool_of(const std::string& command) {
  std::string word = command.substr(0, command.find(' '));
  word.erase(std::remove(word.begin(), word.end(), '"'), word.end());
  size_t slash = word.rfind('/');
  return slash == std::string::npos ? word : word.substr(slash + 1);
}

// The quoted value after `option` in a command ("" when absent).
std::string quoted_after(const std::string& command, const std::string& option) {
  size_t at = command.find(option + " \"");
  if (at == std::string::npos) return "";
  size_t begin = at + option.size() + 2;
  size_t end = command.find('"', begin);
  return end == std::string::npos ? "" : command.substr(begin, end - begin);
}

bool has_word(const std::string& command, const std::string& word) {
  std::istringstream in(command);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

// The file a preprocessing command writes: after -o, quoted or not.
std::string output_of(const std::string& command) {
  std::string quoted = quoted_after(command, "-o");
  if (!quoted.empty()) return quoted;
  std::istringstream in(command);
  std::string w, prev;
  while (in >> w) {
    if (prev == "-o") return w;
    prev = w;
  }
  return "";
}

}  // namespace

Result<NvccSplit> split_nvcc_steps(const std::string& dryrun_output) {
  std::string env = "set -e\n";
  std::vector<std::string> commands;
  for (const std::string& raw : split_lines(dryrun_output)) {
    if (raw.rfind("#$ ", 0) != 0) continue;
    std::string line = raw.substr(3);
    if (is_assignment(line)) {
      // The value as nvcc printed it, taken literally (SYSTEM_INCLUDES holds quoted words).
      size_t eq = line.find('=');
      env += "export " + line.substr(0, eq) + "='" +
             replace_all(trim(line.substr(eq + 1)), "'", "'\\''") + "'\n";
    } else {
      commands.push_back(line);
    }
  }
  int cudafe = -1, host_pre = -1, final_compile = -1;
  for (size_t i = 0; i < commands.size(); ++i) {
    std::string tool = tool_of(commands[i]);
    if (tool == "cudafe++") {
      if (cudafe >= 0) return Result<NvccSplit>::error("nvcc ran cudafe++ twice");
      cudafe = int(i);
    }
  }
  if (cudafe < 0) return Result<NvccSplit>::error("no cudafe++ step");
  const std::string& fe = commands[size_t(cudafe)];
  std::string module_file = quoted_after(fe, "--module_id_file_name");
  if (module_file.empty() || fe.find("--gen_module_id_file ") == std::string::npos)
    return Result<NvccSplit>::error("cudafe++ does not write the module id file");
  for (size_t i = 0; i < commands.size(); ++i) {
    if (int(i) == cudafe) continue;
    const std::string& c = commands[i];
    std::string out = output_of(c);
    if (has_word(c, "-E") && !out.empty() && fe.find(out) != std::string::npos) {
      if (host_pre >= 0) return Result<NvccSplit>::error("two host preprocessing steps");
      host_pre = int(i);
    } else if (has_word(c, "-c")) {
      if (final_compile >= 0) return Result<NvccSplit>::error("two host compile steps");
      final_compile = int(i);
    }
  }
  if (host_pre < 0 || final_compile < 0 || host_pre > cudafe || final_compile < cudafe ||
      final_compile != int(commands.size()) - 1)
    return Result<NvccSplit>::error("unexpected order of nvcc's steps");
  NvccSplit split;
  split.module_id_file = module_file;
  std::string fe_reading = replace_all(fe, "--gen_module_id_file ", "");
  split.host_script = env + commands[size_t(host_pre)] + "\n" + fe_reading + "\n";
  split.device_script = env;
  int device_steps = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (int(i) == host_pre || int(i) == cudafe || int(i) == final_compile) continue;
    std::string tool = tool_of(commands[i]);
    if (tool == "rm") continue;  // --keep leaves none; a temporary left behind is harmless
    // Only the device toolchain may run here: anything else could depend on the host side.
    if (!(tool == "cicc" || tool == "ptxas" || tool == "fatbinary" || has_word(commands[i], "-E")))
      return Result<NvccSplit>::error("unexpected nvcc step '" + tool + "'");
    split.device_script += commands[i] + "\n";
    ++device_steps;
  }
  if (device_steps == 0) return Result<NvccSplit>::error("no device steps");
  split.final_script = env + commands[size_t(final_compile)] + "\n";
  return split;
}

std::string nvcc_module_id(const std::string& key, const std::string& source_name) {
  std::string name;
  for (char c : source_name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "_kf" + key.substr(0, std::min<size_t>(16, key.size())) + "_" + name;
}

}  // namespace kf
