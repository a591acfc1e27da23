// Stopwatch for the `# ` timing lines of a sample: run.sh shows them beside
// the verdicts and leaves them out of the native/scuda output comparison.
#pragma once

#include <chrono>

// Milliseconds since the Stopwatch was made.
class Stopwatch {
 public:
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};
