// Part<T>: one T per part, made at the first get() from any thread.
#include "client/state.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

std::atomic<int> g_made{0};

struct Counted {
  Counted() { g_made.fetch_add(1); }
  int value = 41;
};

TEST(ClientState, APartIsMadeAtItsFirstGet) {
  g_made = 0;
  static scuda::client::Part<Counted> part;  // never destroyed, as the client's
  EXPECT_EQ(g_made.load(), 0);
  EXPECT_EQ(part.get().value, 41);
  EXPECT_EQ(g_made.load(), 1);
  part.get().value = 42;
  EXPECT_EQ(part.get().value, 42);
  EXPECT_EQ(g_made.load(), 1);
}

TEST(ClientState, ThreadsThatGetAtOnceShareOneObject) {
  g_made = 0;
  static scuda::client::Part<Counted> part;  // never destroyed, as the client's
  std::atomic<bool> go{false};
  std::vector<Counted*> seen(16);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) {
      }
      seen[i] = &part.get();
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(g_made.load(), 1);
  for (Counted* p : seen) EXPECT_EQ(p, seen.front());
}

}  // namespace
