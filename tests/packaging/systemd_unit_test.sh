#!/usr/bin/env bash
# The scuda-server unit as the .deb ships it passes `systemd-analyze verify`
# with no complaint at all (systemd reports some mistakes, such as an unknown
# option, only as a warning), and keeps its hardening. The unit is checked
# from the unpacked package, its ExecStart pointed at the unpacked scuda,
# since verify needs the command to exist; --man=no since the machine need
# not have the man pages the unit names.
# Usage: systemd_unit_test.sh PACKAGES_DIR
set -euo pipefail
packages=$1
if ! command -v systemd-analyze >/dev/null; then
  echo "systemd_unit_test: systemd-analyze is missing (scripts/setup.sh installs systemd)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for deb in "$packages"/scuda-client_*.deb "$packages"/scuda-server_*.deb; do
  dpkg-deb -x "$deb" "$work/root"
done
unit=$work/root/usr/lib/systemd/system/scuda-server.service
[ -f "$unit" ] || { echo "scuda-server.deb has no $unit" >&2; exit 1; }

# The options the unit must keep: an unprivileged user, a read-only system,
# and devices limited to NVIDIA's.
for option in DynamicUser=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
    NoNewPrivileges=yes DevicePolicy=closed CapabilityBoundingSet= \
    SystemCallFilter=@system-service 'DeviceAllow=/dev/nvidiactl rw'; do
  grep -qx "$option" "$unit" || { echo "the unit lost $option" >&2; exit 1; }
done

mkdir -p "$work/units"
sed "s|^ExecStart=/usr/bin/scuda |ExecStart=$work/root/usr/bin/scuda |" "$unit" \
  >"$work/units/scuda-server.service"
if ! complaints=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
    "$work/units/scuda-server.service" 2>&1) || [ -n "$complaints" ]; then
  echo "systemd-analyze verify rejects the unit:" >&2
  echo "$complaints" >&2
  exit 1
fi
echo "systemd_unit_test: systemd-analyze verify accepts scuda-server.service"
