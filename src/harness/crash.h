// Last words on a fatal signal: one stderr line saying what the harness was doing (which
// implementation, shape, seed and call), so a crash in candidate code is attributable.
#pragma once

#include <cstddef>
#include <string>

namespace kernelfoundry {

void install_crash_handlers();
// Cheap; called before every run() so the handler can name the call.
void set_crash_context(const std::string& what);

// Guard pages after host buffers (backend_host.cpp): a SIGSEGV inside [data_end, data_end +
// guard_bytes) is reported as an overrun of buffer `name` of `buffer_bytes` bytes. Called from
// the thread that allocates; safe against the handler. Past 1024 live buffers a new one is not
// named (its overrun gets the plain message).
void register_guard_page(const void* data_end, std::size_t guard_bytes, const std::string& name,
                         std::size_t buffer_bytes);
void unregister_guard_page(const void* data_end);

}  // namespace kernelfoundry
