// Abstract-namespace unix sockets (Linux): names with no file behind them,
// gone with the last socket that holds them. A process the listener forked
// for a callback channel's join hands its TCP connection to the session
// over one (SCM_RIGHTS).
#pragma once

#include <cstddef>
#include <string>

#include "common/socket.h"

namespace scuda::server {

// Sequenced-packet sockets: each send is one message. On failure say why.
Socket listen_local(const std::string& name, std::string* error);
Socket connect_local(const std::string& name, std::string* error);

// True when the peer runs as this process's user.
bool peer_is_same_user(const Socket& s);

// Sends `data` as one message with a copy of descriptor `fd` attached.
bool send_with_fd(Socket& s, const std::string& data, int fd);
// Receives one message of at most `max` bytes into *data and returns the
// descriptor that came with it; an invalid socket when none did, or the
// message was cut short.
Socket receive_with_fd(Socket& s, size_t max, std::string* data);

}  // namespace scuda::server
