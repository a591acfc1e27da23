// The headers most files of src/ include, compiled once per library target
// (src/CMakeLists.txt, target_precompile_headers): parsing them was half of
// each file's compile time. Only headers that no file configures with a
// macro of its own (not cuda.h, whose per-thread variants do) belong here.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#ifdef SCUDA_FMT_COMPILED_ONCE
#include "common/fmt_extern.h"
#endif
