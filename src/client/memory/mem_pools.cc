// Memory pools with several servers (docs/pools.md): a pool lives on the
// server of the device its properties name, and a device location in its
// access descriptors or queries names the program's device; each call goes
// to that server, with the server's number. With one server, forwarded.
#include <cuda.h>

#include <vector>

#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "custom.h"
#include "forward.h"

using scuda::client::Route;
using scuda::client::several_servers;

CUresult scuda::client::custom::cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (!props || !several_servers()) return forward::cuMemPoolCreate(pool, props);
  Route route;
  CUmemPoolProps local = *props;
  local.location = route.location(props->location);
  if (!route.ok()) return route.refuse("cuMemPoolCreate");
  return forward::cuMemPoolCreate(pool, &local);
}

CUresult scuda::client::custom::cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                                   size_t count) {
  if (!map || !several_servers()) return forward::cuMemPoolSetAccess(pool, map, count);
  Route route;
  route.handle(handle_id(pool));
  std::vector<CUmemAccessDesc> local(map, map + count);
  for (CUmemAccessDesc& d : local) d.location = route.location(d.location);
  if (!route.ok()) return route.refuse("cuMemPoolSetAccess");
  return forward::cuMemPoolSetAccess(pool, local.data(), count);
}

CUresult scuda::client::custom::cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool,
                                                   CUmemLocation* location) {
  if (!location || !several_servers()) return forward::cuMemPoolGetAccess(flags, pool, location);
  Route route;
  route.handle(handle_id(pool));
  CUmemLocation local = route.location(*location);
  if (!route.ok()) return route.refuse("cuMemPoolGetAccess");
  return forward::cuMemPoolGetAccess(flags, pool, &local);
}
