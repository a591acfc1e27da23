#include "common/array_formats.h"

namespace scuda {

namespace {

size_t format_bytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

}  // namespace

size_t format_element_bytes(CUarray_format format, unsigned channels) {
  return channels == 1 || channels == 2 || channels == 4 ? format_bytes(format) * channels : 0;
}

}  // namespace scuda
