#!/usr/bin/env bash
# run.sh: scuda's GPU test suite, for the GPU machine. From the repo root:
#   bash tests/gpu/run.sh
# Builds scuda (skip with SCUDA_SKIP_BUILD=1) and tests/gpu/programs/*.cu,
# runs each program natively and through scuda (the client inside isolate.sh,
# so only the scuda server can reach the GPU), then the control checks.
# Writes $OUT/gpu_results.json, $OUT/gpu_results.md, $OUT/server.log and
# $OUT/gpu_logs/. Exits non-zero if anything failed.
# SCUDA_TEST_TIMEOUT: seconds allowed per program run (default 300).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
out=${OUT:-$(mktemp -d /tmp/scuda-gpu.XXXXXX)}
logs=$out/gpu_logs
rows=$logs/rows.tsv
mkdir -p "$logs" && : >"$rows"
limit=${SCUDA_TEST_TIMEOUT:-300}
programs=(vector_add memcpy_roundtrip streams_events matmul_tiled device_props)
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
echo "results go to $out"

section() { printf '\n== %s\n' "$*"; }
clean() { tr '\t\n' '  ' | sed 's/ *$//' | cut -c1-300; }

# report: turn rows.tsv into gpu_results.{json,md}; exit 1 if anything failed.
report() {
  python3 - "$rows" "$out" "$@" <<'PY'
import json, sys
rows, out = sys.argv[1], sys.argv[2]
num = lambda s: None if s == "-" else float(s)
objs, progs, checks = [], [], []
for line in open(rows):
    f = line.rstrip("\n").split("\t")
    if f[0] == "program":
        _, name, nat, sc, ns, ss, nd, sd = f
        ratio = round(num(ss) / num(ns), 2) if "-" not in (ns, ss) and num(ns) else None
        objs.append(dict(kind="program", name=name, native=nat, scuda=sc,
                         native_s=num(ns), scuda_s=num(ss), ratio=ratio,
                         native_detail=nd, scuda_detail=sd))
        progs.append(f"| {name} | {nat} | {sc} | {ns} | {ss} | {ratio if ratio is not None else '-'} |")
    else:
        _, name, res, detail = f
        objs.append(dict(kind="check", name=name, result=res, detail=detail))
        checks.append(f"| {name} | {res} | {detail.replace('|', '/')} |")
md = ["| program | native | scuda | native s | scuda s | ratio |",
      "|---|---|---|---|---|---|", *progs, "",
      "| check | result | detail |", "|---|---|---|", *checks, ""]
md += [f"- {o['name']}: native: {o['native_detail']} / scuda: {o['scuda_detail']}"
       for o in objs if o["kind"] == "program"]
json.dump(objs, open(f"{out}/gpu_results.json", "w"), indent=1)
open(f"{out}/gpu_results.md", "w").write("\n".join(md) + "\n")
bad = [o["name"] for o in objs if "FAIL" in (o.get("native"), o.get("scuda"), o.get("result"))]
if sys.argv[-1] == "print":
    print("\n".join(md))
    print("\nFAILED: " + " ".join(bad) if bad else "\nALL PASSED")
sys.exit(1 if bad else 0)
PY
}
check() { printf 'check\t%s\t%s\t%s\n' "$1" "$2" "$(echo "$3" | clean)" >>"$rows"; echo "check $1: $2 $3"; report; }

source tests/gpu/timed.sh
# listening: is something listening on 127.0.0.1:$port? (no connection made)
listening() {
  awk -v p="$(printf ':%04X' "$port")" '$4 == "0A" && $2 ~ p "$" { f = 1 } END { exit !f }' /proc/net/tcp
}
verdict() {  # verdict PROGRAM: PASS when rc is 0 and the RESULT line says PASS
  [ "$rc" -eq 0 ] && [[ $detail == "RESULT $1 PASS"* ]] && echo PASS || echo FAIL
}

section environment
nvidia-smi -L
nvcc --version | tail -n2
python3 --version

section "build scuda"
SCUDA_BUILD_LOG=$logs/cmake.log source tests/gpu/build.sh
if [ -x build/bin/scuda ] && [ -e build/lib/libcuda.so.1 ]; then
  check build PASS "build/bin/scuda and build/lib/libcuda.so.1 present"
else
  check build FAIL "build/bin/scuda or build/lib/libcuda.so.1 missing, see gpu_logs/cmake.log"
fi

section "build programs"
mkdir -p build/gpu
pids=()
for p in "${programs[@]}"; do
  nvcc -O2 -arch=sm_90 -o "build/gpu/$p" "tests/gpu/programs/$p.cu" \
    >"$logs/nvcc_$p.log" 2>&1 &
  pids+=($!)
done
for i in "${!programs[@]}"; do
  wait "${pids[$i]}" || { echo "nvcc failed: ${programs[$i]}"; cat "$logs/nvcc_${programs[$i]}.log"; }
done

section "scuda server"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
server_pid=
if [ -x build/bin/scuda ]; then
  build/bin/scuda server -l "$server" -v >"$out/server.log" 2>&1 &
  server_pid=$!
  trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null' EXIT
  for _ in $(seq 300); do
    listening && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
fi
if [ -n "$server_pid" ] && listening; then
  check server_start PASS "listening on $server"
else
  check server_start FAIL "not listening on $server; server.log: $(head -n3 "$out/server.log" 2>/dev/null)"
fi
timed isolate_overhead tests/gpu/isolate.sh true
echo "isolate.sh alone takes ${secs}s (included in every scuda time): $(cat "$logs/isolate_overhead.err")"

for p in "${programs[@]}"; do
  section "$p"
  if [ -x "build/gpu/$p" ]; then
    timed "$p.native" "build/gpu/$p"
    nv=$(verdict "$p") ns=$secs nd=$detail
    timed "$p.scuda" tests/gpu/isolate.sh build/bin/scuda run --server "$server" -- "build/gpu/$p"
    sv=$(verdict "$p") ss=$secs sd=$detail
    [ -n "$server_pid" ] && ! kill -0 "$server_pid" 2>/dev/null && sd="$sd (server died)"
  else
    nv=FAIL sv=FAIL ns=- ss=- nd="did not compile" sd="did not compile"
  fi
  echo "native $nv ${ns}s: $nd"
  echo "scuda  $sv ${ss}s: $sd"
  printf 'program\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$nv" "$sv" "$ns" "$ss" \
    "$(echo "$nd" | clean)" "$(echo "$sd" | clean)" >>"$rows"
  report
done

section "device_props: native vs scuda"
if ! grep -qs '^RESULT device_props PASS' "$logs/device_props.native.out"; then
  check device_props_diff FAIL "native device_props did not pass, nothing to compare"
elif diff "$logs/device_props.native.out" "$logs/device_props.scuda.out" >"$out/device_props.diff" 2>&1; then
  check device_props_diff PASS "identical, $(wc -l <"$logs/device_props.native.out") lines"
else
  check device_props_diff FAIL "$(grep -c '^[<>]' "$out/device_props.diff") differing lines, see device_props.diff: $(grep -m2 '^[<>]' "$out/device_props.diff")"
fi

section "control: native device_props inside isolate.sh must not see a GPU"
timed control_isolated tests/gpu/isolate.sh build/gpu/device_props
if [ "$rc" -ne 0 ] && [ "$rc" -ne 125 ] && [[ $detail == "RESULT device_props FAIL"* ]]; then
  check control_isolated PASS "$detail ($(grep -av '^isolate:' "$logs/control_isolated.err" | head -n1))"
else
  check control_isolated FAIL "rc=$rc $detail $(head -n1 "$logs/control_isolated.err")"
fi

# ---------------------------------------------------------------------------
# samples suite (issue 6): tests/gpu/samples/*.cu natively and through scuda.
# Runs unless SCUDA_SUITES leaves out samples; SCUDA_SAMPLES="a b" picks some.
# A sample's `// nvcc: FLAGS` line adds nvcc flags (e.g. -lcublas -lcuda).
# Each prints a last line `RESULT <name> PASS|FAIL <detail>`; its stdout must
# also be identical natively and through scuda, except lines starting `# `
# (figures that may differ, such as bytes moved).
if [ -z "${SCUDA_SUITES:-}" ] || [[ " ${SCUDA_SUITES//,/ } " == *" samples "* ]]; then
  samples=() builds=()
  for f in tests/gpu/samples/*.cu; do
    [ -e "$f" ] || continue
    s=$(basename "$f" .cu)
    want=" ${SCUDA_SAMPLES:-} "; want=${want//,/ }
    [ -n "${SCUDA_SAMPLES:-}" ] && [[ $want != *" $s "* ]] && continue
    samples+=("$s")
    # shellcheck disable=SC2046
    nvcc -O2 -arch=sm_90 -Itests/gpu/programs -o "build/gpu/sample_$s" "$f" \
      $(sed -n 's|^// nvcc: ||p' "$f") >"$logs/nvcc_sample_$s.log" 2>&1 &
    builds+=($!)
  done
  [ ${#builds[@]} -gt 0 ] && wait "${builds[@]}"  # not the server, also a child
  for s in "${samples[@]}"; do
    section "sample $s"
    if [ ! -x "build/gpu/sample_$s" ]; then
      printf 'program\tsample_%s\tFAIL\tFAIL\t-\t-\tdid not compile\tdid not compile\n' "$s" >>"$rows"
      check "sample_${s}_same" FAIL "did not compile: $(grep -m1 error "$logs/nvcc_sample_$s.log")"
      continue
    fi
    timed "sample_$s.native" "build/gpu/sample_$s"
    nv=$(verdict "$s") ns=$secs nd=$detail
    timed "sample_$s.scuda" tests/gpu/isolate.sh build/bin/scuda run --server "$server" -- "build/gpu/sample_$s"
    sv=$(verdict "$s") ss=$secs sd=$detail
    [ -n "$server_pid" ] && ! kill -0 "$server_pid" 2>/dev/null && sd="$sd (server died)"
    echo "native $nv ${ns}s: $nd"
    echo "scuda  $sv ${ss}s: $sd"
    sed -n 's/^# /native # /p' "$logs/sample_$s.native.out"
    sed -n 's/^# /scuda  # /p' "$logs/sample_$s.scuda.out"
    printf 'program\tsample_%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$nv" "$sv" "$ns" "$ss" \
      "$(echo "$nd" | clean)" "$(echo "$sd" | clean)" >>"$rows"
    if diff <(grep -av '^# ' "$logs/sample_$s.native.out") <(grep -av '^# ' "$logs/sample_$s.scuda.out") \
      >"$logs/sample_$s.diff" 2>&1; then
      check "sample_${s}_same" PASS "identical stdout, $(wc -l <"$logs/sample_$s.native.out") lines"
    else
      check "sample_${s}_same" FAIL "stdout differs: $(grep -m2 '^[<>]' "$logs/sample_$s.diff")"
    fi
  done
  # managed_sparse through scuda with stats: of its 1 GiB managed buffer only
  # the touched pages (every 64th) may cross the network, each once to the
  # device and once back (docs/managed-memory.md): at most 2.1 times the
  # touched pages' bytes in all, both ways and every request included.
  if [[ " ${samples[*]} " == *" managed_sparse "* ]] && [ -x build/gpu/sample_managed_sparse ]; then
    section "managed_sparse: bytes moved"
    timed sample_managed_sparse.stats tests/gpu/isolate.sh build/bin/scuda run --server "$server" \
      --stats-json "$logs/managed_sparse_stats.json" -- build/gpu/sample_managed_sparse
    touched=$(sed -n 's/.*touched=\([0-9]*\).*/\1/p' "$logs/sample_managed_sparse.stats.out")
    limit_bytes=$((${touched:-0} * $(getconf PAGESIZE) * 21 / 10))
    if moved=$(python3 -c 'import json, sys
rows = json.load(open(sys.argv[1]))
print(sum(r["bytes_out"] + r["bytes_in"] for r in rows))' "$logs/managed_sparse_stats.json" 2>&1) &&
      [ "$rc" -eq 0 ] && [ "$limit_bytes" -gt 0 ] && [ "$moved" -le "$limit_bytes" ]; then
      check managed_sparse_bytes PASS "$moved bytes moved in all for $touched touched pages of a 1 GiB buffer (limit $limit_bytes)"
    else
      check managed_sparse_bytes FAIL "rc=$rc, bytes moved: $moved for ${touched:-?} touched pages (limit $limit_bytes)"
    fi
  fi
else
  echo "SCUDA_SUITES=${SCUDA_SUITES:-}: samples suite skipped"
fi
# ------------------------------------------------------------- end samples --

# ---------------------------------------------------------------------------
# torch suite (issue 4): tests/gpu/torch/t*.py natively and through scuda.
# Runs unless SCUDA_SUITES (space/comma list; unset = every suite) leaves out
# torch. SCUDA_TORCH_TESTS="t1 t2" picks scripts; SCUDA_TORCH_TIMEOUT: seconds
# per run (180). A program row per script, then a check row torch_<script>_compare
# from compare.py with the script's rule (tests/gpu/README.md).
torch_rule() {  # torch_rule SCRIPT: compare.py's RULE for that script
  case $1 in
    # deterministic GPU work (t13: IPC copies and +1 only)
    t1_* | t2_* | t4_* | t8_* | t13_*) echo exact ;;
    # XLA / inductor autotuning picks kernels by timing: the two runs may use
    # different (each deterministic) kernels, which round differently
    t9_* | t10_* | t12_*) echo rel:1e-4 ;;
    # the rest (tests/gpu/README.md says why for each), e.g. t3/t7: max_pool2d
    # backward, t11: cuSPARSE's CSR products (its random draws carry sha256
    # strings, which compare exactly under any rule)
    *) echo rel:1e-5 ;;
  esac
}
if [ -z "${SCUDA_SUITES:-}" ] || [[ " ${SCUDA_SUITES//,/ } " == *" torch "* ]]; then
  saved_limit=$limit limit=${SCUDA_TORCH_TIMEOUT:-180}
  for f in tests/gpu/torch/t[0-9]*_*.py; do
    s=$(basename "$f" .py)
    want=" ${SCUDA_TORCH_TESTS:-} "; want=${want//,/ }
    [ -n "${SCUDA_TORCH_TESTS:-}" ] && [[ $want != *" ${s%%_*} "* && $want != *" $s "* ]] && continue
    section "torch $s"
    timed "torch_$s.native" python3 "$f"
    nv=FAIL ns=$secs nd=$detail
    [ "$rc" -eq 0 ] && [[ $detail == "RESULT $s {"* ]] && nv=PASS
    timed "torch_$s.scuda" tests/gpu/isolate.sh build/bin/scuda run --server "$server" -- python3 "$f"
    sv=FAIL ss=$secs sd=$detail
    [ "$rc" -eq 0 ] && [[ $detail == "RESULT $s {"* ]] && sv=PASS
    [ -n "$server_pid" ] && ! kill -0 "$server_pid" 2>/dev/null && sd="$sd (server died)"
    echo "native $nv ${ns}s: $(echo "$nd" | cut -c1-200)"
    echo "scuda  $sv ${ss}s: $(echo "$sd" | cut -c1-200)"
    printf 'program\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "torch_$s" "$nv" "$sv" "$ns" "$ss" \
      "$(echo "$nd" | clean)" "$(echo "$sd" | clean)" >>"$rows"
    rule=$(torch_rule "$s")
    if cmp_out=$(python3 tests/gpu/torch/compare.py "$logs/torch_$s.native.out" "$logs/torch_$s.scuda.out" "$rule" 2>&1); then
      check "torch_${s}_compare" PASS "$cmp_out"
    else
      check "torch_${s}_compare" FAIL "$cmp_out"
    fi
  done
  limit=$saved_limit
else
  echo "SCUDA_SUITES=${SCUDA_SUITES:-}: torch suite skipped"
fi
# --------------------------------------------------------------- end torch --

# ---------------------------------------------------------------------------
# nvml suite (issue 3): nvidia-smi and pynvml natively and through scuda (the
# client inside isolate.sh, which also hides the real libnvidia-ml). Runs
# unless SCUDA_SUITES leaves out nvml; SCUDA_NVML_TIMEOUT: seconds per run (60).
# A check row per nvidia-smi view (exit codes, no crash at exit), then rows
# comparing the stable fields.
nvml_smi() {  # nvml_smi NAME ARGS...: nvidia-smi ARGS natively and through scuda
  local name=$1 native_rc
  shift
  timed "nvml_$name.native" nvidia-smi "$@"
  native_rc=$rc
  timed "nvml_$name.scuda" tests/gpu/isolate.sh build/bin/scuda run --server "$server" -- nvidia-smi "$@"
  if [ "$native_rc" -eq 0 ] && [ "$rc" -eq 0 ] && [ -s "$logs/nvml_$name.scuda.out" ]; then
    check "nvml_smi_$name" PASS "rc 0 natively and through scuda (${secs}s)"
  else
    check "nvml_smi_$name" FAIL "native rc=$native_rc, scuda rc=$rc: $(grep -av '^isolate:' "$logs/nvml_$name.scuda.err" | head -n1) $(head -n2 "$logs/nvml_$name.scuda.out")"
  fi
}
nvml_same() {  # nvml_same NAME: are nvml_NAME.{native,scuda}.out identical?
  if [ -s "$logs/nvml_$1.native.out" ] && diff "$logs/nvml_$1.native.out" "$logs/nvml_$1.scuda.out" >"$out/nvml_$1.diff" 2>&1; then
    check "nvml_${1}_same" PASS "$(head -c 250 "$logs/nvml_$1.native.out")"
  else
    check "nvml_${1}_same" FAIL "see nvml_$1.diff: $(grep -m2 '^[<>]' "$out/nvml_$1.diff")"
  fi
}
if [ -z "${SCUDA_SUITES:-}" ] || [[ " ${SCUDA_SUITES//,/ } " == *" nvml "* ]]; then
  saved_limit=$limit limit=${SCUDA_NVML_TIMEOUT:-60}
  section "nvml: nvidia-smi"
  nvml_smi default
  nvml_smi q -q
  nvml_smi query --query-gpu=name,memory.total,memory.used,driver_version,utilization.gpu --format=csv
  nvml_smi L -L
  nvml_smi stable --query-gpu=name,uuid,memory.total,driver_version,pci.bus_id,compute_mode --format=csv,noheader
  nvml_same stable
  nvml_same L
  section "nvml: pynvml"
  timed nvml_pynvml.native python3 tests/gpu/nvml/read_nvml.py
  native_detail=$detail native_rc=$rc
  timed nvml_pynvml.scuda tests/gpu/isolate.sh build/bin/scuda run --server "$server" -- python3 tests/gpu/nvml/read_nvml.py
  if [[ $native_detail == "RESULT read_nvml SKIP"* ]]; then
    check nvml_pynvml SKIP "$native_detail"
  elif [ "$native_rc" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$detail" = "$native_detail" ]; then
    check nvml_pynvml PASS "identical: $native_detail"
  else
    check nvml_pynvml FAIL "native rc=$native_rc, scuda rc=$rc; native: $native_detail; scuda: $detail"
  fi
  limit=$saved_limit
else
  echo "SCUDA_SUITES=${SCUDA_SUITES:-}: nvml suite skipped"
fi
# ---------------------------------------------------------------- end nvml --

section "server stopped: every program through scuda must fail clearly"
[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
server_pid=
for prog in "${programs[@]}"; do
  timed "server_down_$prog" tests/gpu/isolate.sh build/bin/scuda run --server "$server" -- "build/gpu/$prog"
  err=$logs/server_down_$prog.err
  first=$(grep -av '^isolate:' "$err" | grep -am1 .)
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 125 ] &&
    grep -a 'cannot connect to' "$err" | grep -q 'scuda server'; then
    check "server_down_$prog" PASS "rc=$rc in ${secs}s: $first"
  else
    check "server_down_$prog" FAIL "rc=$rc in ${secs}s, stderr does not say the server cannot be reached: $first"
  fi
done

section results
report print
exit $?
