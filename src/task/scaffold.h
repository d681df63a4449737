// `kernelfoundry init DIR --language L`: writes a small, working task package to start from.
#pragma once

#include <filesystem>
#include <string>

#include "util/status.h"

namespace kf {

// Writes a scaled-vector task (y = a * x) for `language` (CUDA, OCL or CPP, any case) into
// `dir`, which must not exist or be empty. The package builds and passes its own tests as written.
Status scaffold_task(const std::filesystem::path& dir, const std::string& language);

}  // namespace kf
