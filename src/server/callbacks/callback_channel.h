// The session's callback channel (docs/protocol.md, "Host callbacks"): a
// second TCP connection from the client, on which the stand-in host function
// of each host callback says that its stream reached it, then waits until
// the client has run it, so that the stream's later work waits too. The
// client joins it through the session's join point (join_point.h).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "protocol/codec.h"

#include "common/socket.h"
#include "server/memory/host_mirrors.h"
#include "server/session/join_point.h"

namespace scuda::server {

class CallbackChannel {
 public:
  // Starts waiting for the client to join, the first time; says the local
  // socket's name and the secret that the join must carry.
  bool open(std::string* name, std::string* secret, std::string* error);

  // From a driver thread: tells the client that callback `id` was reached,
  // after what the device changed in the session's mirrors of client memory
  // (host_mirrors.h), and returns once it has run, one callback at a time.
  // Returns at once when there is no channel (the client went away).
  void reached(uint64_t id);
  // From the driver's thread that logs: hands `message` to the client's log
  // callback `id` and returns once it has run, as reached() does.
  void log_message(uint64_t id, CUlogLevel level, std::string_view message);
  // From a driver thread: hands `info` to the client's asynchronous
  // notification callback `id` and returns once it has run, as reached() does.
  void notification(uint64_t id, const CUasyncNotificationInfo& info);
  // The session's mirrors, whose changes go ahead of each reached callback.
  void set_mirrors(HostMirrors* mirrors) { mirrors_ = mirrors; }

 private:
  // Keeps the first connection admitted.
  bool take(Socket client);
  // With mu_ held: sends the frame `w` as `op` and waits for the client's
  // "done" of `id`.
  void run_on_client(uint32_t op, uint64_t id, const protocol::Writer& w);
  void lose(bool client_left, const std::string& why);

  JoinPoint join_;
  std::mutex mu_;  // held for each callback, from "reached" to "done"
  Socket socket_;
  HostMirrors* mirrors_ = nullptr;
};

// A session is its own process, so the channel is the process's.
CallbackChannel& callback_channel();

// The stand-in host function of a stream's host callback and of a graph's
// host node: its data is the client's callback id, so that a graph can run
// it as often as it is launched.
void CUDA_CB host_function_reached(void* id);

// The stand-in of a client's log callback (cuLogsRegisterCallback): its
// data is the client's callback id.
void CUDA_CB log_callback_reached(void* id, CUlogLevel level, char* message, size_t length);

// The stand-in of a client's asynchronous notification callback
// (cuDeviceRegisterAsyncNotification): its data is the client's handle id.
void CUDA_CB async_notification_reached(CUasyncNotificationInfo* info, void* id,
                                        CUasyncCallbackHandle handle);

}  // namespace scuda::server
