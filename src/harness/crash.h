// Last words on a fatal signal: one stderr line saying what the harness was doing (which
// implementation, shape, seed and call), so a crash in candidate code is attributable.
#pragma once

#include <string>

namespace kernelfoundry {

void install_crash_handlers();
// Cheap; called before every run() so the handler can name the call.
void set_crash_context(const std::string& what);

}  // namespace kernelfoundry
