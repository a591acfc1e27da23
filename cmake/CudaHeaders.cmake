# cuda.h, cudaTypedefs.h, cudaProfiler.h and cudaProfilerTypedefs.h: the
# build reads these headers and runs nothing of the toolkit. They come from
# CUDA_HOME (a toolkit) or, where it has none or SCUDA_CUDA_HEADERS_FROM_PYTHON
# is on, from PyPI's NVIDIA packages in the build's Python (nvidia-cuda-runtime
# and nvidia-cuda-profiler-api), which lets the wheel build with no toolkit.
# Sets CUDA_INCLUDE_DIR.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

if(DEFINED ENV{CUDA_HOME})
  set(CUDA_HOME_DEFAULT $ENV{CUDA_HOME})
else()
  set(CUDA_HOME_DEFAULT /usr/local/cuda)
endif()
set(CUDA_HOME ${CUDA_HOME_DEFAULT} CACHE PATH "CUDA toolkit whose headers scuda builds against")
option(SCUDA_CUDA_HEADERS_FROM_PYTHON
       "Take the CUDA headers from PyPI's NVIDIA packages, not CUDA_HOME" OFF)

# The folder holding FILE in the installed Python package PACKAGE, or "".
function(scuda_python_package_dir out package file)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
      "import importlib.metadata as m; print(next(f.locate().parent for f in m.files('${package}') if f.name == '${file}'))"
    OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

set(CUDA_INCLUDE_DIR ${CUDA_HOME}/include)
if(SCUDA_CUDA_HEADERS_FROM_PYTHON OR NOT EXISTS ${CUDA_INCLUDE_DIR}/cuda.h)
  scuda_python_package_dir(CUDA_INCLUDE_DIR nvidia-cuda-runtime cuda.h)
endif()
foreach(header cuda.h cudaTypedefs.h cudaProfiler.h cudaProfilerTypedefs.h)
  if(NOT EXISTS ${CUDA_INCLUDE_DIR}/${header})
    message(FATAL_ERROR "${header} not found (CUDA_INCLUDE_DIR='${CUDA_INCLUDE_DIR}'): set "
            "CUDA_HOME to a CUDA 13 toolkit, or `python3 -m pip install nvidia-cuda-runtime "
            "nvidia-cuda-profiler-api` (the versions pyproject.toml names) and reconfigure")
  endif()
endforeach()
message(STATUS "CUDA headers: ${CUDA_INCLUDE_DIR}")
