// The one lifetime every process-wide object of scuda has: made at its first
// use, never destroyed. The program's exit handlers (cudart's, cuBLAS's), the
// driver's callback threads and a statically linked cudart's static
// constructors call entry points before main begins and after it returns; an
// object destroyed at exit, or not yet made by a static initialiser, would
// crash them. The process's end frees the memory.
#pragma once

namespace scuda {

// The process's one T, made by T's default constructor at the first call
// from any thread. T is a type of the caller's file (in an unnamed namespace),
// so each file's objects are its own.
template <class T>
T& process_wide() {
  static T* const object = new T;  // never freed: see above
  return *object;
}

}  // namespace scuda
