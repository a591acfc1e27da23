#!/usr/bin/env bash
# build.sh: build scuda on the GPU machine, from .deps/ when it was carried
# (tests/gpu/prepare.sh). Source it: it exports PYTHONPATH and LD_LIBRARY_PATH
# for the offline wheels. SCUDA_SKIP_BUILD=1 keeps the existing build/.
# Log: ${SCUDA_BUILD_LOG:-/tmp/scuda-cmake.log}.
build_log=${SCUDA_BUILD_LOG:-/tmp/scuda-cmake.log}
cmake_extra=()
if [ -d .deps ]; then
  python3 -m pip install -q --no-index --no-deps --upgrade \
    --target /tmp/scuda-site .deps/whl/*.whl && echo "wheels installed: libclang, nvidia-nvml-dev"
  export PYTHONPATH=/tmp/scuda-site${PYTHONPATH:+:$PYTHONPATH}
  export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cmake_extra=(-DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr")
fi
if [ "${SCUDA_SKIP_BUILD:-0}" = 1 ]; then
  echo "SCUDA_SKIP_BUILD=1: using the existing build/"
else
  gen=()
  command -v ninja >/dev/null && [ ! -f build/CMakeCache.txt ] && gen=(-G Ninja)
  if cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DSCUDA_BUILD_TESTS=OFF "${cmake_extra[@]}" \
    >"$build_log" 2>&1 && cmake --build build -j >>"$build_log" 2>&1; then
    echo "build ok"
  else
    tail -n 40 "$build_log"
  fi
fi
