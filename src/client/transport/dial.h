// Opening a connection to a scuda server: connect, send the Hello, read the
// answer. The session's connection and its callback channel both start so.
#pragma once

#include <string>

#include "common/socket.h"
#include "protocol/frame.h"
#include "protocol/handshake.h"

namespace scuda::client {

// Connects to `address` (HOST:PORT, or tls://HOST:PORT; common/tls_client.h
// says when TLS is on) and sends `hello`; returns the socket with the
// server's reply in *reply, or an invalid socket and says why, in words
// meant for the user (a refusal carries the server's message; an address
// nothing answers on, where to check the server and the address). A join
// names its `route` (the session's join point), which goes first, in the
// clear, ahead of any TLS (docs/protocol.md, "TLS").
Socket dial(const std::string& address, const protocol::Hello& hello, protocol::Frame* reply,
            std::string* error, const std::string& route = "");

}  // namespace scuda::client
