// User objects and the references graphs hold on them. The destructor runs
// in the call that drops the last reference (the driver may run it later,
// on a thread of its own: the objects are made with
// CU_USER_OBJECT_NO_DESTRUCTOR_SYNC).
#include <cuda.h>

#include <memory>

#include "graph.h"
#include "state.h"

using namespace scuda_double;

namespace scuda_double {

bool release_user_object(uintptr_t object, unsigned count) {
  UserObject* u = graphs().user_objects.find(object);
  if (u == nullptr || count == 0 || count > u->refs) return false;
  u->refs -= count;
  if (u->refs > 0) return true;
  const UserObject gone = *u;
  graphs().user_objects.erase(object);
  gone.destroy(gone.ptr);
  return true;
}

}  // namespace scuda_double

extern "C" {

CUresult cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy,
                            unsigned int initialRefcount, unsigned int flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (object_out == nullptr || destroy == nullptr || initialRefcount == 0 ||
      flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
    return CUDA_ERROR_INVALID_VALUE;
  auto u = std::make_unique<UserObject>();
  u->ptr = ptr;
  u->destroy = destroy;
  u->refs = initialRefcount;
  *object_out = reinterpret_cast<CUuserObject>(graphs().user_objects.add(std::move(u)));
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  UserObject* u = graphs().user_objects.find(object);
  if (u == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  u->refs += count;
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  return release_user_object(reinterpret_cast<uintptr_t>(object), count) ? CUDA_SUCCESS
                                                                         : CUDA_ERROR_INVALID_VALUE;
}

// CU_GRAPH_USER_OBJECT_MOVE hands the caller's references to the graph;
// otherwise the graph takes new ones.
CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                 unsigned int flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Graph* g = graphs().graphs.find(graph);
  UserObject* u = graphs().user_objects.find(object);
  if (g == nullptr || u == nullptr || count == 0 || (flags & ~CU_GRAPH_USER_OBJECT_MOVE))
    return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) u->refs += count;
  g->user_refs[reinterpret_cast<uintptr_t>(object)] += count;
  return CUDA_SUCCESS;
}

CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Graph* g = graphs().graphs.find(graph);
  const auto key = reinterpret_cast<uintptr_t>(object);
  if (g == nullptr || count == 0 || g->user_refs[key] < count) return CUDA_ERROR_INVALID_VALUE;
  if ((g->user_refs[key] -= count) == 0) g->user_refs.erase(key);
  return release_user_object(key, count) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
