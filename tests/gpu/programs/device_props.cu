// device_props: every cudaDeviceProp field and every cudaDeviceAttr value of
// every device as sorted key=value lines, so native and scuda runs can be
// diffed. Nothing here changes between runs (no free memory, no clocks in use).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define NAME "device_props"
#include "check.h"

static std::vector<std::string> lines;

static void put(const std::string& key, const std::string& value) {
  lines.push_back(key + "=" + value);
}

static std::string hex(const void* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    snprintf(b, sizeof b, "%02x", ((const unsigned char*)p)[i]);
    s += b;
  }
  return s;
}

template <class T, size_t N>
static void put_array(const std::string& key, const T (&a)[N]) {
  for (size_t i = 0; i < N; ++i) put(key + "[" + std::to_string(i) + "]", std::to_string(a[i]));
}

static void props(int dev) {
  cudaDeviceProp p;
  memset(&p, 0, sizeof p);  // cudart leaves some reserved[] slots unwritten
  CK(cudaGetDeviceProperties(&p, dev));
  std::string k = "dev" + std::to_string(dev) + ".prop.";
#define S(f) put(k + #f, std::to_string(p.f))
#define A(f) put_array(k + #f, p.f)
  put(k + "name", p.name);
  put(k + "uuid", hex(&p.uuid, sizeof p.uuid));
  put(k + "luid", hex(p.luid, sizeof p.luid));
  S(luidDeviceNodeMask);
  S(totalGlobalMem);
  S(sharedMemPerBlock);
  S(regsPerBlock);
  S(warpSize);
  S(memPitch);
  S(maxThreadsPerBlock);
  A(maxThreadsDim);
  A(maxGridSize);
  S(totalConstMem);
  S(major);
  S(minor);
  S(textureAlignment);
  S(texturePitchAlignment);
  S(multiProcessorCount);
  S(integrated);
  S(canMapHostMemory);
  S(maxTexture1D);
  S(maxTexture1DMipmap);
  A(maxTexture2D);
  A(maxTexture2DMipmap);
  A(maxTexture2DLinear);
  A(maxTexture2DGather);
  A(maxTexture3D);
  A(maxTexture3DAlt);
  S(maxTextureCubemap);
  A(maxTexture1DLayered);
  A(maxTexture2DLayered);
  A(maxTextureCubemapLayered);
  S(maxSurface1D);
  A(maxSurface2D);
  A(maxSurface3D);
  A(maxSurface1DLayered);
  A(maxSurface2DLayered);
  S(maxSurfaceCubemap);
  A(maxSurfaceCubemapLayered);
  S(surfaceAlignment);
  S(concurrentKernels);
  S(ECCEnabled);
  S(pciBusID);
  S(pciDeviceID);
  S(pciDomainID);
  S(tccDriver);
  S(asyncEngineCount);
  S(unifiedAddressing);
  S(memoryBusWidth);
  S(l2CacheSize);
  S(persistingL2CacheMaxSize);
  S(maxThreadsPerMultiProcessor);
  S(streamPrioritiesSupported);
  S(globalL1CacheSupported);
  S(localL1CacheSupported);
  S(sharedMemPerMultiprocessor);
  S(regsPerMultiprocessor);
  S(managedMemory);
  S(isMultiGpuBoard);
  S(multiGpuBoardGroupID);
  S(hostNativeAtomicSupported);
  S(pageableMemoryAccess);
  S(concurrentManagedAccess);
  S(computePreemptionSupported);
  S(canUseHostPointerForRegisteredMem);
  S(cooperativeLaunch);
  S(sharedMemPerBlockOptin);
  S(pageableMemoryAccessUsesHostPageTables);
  S(directManagedMemAccessFromHost);
  S(maxBlocksPerMultiProcessor);
  S(accessPolicyMaxWindowSize);
  S(reservedSharedMemPerBlock);
  S(hostRegisterSupported);
  S(sparseCudaArraySupported);
  S(hostRegisterReadOnlySupported);
  S(timelineSemaphoreInteropSupported);
  S(memoryPoolsSupported);
  S(gpuDirectRDMASupported);
  S(gpuDirectRDMAFlushWritesOptions);
  S(gpuDirectRDMAWritesOrdering);
  S(memoryPoolSupportedHandleTypes);
  S(deferredMappingCudaArraySupported);
  S(ipcEventSupported);
  S(clusterLaunch);
  S(unifiedFunctionPointers);
  S(deviceNumaConfig);
  S(deviceNumaId);
  S(mpsEnabled);
  S(hostNumaId);
  S(gpuPciDeviceID);
  S(gpuPciSubsystemID);
  S(hostNumaMultinodeIpcSupported);
  A(reserved);
#undef S
#undef A
}

// Returns how many attributes were answered.
static int attrs(int dev) {
  int ok = 0;
  char key[64];
  for (int a = 1; a < (int)cudaDevAttrMax; ++a) {
    int v = 0;
    cudaError_t e = cudaDeviceGetAttribute(&v, (cudaDeviceAttr)a, dev);
    snprintf(key, sizeof key, "dev%d.attr.%03d", dev, a);
    if (e == cudaSuccess) {
      put(key, std::to_string(v));
      ok++;
    } else {
      put(std::string(key) + ".error", cudaGetErrorName(e));
      cudaGetLastError();  // clear it so it cannot leak into later calls
    }
  }
  return ok;
}

int main() {
  int drv = 0, rt = 0, n = 0;
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  CK(cudaGetDeviceCount(&n));
  put("driver_version", std::to_string(drv));
  put("runtime_version", std::to_string(rt));
  put("device_count", std::to_string(n));
  if (n < 1) {
    printf("RESULT %s FAIL no devices\n", NAME);
    return 1;
  }
  int answered = 0;
  for (int d = 0; d < n; ++d) {
    props(d);
    answered += attrs(d);
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& l : lines) printf("%s\n", l.c_str());
  printf("RESULT %s PASS devices=%d keys=%zu attrs_answered=%d\n", NAME, n, lines.size(), answered);
  return 0;
}
