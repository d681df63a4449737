// The kernelfoundry command: parses arguments and dispatches to the library (no logic here).
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/redacted_output.h"
#include "util/secrets.h"

namespace {

struct Command {
  const char* name;
  const char* usage;
  int (*run)(const std::vector<std::string>& args);
};

const Command kCommands[] = {
    {"run",
     "run task=<package> [key=value ...]   evaluate (validate=true / max_iters=0) or optimise",
     kf::cmd_run},
    {"eval", "eval task=<package> FILE... [key=value ...]   evaluate replacement EVOLVE blocks",
     kf::cmd_eval},
    {"tune",
     "tune task=<package> [FILE] [key=value ...]   tune a templated kernel's combinations, no LLM",
     kf::cmd_tune},
    {"test", "test DIR [--ref] [key=value ...]   run a package's tests once, as its author would",
     kf::cmd_test},
    {"init", "init DIR --language CUDA|OCL|CPP   scaffold a working task package", kf::cmd_init},
    {"config",
     "config show [task=<package>] [key=value ...]   print the composed config and origins",
     kf::cmd_config},
    {"jobs", "jobs [key=value ...]   list the jobs in the kernel database", kf::cmd_jobs},
    {"kernels", "kernels [job=NAME] [task=NAME] [limit=N] [key=value ...]   list stored kernels",
     kf::cmd_kernels},
};

void usage(std::ostream& out) {
  out << "usage: kernelfoundry <command> [args]\n\ncommands:\n";
  for (const auto& c : kCommands) out << "  " << c.usage << "\n";
  out << "\nConfig arguments: key=value, a.b=value, group=option (e.g. inference=ensemble), "
         "+experiment=name.\nDocs: docs/cli.md, docs/config.md, docs/task-package.md\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Under a file size limit (ulimit -f) a write past it fails with EFBIG, which is reported with
  // the path, instead of killing the whole job with SIGXFSZ. Children get the default back.
  std::signal(SIGXFSZ, SIG_IGN);
  // No key reaches the terminal or a log: the provider keys and every .env value now, the
  // variables the config names once it is composed (commands.cpp, search/job.cpp).
  kf::register_env_secrets({"OPENAI_API_KEY", "ANTHROPIC_API_KEY"});
  kf::RedactedStdStreams redacted;
  try {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
      usage(std::cout);
      return argc < 2 ? 2 : 0;
    }
    if (!std::strcmp(argv[1], "--version")) {
      std::cout << "kernelfoundry " << KF_VERSION << "\n";
      return 0;
    }
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const auto& c : kCommands) {
      if (c.name == std::string(argv[1])) return c.run(args);
    }
    std::cerr << "kernelfoundry: unknown command '" << argv[1] << "'\n\n";
    usage(std::cerr);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kernelfoundry: internal error: " << e.what() << "\n";
    return 70;
  }
}
