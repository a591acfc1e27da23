// Host faults on pages the client keeps protected (page_faults.h serves them). The
// SIGSEGV handler does only async-signal-safe work: it hands the address to a
// service thread through a pipe and sleeps on a futex until the thread has
// made the page accessible (it may take locks and talk to the server). Faults
// outside claimed ranges go to the program's previous handler.
#pragma once

#include <cstdint>

namespace scuda::client::faults {

// Runs on the service thread: makes `address` accessible (writable when
// `write`: the faulting access stores) and returns true, or returns false
// when the address is not (or no longer) one of ours.
using Resolver = bool (*)(uintptr_t address, bool write);
// Runs on the service thread once a fault's thread is woken and no other
// fault waits: work the program need not wait for (pushing what it wrote).
using Background = void (*)();

// Installs the handler and starts the service thread, once; false (logged)
// if either cannot be done.
bool install(Resolver resolve, Background background);

// Claims [begin, end) for the handler; false when the table is full.
bool claim(uintptr_t begin, uintptr_t end);
void release(uintptr_t begin);

}  // namespace scuda::client::faults
