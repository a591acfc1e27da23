// One request to a scuda server from the CLI, on a connection of its own:
// the handshake (`scuda HOST:PORT`) or a status request (`scuda status`).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace scuda {

struct ServerRequest {
  std::string address;  // HOST:PORT
  uint32_t op;          // HELLO or a status request: both carry a HELLO
  std::string token;
  std::string refused_what;       // "this machine": the server refused <it>: why
  std::chrono::seconds wait{60};  // for the reply, once connected
};

// Sends the request and returns the reply's data after its CUDA_SUCCESS in
// *body. False with *error naming the cause: nothing listens there, it cannot
// be reached, it is not a scuda server, or it refused (a wrong token).
bool ask_server(const ServerRequest& request, std::vector<uint8_t>* body, std::string* error);

}  // namespace scuda
