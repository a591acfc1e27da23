// ClientState: everything the client keeps for the whole process, in one
// object with one lifetime.
//
// The object itself is constant-initialised and trivially destructible: it
// exists before any static constructor runs and is never destroyed, because
// a statically linked cudart calls entry points before main begins and the
// program's exit handlers (cudart's, cuBLAS's) and the driver's callback
// threads call them after main returns. Each part's state in it is made at
// that part's first use, from any thread, and is never destroyed either; the
// process's end frees it.
//
// Each part's state type is declared here and defined in the one file that
// owns it: Part<T>::get() compiles only where T is complete, so no other
// file can reach into a part's state; it goes through that file's
// functions. The locks inside the parts are named, with their order, in
// docs/locking.md.
#pragma once

#include <atomic>
#include <mutex>
#include <type_traits>

namespace scuda::client {

namespace parts {
struct Contexts;
struct ContextLimits;
struct ContextVersions;
struct AsyncNotifications;
struct StreamDevices;
class ActiveCaptures;
struct HostCallbacks;
struct FinishedWork;
struct Allocations;
struct MappedPlacements;
struct HostMemory;
struct LiveMirrors;
struct OpenedIpcMemory;
struct PointerAttributes;
struct ManagedAllocations;
struct Arrays;
struct KernelLayouts;
struct AttributeCache;
struct OwedDescriptions;
struct KnownLookups;
struct LastingNames;
struct HeldImages;
struct LibraryProbes;
struct GraphNodeStorage;
struct DirectPeerCopies;
struct ContextStorage;
struct HandleErrors;
struct LogCallbacks;
struct LocalDriver;
struct ImageNameFile;
struct CompileCache;
}  // namespace parts

namespace answers::parts {
struct AnswerFile;
}
namespace stats::parts {
class Stats;
}
namespace registered::parts {
struct RegisteredMemory;
}
namespace coherence::detail {
struct Pages;
}

// One part's state: made by T's default constructor at the first get() from
// any thread, never destroyed.
template <class T>
class Part {
 public:
  constexpr Part() = default;
  Part(const Part&) = delete;
  Part& operator=(const Part&) = delete;

  // The part's state; compiles only in the file where T is defined.
  T& get() {
    if (T* made = object_.load(std::memory_order_acquire)) return *made;
    std::call_once(once_, [this] { object_.store(new T, std::memory_order_release); });
    return *object_.load(std::memory_order_acquire);
  }

 private:
  std::atomic<T*> object_{nullptr};
  std::once_flag once_;
};

// Every part's state, by folder, lowest layer first.
struct ClientState {
  // contexts/
  Part<parts::Contexts> contexts;
  Part<parts::ContextLimits> context_limits;
  Part<parts::ContextVersions> context_versions;
  Part<parts::AsyncNotifications> async_notifications;
  // streams/
  Part<parts::StreamDevices> stream_devices;
  Part<parts::ActiveCaptures> active_captures;
  Part<parts::HostCallbacks> host_callbacks;
  Part<parts::FinishedWork> finished_work;
  // memory/
  Part<parts::Allocations> allocations;
  Part<parts::MappedPlacements> mapped_placements;
  Part<parts::HostMemory> host_memory;
  Part<parts::LiveMirrors> live_mirrors;
  Part<registered::parts::RegisteredMemory> registered_memory;
  Part<parts::OpenedIpcMemory> opened_ipc_memory;
  Part<parts::PointerAttributes> pointer_attributes;
  // managed/
  Part<parts::ManagedAllocations> managed_allocations;
  Part<coherence::detail::Pages> page_table;
  // copies/
  Part<parts::Arrays> arrays;
  // kernels/
  Part<parts::KernelLayouts> kernel_layouts;
  Part<parts::AttributeCache> attribute_cache;
  Part<parts::OwedDescriptions> owed_descriptions;
  // modules/
  Part<parts::KnownLookups> known_lookups;
  Part<parts::LastingNames> lasting_names;
  Part<parts::HeldImages> held_images;
  Part<parts::LibraryProbes> library_probes;
  Part<answers::parts::AnswerFile> answer_file;
  Part<parts::ImageNameFile> image_name_file;
  // graphs/
  Part<parts::GraphNodeStorage> graph_node_storage;
  // pools/
  Part<parts::DirectPeerCopies> direct_peer_copies;
  // dark_api/
  Part<parts::ContextStorage> context_storage;
  Part<parts::CompileCache> compile_cache;
  // the top level
  Part<parts::LocalDriver> local_driver;
  Part<stats::parts::Stats> stats;
  Part<parts::HandleErrors> handle_errors;
  Part<parts::LogCallbacks> log_callbacks;
};

static_assert(std::is_trivially_destructible_v<ClientState>,
              "ClientState must outlive every exit handler: nothing in it may be destroyed");

// The client's one state object, defined in state.cc.
extern constinit ClientState g_client_state;

// The client's one state object.
inline ClientState& client_state() { return g_client_state; }

}  // namespace scuda::client
