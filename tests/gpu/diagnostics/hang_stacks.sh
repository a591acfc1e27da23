#!/usr/bin/env bash
# hang_stacks.sh SECONDS CMD...: runs CMD; if it is still running after
# SECONDS, prints every thread's kernel wait and user-space stack (cuda-gdb,
# which the GPU machine has in place of gdb) of CMD's process tree, then
# kills it. Shows where a program that hangs through scuda waits.
set -u
limit=${1:?usage: hang_stacks.sh SECONDS CMD...}
shift
"$@" &
top=$!
for _ in $(seq "$limit"); do
  sleep 1
  kill -0 "$top" 2>/dev/null || { wait "$top"; exit $?; }
done
# descendants PID: PID and every process below it.
descendants() {
  echo "$1"
  for child in $(pgrep -P "$1"); do descendants "$child"; done
}
for pid in $(descendants "$top"); do
  [ -d "/proc/$pid" ] || continue
  echo "== process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-120)"
  for t in /proc/"$pid"/task/*; do
    echo "thread ${t##*/} $(cat "$t/comm") wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
  done
  command -v cuda-gdb >/dev/null &&
    timeout 60 cuda-gdb -q -batch -p "$pid" -ex "thread apply all bt 25" 2>&1 | grep -E '^#|^Thread' | head -150
done
# shellcheck disable=SC2046
kill -9 $(descendants "$top") 2>/dev/null
exit 124
