#!/usr/bin/env bash
# prepare.sh: builds NVIDIA's cuda-samples v13.0 for sm_90 on the DEV machine
# (no GPU needed to compile) and packs what the list needs into .samples/,
# which the device tool carries. NVIDIA's tree is never committed.
#   bash tests/gpu/compliance/prepare.sh GIT_DIR
# GIT_DIR is a git directory of github.com/NVIDIA/cuda-samples (the search
# tool's `fetch github:NVIDIA/cuda-samples` gives one). SCUDA_SAMPLES_JOBS
# sets the build's parallelism (default: the number of cores).
# Leaves .samples/pack.tar.xz, which samples.sh unpacks: run/, one folder per
# sample category with each sample's executable and the data files its CMake
# copies beside it; src/, the source folders of the samples that run there
# (see cuda-samples.txt) and of those left to build on the GPU machine; and
# unbuilt.txt, their names.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
git_dir=${1:?usage: prepare.sh GIT_DIR_OF_CUDA_SAMPLES}
tag=v13.0
work=$repo/.samples
list=$here/cuda-samples.txt
names=$(grep -v '^#' "$list" | cut -d'|' -f1 | tr -d ' ')

rm -rf "$work"
mkdir -p "$work/src" "$work/run"

# extract: the tag's tree into src/ without the samples the list leaves out
# (a folder with a CMakeLists.txt is a sample; others, such as libNVVM's
# common/, are kept), skipping blobs the mirror does not hold (a few documents
# and data sets); each is named so a user knows.
others=$(git --git-dir="$git_dir" ls-tree -r --name-only "$tag" Samples |
  sed -n -E 's|^Samples/[^/]+/([^/]+)/CMakeLists.txt$|\1|p' | grep -vxF "$names" || true)
git --git-dir="$git_dir" ls-tree -r "$tag" | while read -r mode type obj path; do
  [ "$type" = blob ] || continue
  case "$path" in Samples/*/*/*) sample=${path#Samples/*/}; sample=${sample%%/*}
    ! grep -qxF "$sample" <<<"$others" || continue ;; esac
  mkdir -p "$work/src/$(dirname "$path")"
  if ! git --git-dir="$git_dir" cat-file blob "$obj" >"$work/src/$path" 2>/dev/null; then
    echo "prepare: the mirror lacks $path" >&2
    rm -f "$work/src/$path"
  fi
  [ "$mode" != 100755 ] || chmod +x "$work/src/$path"
done

# prune: each category adds only the samples that are present and not in
# SCUDA_SAMPLES_SKIP, and every sample builds for sm_90 alone so the build
# takes minutes, not an hour.
# shellcheck disable=SC2016  # ${CMAKE_CURRENT_SOURCE_DIR} is CMake's
sed -i -E 's|^( *)add_subdirectory\(([^)]*)\)|\1if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/\2 AND NOT "\2" IN_LIST SCUDA_SAMPLES_SKIP)\n\1  add_subdirectory(\2)\n\1endif()|' \
  "$work"/src/Samples/CMakeLists.txt "$work"/src/Samples/*/CMakeLists.txt
grep -rl 'set(CMAKE_CUDA_ARCHITECTURES' "$work/src" |
  xargs sed -i -E 's|set\(CMAKE_CUDA_ARCHITECTURES [^)]*\)|set(CMAKE_CUDA_ARCHITECTURES 90)|'

missing=0
for name in $names; do
  ls -d "$work"/src/Samples/*/"$name" >/dev/null 2>&1 ||
    { echo "prepare: no sample folder for $name" >&2; missing=1; }
done
[ "$missing" -eq 0 ]

# configure: a sample that needs what this toolkit lacks (nvJPEG, NPP, static
# cuFFT, libNVVM) is left to samples.sh, which builds it on the GPU machine.
export PATH=/usr/local/cuda/bin:$PATH
skip=""
for _ in 1 2 3 4 5 6 7 8; do
  if cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DSCUDA_SAMPLES_SKIP="$skip" >"$work/configure.log" 2>&1; then
    break
  fi
  more=$(grep -oE '(Samples/[^/ ]+/[^/ ]+/CMakeLists.txt|directory [^ ]*/Samples/[^/ ]+/[^/ ]+)' \
    "$work/configure.log" | sed -E 's|.*Samples/[^/]+/([^/]+).*|\1|' | sort -u)
  [ -n "$more" ] || { cat "$work/configure.log" >&2; exit 1; }
  # shellcheck disable=SC2086  # both are lists of words
  skip=$(printf '%s\n' $skip $more | sort -u | paste -sd';')
  rm -rf "$work/build"
done
echo "prepare: left for the GPU machine: ${skip:-none}"

# build: keep going past a sample that fails, so the rest are still tested.
cmake --build "$work/build" -j "${SCUDA_SAMPLES_JOBS:-$(nproc)}" -- -k \
  >"$work/build.log" 2>&1 || echo "prepare: some samples did not build (.samples/build.log)" >&2

# pack: executables and the data files the build copied, without objects.
tar -C "$work/build/Samples" --exclude=CMakeFiles --exclude='*.cmake' \
  --exclude=Makefile --exclude='*.o' --exclude='*.a' -cf - . | tar -C "$work/run" -xf -
find "$work/run" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null || true
built=0
: >"$work/unbuilt.txt"
for name in $names; do
  if ls "$work"/run/*/"$name/$name" >/dev/null 2>&1; then built=$((built + 1))
  else echo "$name" >>"$work/unbuilt.txt"; fi
done
rm -rf "$work/build"
# Keep the sources of samples still to build and of samples that read their
# source folder at run time, with what their CMake needs (Common/, cmake/).
(cd "$work/src" && find Samples -mindepth 2 -maxdepth 2 -type d) | while read -r d; do
  name=${d##*/}
  grep -qxF "$name" "$work/unbuilt.txt" && continue
  grep -q "^$name |.*\(run in its source folder\|srcdir\)" "$list" && continue
  grep -qxF "$name" <<<"$names" || continue
  rm -rf "${work:?}/src/$d"
done
# One compressed file: the executables carry static cudart and shrink
# fivefold, which keeps the tree under what the device tool carries.
left=$(wc -l <"$work/unbuilt.txt")
tar -C "$work" -cf - run src unbuilt.txt | xz -T0 -6 >"$work/pack.tar.xz"
rm -rf "${work:?}/run" "${work:?}/src" "$work/unbuilt.txt"
echo "prepare: $built samples built here, $left left for the GPU machine; $work holds $(du -sh "$work" | cut -f1)"
