// Per-thread context stack, as the real driver keeps it.
#pragma once

#include <cstdint>

namespace scuda_double {

uintptr_t current_context();  // 0 when none
void push_context(uintptr_t ctx);
uintptr_t pop_context();              // 0 when the stack was empty
void replace_current(uintptr_t ctx);  // cuCtxSetCurrent semantics
void forget_context(uintptr_t ctx);   // drop from this thread's stack

}  // namespace scuda_double
