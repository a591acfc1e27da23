// Included before every C++ file of a build that compiles fmt once
// (src/CMakeLists.txt, scuda_deps; through common/precompiled.h in the
// libraries that precompile it): tells the compiler that fmt's
// formatting core, detail::vformat_to<char>, is compiled in
// common/fmt_spdlog_once.cc, so that a file which logs does not generate it
// and the float and integer writers under it again. fmt 9 declares other
// such instantiations extern in its own headers, but not this one, which is
// most of the code a logging file would otherwise generate.
#pragma once

#include <fmt/format.h>

FMT_BEGIN_NAMESPACE
namespace detail {
extern template FMT_API void vformat_to<char>(buffer<char>&, basic_string_view<char>,
                                              basic_format_args<buffer_context<char>>, locale_ref);
}  // namespace detail
FMT_END_NAMESPACE
