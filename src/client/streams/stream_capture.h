// Whether a stream capture this process began is still active: while none
// is, no stream can be capturing, and the client answers capture queries
// itself and sends copies and callbacks without asking whether they were
// captured.
#pragma once

namespace scuda::client {

bool capture_active();

}  // namespace scuda::client
