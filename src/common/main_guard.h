// What a program's main does with an exception that nothing else caught.
#pragma once

#include <cstdio>
#include <exception>

namespace scuda {

// Runs body() and returns what it returns; an exception it lets out is told
// on stderr in one line as "PROGRAM: WHAT", and main returns 1, instead of
// the C++ runtime's abort.
template <class Body>
int run_main(const char* program, Body body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: an unknown error\n", program);
  }
  return 1;
}

}  // namespace scuda
