# Writes OUT, the C++ definition of the version `scuda --version` prints:
# what `git describe` says of SOURCE_DIR (the last tag, or FALLBACK when
# there is none, then always the commit), or FALLBACK alone outside git. It runs at every
# build and rewrites OUT only when the version changed, so that an
# unchanged version rebuilds nothing.
execute_process(COMMAND git -C ${SOURCE_DIR} describe --tags --long --dirty
                OUTPUT_VARIABLE version RESULT_VARIABLE failed
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(failed)
  execute_process(COMMAND git -C ${SOURCE_DIR} describe --always --dirty
                  OUTPUT_VARIABLE commit RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(version ${FALLBACK})
  if(NOT failed)
    set(version ${FALLBACK}-g${commit})
  endif()
endif()
string(CONCAT text "// Written by src/cli/version.cmake at build time.\n#include \"cli/version.h\"\n\n"
         "const char* const scuda::cli::kVersion = \"${version}\";\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
