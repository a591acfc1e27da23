// Whether this process has begun a stream capture: until then no stream can
// be capturing, and the client answers capture queries itself.
#pragma once

namespace scuda::client {

bool capture_begun();

}  // namespace scuda::client
