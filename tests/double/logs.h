// The driver's error log (cuLogsCurrent, cuLogsDumpToMemory): lines the
// double's entry points add when they fail in ways the real driver logs.
#pragma once

#include <string>

namespace scuda_double {

// Appends one line to the log. Callers hold the state lock.
void log_error(const std::string& line);

}  // namespace scuda_double
