#include "client/state.h"

namespace scuda::client {

// Constant-initialised: there before the first static constructor of any
// library runs, whatever the order in which they run.
constinit ClientState g_client_state;

}  // namespace scuda::client
