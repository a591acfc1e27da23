// Clocks and the sampling loop shared by every measurement.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace scuda::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU time of every thread of this process, so the client library's own
// threads count too.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time of the calling thread alone: what a call costs the program's
// thread, without the client library's threads that carry its work on.
inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// How often to repeat a measurement: `warmup` untimed runs, then timed runs
// until `max_samples` or until `budget_s` has passed (at least `min_samples`,
// so a 150 ms link still gets a median).
struct Plan {
  int warmup = 10;
  int min_samples = 3;
  int max_samples = 1000;
  double budget_s = 10;
};

// Runs `one` (returning the sample, e.g. seconds) as the plan says.
template <class F>
auto collect(const Plan& plan, F&& one) {
  for (int i = 0; i < plan.warmup; ++i) one();
  std::vector<decltype(one())> samples;
  const Clock::time_point start = Clock::now();
  while (
      static_cast<int>(samples.size()) < plan.max_samples &&
      (static_cast<int>(samples.size()) < plan.min_samples || seconds_since(start) < plan.budget_s))
    samples.push_back(one());
  return samples;
}

}  // namespace scuda::bench
