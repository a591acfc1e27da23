#include "protocol/jit_options.h"

namespace scuda::protocol {

JitValue jit_value(CUjit_option option) {
  switch (option) {
    case CU_JIT_INFO_LOG_BUFFER:
    case CU_JIT_ERROR_LOG_BUFFER: return JitValue::kLogBuffer;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: return JitValue::kLogSize;
    case CU_JIT_WALL_TIME: return JitValue::kWallTime;
    case CU_JIT_GLOBAL_SYMBOL_NAMES:
    case CU_JIT_GLOBAL_SYMBOL_ADDRESSES:
    case CU_JIT_REFERENCED_KERNEL_NAMES:
    case CU_JIT_REFERENCED_VARIABLE_NAMES: return JitValue::kRefused;
    default: return JitValue::kNumber;
  }
}

}  // namespace scuda::protocol
