#!/usr/bin/env bash
# isolate.sh CMD [ARGS...]: run CMD where the local NVIDIA GPU is unreachable.
# In a private mount namespace an empty file is bind-mounted over every
# /dev/nvidia* node and every library the driver installs (libcuda.so*,
# libnvidia-*.so*, libnvcuvid.so*, libnvoptix.so*), as a machine without a
# GPU has none of them (a tmpfs over /dev/nvidia* folders). nvJPEG, for one,
# finds the driver's libnvcuvid and waits forever for hardware it cannot
# open. The repo's build/ folder, which holds scuda's stand-ins, is left
# alone, and so are the folders in SCUDA_ISOLATE_KEEP="dir1 dir2" (an
# installed scuda's stand-ins). Needs root.
# Extra folders to search: SCUDA_ISOLATE_DIRS="dir1 dir2".
# Exit 125 when the hiding itself fails (CMD did not run).
set -u
self=$(readlink -f "${BASH_SOURCE[0]}")
repo=$(dirname "$(dirname "$(dirname "$self")")")
[ $# -gt 0 ] || { echo "usage: isolate.sh CMD [ARGS...]" >&2; exit 2; }

die() { echo "isolate: $*" >&2; exit 125; }

if [ "${SCUDA_ISOLATE_INSIDE:-}" != 1 ]; then
  export SCUDA_ISOLATE_INSIDE=1
  ns=(unshare -m --propagation private)
  # Without CAP_SYS_ADMIN (some containers) a user namespace may still work.
  "${ns[@]}" true 2>/dev/null || ns=(unshare -U -r -m --propagation private)
  "${ns[@]}" true 2>/dev/null || die "cannot create a mount namespace"
  exec "${ns[@]}" bash "$self" "$@"
fi
unset SCUDA_ISOLATE_INSIDE

# Now inside the namespace: mounts made here are invisible outside.
empty=$(mktemp /tmp/scuda-isolate.XXXXXX) || die "mktemp failed"
hide() {
  mount --bind "$empty" "$1" || die "cannot bind over $1"
}

devs=0
for f in /dev/nvidia*; do
  [ -e "$f" ] || continue
  real=$(readlink -f "$f")
  if [ -d "$real" ]; then
    mount -t tmpfs -o size=4k,mode=755 tmpfs "$real" || die "cannot cover $f"
  else
    hide "$real"
  fi
  devs=$((devs + 1))
done

dirs=(/usr/local/nvidia /usr/lib /lib /usr/lib64 /usr/lib/x86_64-linux-gnu)
# shellcheck disable=SC2206  # split the user's list on spaces
dirs+=(/usr/local/cuda*/compat ${SCUDA_ISOLATE_DIRS:-})
libs=0
while read -r real; do
  case "$real" in "$repo"/build/*) continue ;; esac
  for keep in ${SCUDA_ISOLATE_KEEP:-}; do
    case "$real" in "$keep"/*) continue 2 ;; esac
  done
  [ -f "$real" ] || continue
  hide "$real"
  [ -s "$real" ] && die "$real still has content after hiding"
  libs=$((libs + 1))
done < <(
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    find "$(readlink -f "$d")" -maxdepth 4 \
      \( -name 'libcuda.so*' -o -name 'libnvidia-*.so*' -o -name 'libnvcuvid.so*' \
      -o -name 'libnvoptix.so*' \) 2>/dev/null
  done | xargs -r -d '\n' readlink -f | sort -u
)
rm -f "$empty"  # the bind mounts keep the (empty) inode alive

echo "isolate: hid $devs /dev/nvidia* entries and $libs driver libraries" >&2
exec "$@"
