# shellcheck shell=bash
# Sourced by the packaging tests: start_server BIN DRIVER NVML starts
# `BIN server` on a loopback port the system picks, with the driver and NVML
# test doubles, and sets SERVER_ADDRESS (HOST:PORT) from the line it prints at
# start. The server ends when the sourcing script exits.
SERVER_PID=
SERVER_ADDRESS=
SERVER_LOG=$(mktemp)

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -f "$SERVER_LOG"
}

start_server() {
  "$1" server -l 127.0.0.1:0 --driver "$2" --nvml "$3" --drain-timeout 0 >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  local tries
  for tries in $(seq 100); do
    SERVER_ADDRESS=$(sed -n 's/^scuda server listening on \([^ ]*\) .*/\1/p' "$SERVER_LOG")
    [ -n "$SERVER_ADDRESS" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "the server did not start (after $tries tries):" >&2
  cat "$SERVER_LOG" >&2
  return 1
}
