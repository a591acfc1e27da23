// Process-wide state of the driver double, guarded by one mutex.
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "module_image.h"
#include "registry.h"

namespace scuda_double {

// The double's device has this many multiprocessors (attributes, affinity).
constexpr unsigned kDoubleSmCount = 4;

// The double shows at most this many devices.
constexpr int kMaxDevices = 8;

// Each device's memory: SCUDA_DOUBLE_TOTAL_MEMORY bytes, else 1 GiB.
size_t total_memory();
// The devices shown: SCUDA_DOUBLE_DEVICES (1 to kMaxDevices, else 1), of
// which CUDA_VISIBLE_DEVICES picks some, as it does of the driver's.
int device_count();
// The double's own index of visible device `dev`, which its UUID and PCI
// address follow, so that a test can tell which one CUDA_VISIBLE_DEVICES kept.
int physical_device(CUdevice dev);
// The UUID of the double's device `physical`: "scuda-test-dbl01" for its
// first, ending in 2, 3, ... for the others.
CUuuid device_uuid(int physical);
// The PCI bus of visible device `dev`: 0x42 for the double's first.
inline int pci_bus(CUdevice dev) { return 0x42 + physical_device(dev); }

struct Context {
  CUdevice device = 0;
  unsigned flags = 0;
  bool primary = false;
  int refcount = 0;  // primary context only
  CUresult sticky = CUDA_SUCCESS;
  std::map<CUlimit, size_t> limits;  // those set; the rest read as defaults
  unsigned sm_count = 0;             // execution affinity asked at creation; 0: the whole device
  std::set<uintptr_t> peers;  // contexts whose memory cuCtxEnablePeerAccess opened to this one
};

struct Allocation {
  size_t size = 0;
  uintptr_t ctx = 0;
  uintptr_t module = 0;      // non-zero for a module global
  bool managed = false;      // cuMemAllocManaged: its own mapping (managed.cc)
  bool registered = false;   // cuMemHostRegister: the caller's memory (host_register.cc)
  uintptr_t physical = 0;    // cuMemMap: the handle of the memory mapped here (vmm.cc)
  bool read_mostly = false;  // managed: advised CU_MEM_ADVISE_SET_READ_MOSTLY
  int last_prefetch = -2;    // managed: the device of the last prefetch (CU_DEVICE_INVALID)
  CUdevice device = 0;       // whose memory it is
  unsigned access = 0;       // cuMemMap: a bit per device that cuMemSetAccess let read and write it
};

// Memory of cuMemCreate: a memfd, which cuMemMap maps, so that another
// process that imports its descriptor shares the bytes.
struct Physical {
  size_t size = 0;
  int fd = -1;
  bool exportable = false;  // created asking for POSIX descriptors, or imported
  uintptr_t mapped_at = 0;
  int refs = 1;         // the creation or import and each cuMemRetainAllocationHandle
  CUdevice device = 0;  // whose memory it is
};

struct Stream {
  uintptr_t ctx = 0;
  unsigned flags = 0;
  int priority = 0;
};

struct Event {
  uintptr_t ctx = 0;
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

struct Module {
  uintptr_t ctx = 0;
  ImageDesc image;
  std::map<std::string, uintptr_t> functions;  // name -> function handle
  std::map<std::string, uintptr_t> globals;    // name -> device address
};

struct Function {
  const KernelDesc* kernel = nullptr;
  uintptr_t module = 0;
  uintptr_t library = 0;
};

struct Library {
  ImageDesc image;
  std::map<std::string, uintptr_t> kernels;  // name -> kernel handle
  // Loaded with CU_LIBRARY_BINARY_IS_PRESERVED: the caller's image, which
  // lookups read again, as the driver may, and the text it held then.
  const char* preserved = nullptr;
  std::string text;
};

struct Kernel {
  const KernelDesc* desc = nullptr;
  uintptr_t library = 0;
  uintptr_t function = 0;
};

// A CUDA array: its elements in host RAM, rows packed (pitch = width * element).
struct Array {
  uintptr_t ctx = 0;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  size_t element = 0;  // bytes per element, all channels
  std::vector<uint8_t> bytes;
  size_t row() const { return desc.Width * element; }
  size_t rows() const { return desc.Height ? desc.Height : 1; }
  size_t slices() const { return desc.Depth ? desc.Depth : 1; }
};

// A texture or surface object, recorded as created.
struct ResourceObject {
  bool surface = false;
  CUDA_RESOURCE_DESC res{};
  CUDA_TEXTURE_DESC tex{};
  bool has_view = false;
  CUDA_RESOURCE_VIEW_DESC view{};
};

struct State {
  std::mutex mu;
  bool initialized = false;
  uintptr_t primary[kMaxDevices] = {};          // each device's primary context
  size_t used[kMaxDevices] = {};                // each device's memory in use
  std::map<uintptr_t, Allocation> allocations;  // keyed by base address
  Registry<Context> contexts{0x10000000};
  Registry<Stream> streams{0x20000000};
  Registry<Event> events{0x30000000};
  Registry<Module> modules{0x40000000};
  Registry<Function> functions{0x50000000};
  Registry<Library> libraries{0x60000000};
  Registry<Kernel> kernels{0x70000000};
  Registry<Array> arrays{0x80000000};
  Registry<ResourceObject> objects{0x90000000};
  Registry<Physical> physical{0xA0000000};
  std::map<uintptr_t, size_t> reservations;  // cuMemAddressReserve: base -> size
};

State& state();

// An entry point holds the lock for its whole body through a Call.
struct Call {
  std::unique_lock<std::mutex> lock;
  CUresult status = CUDA_SUCCESS;
  uintptr_t ctx_id = 0;
  Context* ctx = nullptr;
};

// Locks; status is NOT_INITIALIZED before cuInit.
Call begin();
// Also requires a usable current context; status carries its sticky error.
Call begin_in_context();
// Also requires the stream to be live (or a special stream): else INVALID_HANDLE.
Call begin_on_stream(CUstream stream);

Context* usable_context(uintptr_t id);
// The device of context `ctx`; 0 for an unknown one.
CUdevice device_of(uintptr_t ctx);
bool valid_device(CUdevice dev);
bool valid_stream(CUstream stream);

// Frees everything a context owns: memory, streams, events, modules.
void release_context_resources(uintptr_t ctx);

}  // namespace scuda_double
