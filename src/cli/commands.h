// The CLI's subcommands; each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace kf {

int cmd_run(const std::vector<std::string>& args);
int cmd_eval(const std::vector<std::string>& args);
int cmd_tune(const std::vector<std::string>& args);
int cmd_test(const std::vector<std::string>& args);
int cmd_init(const std::vector<std::string>& args);
int cmd_config(const std::vector<std::string>& args);
int cmd_jobs(const std::vector<std::string>& args);
int cmd_kernels(const std::vector<std::string>& args);

}  // namespace kf
