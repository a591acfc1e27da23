#!/usr/bin/env bash
# clang_tidy_test.sh SOURCE_DIR BUILD_DIR: the checks of SOURCE_DIR/.clang-tidy
# pass over every part of src/: the server, which decodes every byte a
# client sends, the client library, which runs in every user's process,
# NVML, the CLI and the device plugin, each compiled as BUILD_DIR's
# compile_commands.json says.
#
# Nearly all of clang-tidy's time on a file goes to matching its checks
# against the standard, logging and CUDA headers the file includes, whose
# warnings it then drops. So the files of one target are checked up to
# PER_UNIT (below) at a time, as one translation unit that #includes them:
# the headers are matched once for all of them, and each file's warnings
# are reported at its own lines, the same warnings as when every file is
# checked alone (a run both ways over all of bugprone-* and performance-*
# finds no difference). Files that cannot share a unit (a file-local name
# that both define) are found by compiling each unit first and are moved
# apart; a file that does not compile is checked alone, so its errors read
# as clang-tidy reports them. GCC's precompiled headers, which clang cannot
# read, become clang's, built from the same header with the same flags.
set -euo pipefail
src=${1:?usage: clang_tidy_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: clang_tidy_test.sh SOURCE_DIR BUILD_DIR}
command -v clang-tidy >/dev/null ||
  { echo "clang_tidy_test: clang-tidy is missing (scripts/setup.sh installs it)" >&2; exit 1; }
# The precompiled headers and the trial compiles need the clang that
# clang-tidy is built from: a precompiled header of another version is
# refused.
major=$(clang-tidy --version | sed -n 's/.*LLVM version \([0-9]*\)\..*/\1/p')
clang=clang++-$major
command -v "$clang" >/dev/null || clang="clang++"
[ "$("$clang" -dumpversion 2>/dev/null | cut -d. -f1)" = "$major" ] ||
  { echo "clang_tidy_test: no clang++ of clang-tidy's version $major (scripts/setup.sh installs it)" >&2; exit 1; }
[ -f "$build/compile_commands.json" ] ||
  { echo "clang_tidy_test: no $build/compile_commands.json" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"
files=(src/protocol/*.cc src/common/*.cc src/server/*/*.cc src/nvml/*.cc src/k8s/*.cc)
# The CLI builds as unity files (src/CMakeLists.txt) that include its
# sources; the header filter lets their warnings through.
files+=("$build"/src/CMakeFiles/scuda.dir/Unity/unity_*_cxx.cxx)
mapfile -t client < <(find src/client -name '*.cc' | sort)
files+=("${client[@]}")
echo "clang-tidy over ${#files[@]} files"
python3 - "$src" "$build/compile_commands.json" "$work" "$clang" "${files[@]}" <<'PY'
import collections, concurrent.futures, json, os, re, shlex, subprocess, sys

src, database, work, clang = sys.argv[1:5]
files = [os.path.join(src, f) for f in sys.argv[5:]]
JOBS = 2  # the cores of CI's machine
PER_UNIT = 24  # beyond this, a larger unit saves little

# Each file's flags, from its first command (a file that a test double
# compiles again comes second), less GCC's precompiled header, which becomes
# clang's.
commands = {}
for entry in json.load(open(database)):
    commands.setdefault(entry["file"], entry)
pchs, groups, directories = {}, {}, {}
for f in files:
    argv = shlex.split(commands[f]["command"])[1:]
    flags, pch_source = [], None
    while argv:
        a = argv.pop(0)
        if a == "-include" and argv[0].endswith("cmake_pch.hxx"):
            pch_source = argv.pop(0)
        elif a in ("-o", "-c"):
            argv.pop(0)
        elif a != "-Winvalid-pch":
            flags.append(a)
    if pch_source:
        pch = os.path.join(work, os.path.basename(os.path.dirname(pch_source)) + ".pch")
        pchs[pch] = [clang, *flags, "-Wno-pragma-system-header-outside-header",
                     "-x", "c++-header", pch_source, "-o", pch]
        flags += ["-include-pch", pch]
    groups.setdefault(tuple(flags), []).append(f)
    directories[tuple(flags)] = commands[f]["directory"]

pool = concurrent.futures.ThreadPoolExecutor(JOBS)


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


for rc, out in pool.map(run, pchs.values()):
    if rc:
        sys.exit("clang_tidy_test: a precompiled header failed:\n" + out)

units = 0


def unit(group):
    global units
    units += 1
    path = os.path.join(work, f"unit{units}.cc")
    with open(path, "w") as f:
        for member in group:
            f.write(f'#include "{member}"  // NOLINT(bugprone-suspicious-include)\n')
    return path


def compile_errors(flags, path):
    if path is None:
        return 0, ""
    return run([clang, *flags, "-fsyntax-only", "-w", "-ferror-limit=0", path])


# Groups of up to PER_UNIT files that compile as one unit. A group that
# fails loses the files its errors are in; the file that an error's
# "previous definition" note points to is kept from them, and so is every
# file that defines the same name; an error with no such note keeps the
# file from the whole group. Every failure adds a conflict, so this ends.
conflicts = collections.defaultdict(set)
definers = collections.defaultdict(set)
diagnostic = re.compile(r"^(/[^:\n]+):\d+:\d+: (error|note): (.*)$", re.M)
checked, placing, kept = [], [(flags, f) for flags, fs in groups.items() for f in fs], []
while placing or kept:
    trial = list(kept)
    for flags, f in placing:
        for other_flags, group in trial:
            if other_flags == flags and len(group) < PER_UNIT and not conflicts[f] & set(group):
                group.append(f)
                break
        else:
            trial.append((flags, [f]))
    placing, kept = [], []
    paths = [(flags, unit(group) if len(group) > 1 else None) for flags, group in trial]
    for (flags, group), (rc, out) in zip(trial, pool.map(lambda t: compile_errors(*t), paths)):
        if rc == 0:
            checked.append((flags, group))
            continue
        failed, before, at = set(), {f: set(conflicts[f]) for f in group}, None
        for path, kind, message in diagnostic.findall(out):
            if kind == "error":
                at = path if path in group else None
                name = re.search(r"'([^']+)'", message)
                if at:
                    failed.add(at)
            elif at and path in group and path != at and "previous" in message:
                conflicts[at].add(path)
                conflicts[path].add(at)
                if name:
                    definers[flags, name.group(1)] |= {at, path}
        for same in definers.values():
            for f in same:
                conflicts[f] |= same - {f}
        if not failed:  # errors only in headers: split the group
            failed = set(group[len(group) // 2:])
        for f in failed:
            if conflicts[f] == before[f]:
                conflicts[f] |= set(group) - {f}
        placing += [(flags, f) for f in group if f in failed]
        rest = [f for f in group if f not in failed]
        if rest:
            kept.append((flags, rest))

database = []
for flags, group in sorted(checked, key=lambda t: -len(t[1])):
    main = group[0] if len(group) == 1 else unit(group)
    database.append({"directory": directories[flags], "file": main,
                     "arguments": [clang, *flags, "-c", main]})
json.dump(database, open(os.path.join(work, "compile_commands.json"), "w"))
print(f"in {len(database)} translation units", flush=True)
mains = [e["file"] for e in database]
config = os.path.join(src, ".clang-tidy")
failed = False
for rc, out in pool.map(lambda m: run(["clang-tidy", "-p", work, "--config-file", config, "--quiet", m]), mains):
    failed |= rc != 0
    sys.stdout.write("".join(line for line in out.splitlines(True)
                             if not re.fullmatch(r"\d+ warnings? generated\.\n?", line)))
sys.exit(1 if failed else 0)
PY
