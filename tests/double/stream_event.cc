// Streams and events. Work runs synchronously, so streams are always idle
// and a recorded event is complete at once; records keep the wall time.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "state.h"
#include "work.h"

using namespace scuda_double;

namespace {

constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;
constexpr unsigned kEventFlags =
    CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

CUresult create_stream(CUstream* out, unsigned flags, int priority) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (out == nullptr || (flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto stream = std::make_unique<Stream>();
  stream->ctx = call.ctx_id;
  stream->flags = flags;
  stream->priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
  *out = as_handle<CUstream>(state().streams.add(std::move(stream)));
  return CUDA_SUCCESS;
}

CUresult record(CUevent event, CUstream stream, unsigned flags) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  Event* e = state().events.find(event);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((flags & ~unsigned{CU_EVENT_RECORD_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (capture_record(event, stream)) return CUDA_SUCCESS;
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

CUresult check_event(CUevent event) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return state().events.find(event) == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

bool timed(const Event* e) {
  return e != nullptr && e->recorded && (e->flags & CU_EVENT_DISABLE_TIMING) == 0;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return create_stream(phStream, Flags, kLeastPriority);
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return create_stream(phStream, flags, priority);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return state().streams.erase(hStream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamSynchronize(CUstream hStream) { return begin_on_stream(hStream).status; }

CUresult cuStreamQuery(CUstream hStream) { return begin_on_stream(hStream).status; }

// A created stream's context; the special streams belong to the current one.
CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Stream* stream = state().streams.find(hStream);
  *pctx = as_handle<CUcontext>(stream ? stream->ctx : call.ctx_id);
  return CUDA_SUCCESS;
}

// A created stream's priority as clamped at its creation; the special
// streams have the default (least) priority.
CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Stream* stream = state().streams.find(hStream);
  *priority = stream ? stream->priority : kLeastPriority;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (leastPriority) *leastPriority = kLeastPriority;
  if (greatestPriority) *greatestPriority = kGreatestPriority;
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (state().events.find(hEvent) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((Flags & ~unsigned{CU_EVENT_WAIT_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  capture_wait(hStream, hEvent);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (phEvent == nullptr || (Flags & ~kEventFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  bool interprocess = (Flags & CU_EVENT_INTERPROCESS) != 0;
  if (interprocess && (Flags & CU_EVENT_DISABLE_TIMING) == 0) return CUDA_ERROR_INVALID_VALUE;
  auto event = std::make_unique<Event>();
  event->ctx = call.ctx_id;
  event->flags = Flags;
  *phEvent = as_handle<CUevent>(state().events.add(std::move(event)));
  return CUDA_SUCCESS;
}

// An interprocess event's handle names it within the server's processes,
// which in the double share nothing: enough for a session to export it.
CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Event* e = state().events.find(event);
  if (pHandle == nullptr || e == nullptr || !(e->flags & CU_EVENT_INTERPROCESS))
    return CUDA_ERROR_INVALID_VALUE;
  *pHandle = CUipcEventHandle{};
  std::memcpy(pHandle->reserved, &event, sizeof event);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return record(hEvent, hStream, 0); }

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return record(hEvent, hStream, flags);
}

CUresult cuEventSynchronize(CUevent hEvent) { return check_event(hEvent); }

CUresult cuEventQuery(CUevent hEvent) { return check_event(hEvent); }

CUresult cuEventDestroy_v2(CUevent hEvent) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return state().events.erase(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Event* start = state().events.find(hStart);
  const Event* end = state().events.find(hEnd);
  if (!timed(start) || !timed(end)) return CUDA_ERROR_INVALID_HANDLE;
  std::chrono::duration<float, std::milli> elapsed = end->when - start->when;
  *pMilliseconds = elapsed.count();
  return CUDA_SUCCESS;
}

}  // extern "C"

extern "C" {

// The double's streams have finished all earlier work by now: run it at once.
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  {
    Call call = begin_on_stream(hStream);
    if (call.status != CUDA_SUCCESS) return call.status;
    if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  }
  fn(userData);
  return CUDA_SUCCESS;
}

}  // extern "C"
