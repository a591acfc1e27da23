// Host memory the program registers (cuMemHostRegister), mirrored in the
// session so that kernels can use it (registered_memory.cc), and host
// memory that device work names, mirrored the same way (implicit_mirrors.cc).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "client/transport/connection.h"

namespace scuda::client::registered {

// True when `p` lies inside a registered range; then *flags are its
// registration flags and *device the device address of `p`.
bool find(const void* p, unsigned* flags, CUdeviceptr* device);

// True when [p, p + size) lies inside one registered range; then *device is
// the device address of `p`.
bool covers(const void* p, size_t size, CUdeviceptr* device);

// Device work may name a registered range (a kernel's argument points into
// it, the program asked its device address, a memset or a graph names it):
// from then on it is kept in step with its mirror, pushed before device
// work and pulled after synchronizations. Until then the device cannot
// reach it, so it costs nothing, and copies into it are ordinary host copies.

// Keeps the registered range holding `p`, if any, in step from now on.
void name_for_device(const void* p);
// The same for each range a pointer-sized word of [args, args + size)
// points into; words are read at every 8-byte offset. Lock-free when every
// range is already kept in step.
void name_arguments(const uint8_t* args, size_t size);
// Rewrites each pointer-sized word of [args, args + size) that points into
// a range whose mirror the session placed at another address (that address
// was taken in the session) to the mirror's address, as the device would
// see the program's own address under UVA. Pointers the kernel reads from
// memory are not seen here.
void translate_arguments(uint8_t* args, size_t size);
// The address the device reaches host address `p` at: its mirror's when
// `p` lies in a range mirrored at another address, else `p` itself.
CUdeviceptr translated(CUdeviceptr p);
// True when [p, p + size) lies inside one range kept in step with its
// mirror; then *device is the device address of `p`.
bool in_step_covers(const void* p, size_t size, CUdeviceptr* device);

// The device address of host memory [p, p + size) that a graph's memcpy node
// or a captured copy names: the server's driver reaches client memory only
// through a mirror, so the pages holding the range are mirrored like
// registered memory if they are not yet, and stay so until exit. Fails when
// the range runs across the end of a range mirrored before.
CUresult mirror_for_device(const void* p, size_t size, CUdeviceptr* device);

// cuMemHostRegister: mirrors [p, p + size) in the session. `implicit`: for
// device work that names client memory, not the program's own call.
CUresult register_range(void* p, size_t size, unsigned flags, bool implicit = false);
// cuMemHostUnregister: the bytes the device wrote since the last
// synchronization are pulled first.
CUresult unregister_range(void* p);

// True when any range is registered: one atomic load.
bool any();
// Stops mirroring the implicit ranges overlapping [p, p + size), which the
// program is about to free (their pages may come back as other memory).
void drop_mirrors(const void* p, size_t size);
// The implicit ranges that overlap [*start, *stop), their bases added to
// *bases, widening it to cover them all; false if a range the program
// registered overlaps it (implicit_mirrors.cc merges mirrors with it).
bool implicit_overlaps(uintptr_t* start, uintptr_t* stop, std::vector<uintptr_t>* bases);

// Writes the runs the device changed, as the callback channel sends them
// ahead of a reached host callback (op::MirrorChanges), into the program's memory;
// runs of ranges no longer registered are dropped. False when a run is
// malformed or runs past its range.
bool apply_changes(protocol::Reader& in);

// With the connection's lock held, before a request that may start device
// work: pushes the bytes the host changed in the ranges kept in step
// (one-way, ahead of the request).
void before_device_work(Connection& conn);
// The flag a synchronizing request carries so that the session sends,
// ahead of its reply, the changes of the ranges pulled before
// (protocol::kWantChanges), or 0 when there is nothing to ask.
uint16_t want_changes();
// With the connection's lock held, after a synchronizing call returned:
// applies the changes that came ahead of its reply, and pulls the bytes the
// device changed in the other ranges kept in step, if device work was sent
// since every stream was last idle (the kept ones too, unless the request
// asked for their changes). `whole_context`: every stream is idle now.
void after_sync(Connection& conn, bool whole_context);

}  // namespace scuda::client::registered
