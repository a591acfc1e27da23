"""scuda: GPU over IP. The `scuda` command of this package runs the scuda
executable the wheel carries in scuda/bin, whose `scuda run` puts the client
libraries of scuda/lib (libcuda.so.1, libnvidia-ml.so.1) in front of a
program's CUDA driver."""

import os
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
BIN_DIR = PACKAGE_DIR / "bin"
LIB_DIR = PACKAGE_DIR / "lib"


def executable() -> Path:
    """The scuda executable; it finds its libraries in ../lib beside itself."""
    return BIN_DIR / "scuda"


def main() -> None:
    """Replaces this Python process with the scuda executable, so that signals,
    exit status and standard streams are the executable's own."""
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.exit(f"scuda: {exe} is missing or not executable; reinstall the scuda package")
    os.execv(exe, ["scuda", *sys.argv[1:]])
