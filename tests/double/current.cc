#include "current.h"

#include <algorithm>
#include <vector>

namespace scuda_double {
namespace {

std::vector<uintptr_t>& stack() {
  thread_local std::vector<uintptr_t> contexts;
  return contexts;
}

}  // namespace

uintptr_t current_context() { return stack().empty() ? 0 : stack().back(); }

void push_context(uintptr_t ctx) { stack().push_back(ctx); }

uintptr_t pop_context() {
  if (stack().empty()) return 0;
  uintptr_t top = stack().back();
  stack().pop_back();
  return top;
}

void replace_current(uintptr_t ctx) {
  if (ctx == 0) {
    pop_context();
  } else if (stack().empty()) {
    stack().push_back(ctx);
  } else {
    stack().back() = ctx;
  }
}

void forget_context(uintptr_t ctx) { std::erase(stack(), ctx); }

}  // namespace scuda_double
