# SCUDA_RELEASE: the binaries users install, made small. Each function and
# datum gets its own section so that the linker drops what nothing reaches,
# link-time optimisation inlines and discards across files, and each shipped
# binary's debug info moves to a .debug file beside it (linked by
# .gnu_debuglink), so a debugger still finds it. libstdc++ and libgcc are
# linked in (their symbols stay hidden behind the export maps), so the
# binaries run where the system's libstdc++ is older or absent (a slim
# container, an older distribution) and need only glibc.
option(SCUDA_RELEASE "Small shipped binaries: gc-sections, LTO, stripped, split debug info" OFF)

if(SCUDA_RELEASE)
  include(CheckIPOSupported)
  check_ipo_supported(RESULT ipo_ok OUTPUT ipo_error LANGUAGES CXX)
  if(NOT ipo_ok)
    message(FATAL_ERROR "SCUDA_RELEASE needs link-time optimisation: ${ipo_error}")
  endif()
  set(CMAKE_INTERPROCEDURAL_OPTIMIZATION ON)
  add_compile_options(-ffunction-sections -fdata-sections)
  add_link_options(-Wl,--gc-sections -Wl,-O1 -Wl,--as-needed -static-libstdc++ -static-libgcc)
endif()

# Moves TARGET's debug info to TARGET_FILE.debug and strips the binary, in the
# build tree, so that the installed and packaged copies are the small ones.
function(scuda_split_debug target)
  if(NOT SCUDA_RELEASE)
    return()
  endif()
  set(file $<TARGET_FILE:${target}>)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_OBJCOPY} --only-keep-debug ${file} ${file}.debug
    COMMAND ${CMAKE_STRIP} --strip-unneeded ${file}
    COMMAND ${CMAKE_OBJCOPY} --add-gnu-debuglink=${file}.debug ${file}
    COMMENT "Splitting the debug info of ${target}"
    VERBATIM)
endfunction()
