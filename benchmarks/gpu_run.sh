#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU: record it for gpuready's tests, measure it with `gpuready bench`,
# and measure llama.cpp's CUDA backend on random-weight GGUF files in published model shapes, so the
# estimator's figures can be checked against a GPU they were never fitted to.
#
#     OUT=/some/dir LCPP=.lcpp/llama.cpp.tar.gz bash benchmarks/gpu_run.sh
#
# BIG and SMALL name the two random_gguf.py shapes measured (default llama-3.1-8b and llama-3.2-1b);
# DEPTHS is llama-bench -d for the generation-at-depth tests (default 4096,16384);
# PREBUILT=DIR uses llama.cpp binaries already built there instead of building (a dry run on a CPU; the
# tarball is still read, for gguf-py); BUILD_TIMEOUT is the build's limit in seconds (default 400: 305 s on
# 16 vCPUs); WORK is the scratch folder (default a new one under /dev/shm when it has 40 GB free, else
# /tmp; the default files need about 35 GB); LCPP_COMMIT is the commit llama-bench reports (default 0c1e570,
# the tarball's; set it when you pack another tree).
#
# Run it from the repository's root. Needs a C/C++ compiler, nvcc, cmake, ninja, and a python3 with numpy,
# pyyaml (gguf-py reads it), psutil, nvidia-ml-py, py-cpuinfo and (for `gpuready bench`) a CUDA build of
# torch; gpuready itself runs from this checkout. LCPP is a llama.cpp source tarball that `bash
# benchmarks/pack_llama_cpp.sh` makes (the tree vendored in llama-cpp-python 0.3.36, llama.cpp commit 0c1e570,
# without its models/, docs/ and unused backends; about 5.5 MB). llama-bench runs with --repack 0: every layer
# is on the GPU, and llama.cpp's AMX repacking of CPU weights dies with SIGILL on some virtual machines (it
# did on ours). Every step has its own time limit and writes what it got under OUT as it goes, so a run cut
# short still returns what it measured:
#   log.txt               what ran, when (seconds since the start), and each step's exit code
#   recording.tar.gz      `gpuready record` of the machine (scrubbed) and its `report --json` before bench
#   bench.json            `gpuready bench --json`
#   llama-bench.jsonl     llama-bench -o jsonl, one object per test
#   estimate.json         `gpuready estimate FILE.gguf --json` with llama-fit-params on PATH
#   misc.tar.gz           build and quantise logs, llama-fit-params output, `bench --llama-bench`, the
#                         report after bench, `report --torch`, `check --model BIG`
# It exits 1 when a step failed (the log says which), 0 when every step ran.
set -u
OUT=${OUT:-/tmp/gpu-run}
LCPP=${LCPP:-.lcpp/llama.cpp.tar.gz}
COMMIT=${LCPP_COMMIT:-0c1e570}
BIG=${BIG:-llama-3.1-8b}
SMALL=${SMALL:-llama-3.2-1b}
DEPTHS=${DEPTHS:-4096,16384}
mkdir -p "$OUT"
T0=$(date +%s)
exec 3>&1  # log lines go to the terminal, never into a step's redirected output
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/log.txt" >&3; }
FAILED=0
step() {  # step SECONDS NAME COMMAND...: run with a time limit, log its exit code, count a failure
    local limit=$1 name=$2 code; shift 2
    log "start $name"
    timeout "$limit" "$@"
    code=$?
    log "end $name: exit $code"
    [ "$code" -eq 0 ] || FAILED=$((FAILED + 1))
    return "$code"
}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
export PATH=/usr/local/cuda/bin:$PATH
SCRATCH=/tmp
if [ "$(df --output=avail -k /dev/shm 2>/dev/null | tail -1)" -gt 40000000 ] 2>/dev/null; then SCRATCH=/dev/shm; fi
WORK=${WORK:-$(mktemp -d "$SCRATCH/gpuready-run.XXXXXX")}  # a fresh folder: nothing of an earlier run is reused
mkdir -p "$WORK/misc" "$WORK/gguf" "$WORK/cache"
rm -f "$OUT/log.txt" "$OUT/llama-bench.jsonl"
export GPUREADY_CACHE_DIR=$WORK/cache
log "work in $WORK; $(nproc) CPUs; python3 $(python3 -c 'import sys; print(sys.version.split()[0])')"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit,pstate,temperature.gpu \
    --format=csv > "$WORK/misc/nvidia-smi.csv" 2>&1
cat "$WORK/misc/nvidia-smi.csv" | tee -a "$OUT/log.txt"

# llama.cpp: unpack and build in the background while the machine is recorded and the files are written.
# The GPU's own architecture only (9.0 -> 90): one architecture compiles several times faster than all.
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
BIN=${PREBUILT:-$WORK/llama.cpp/build/bin}
(
    tar xzf "$LCPP" -C "$WORK" &&
    sed -i "s/set(BUILD_COMMIT \"unknown\")/set(BUILD_COMMIT \"$COMMIT\")/" "$WORK/llama.cpp/cmake/build-info.cmake" &&
    if [ -z "${PREBUILT:-}" ]; then
        cd "$WORK/llama.cpp" &&
        cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-native}" \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF &&
        timeout "${BUILD_TIMEOUT:-400}" cmake --build build -j "$(nproc)" --target llama-bench llama-quantize llama-fit-params
    fi
) > "$WORK/misc/build.log" 2>&1 &
BUILD=$!

GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
step 60 record python3 -m gpuready record "$WORK/recording" --description "${DESCRIPTION:-${GPU_NAME:-GPU} machine, recorded by benchmarks/gpu_run.sh}"
step 60 report python3 -m gpuready report --json > "$WORK/report-before-bench.json" 2> "$WORK/misc/report.err"
tar czf "$OUT/recording.tar.gz" -C "$WORK" recording report-before-bench.json

export PYTHONPATH=$PWD:$WORK/llama.cpp/gguf-py
while [ ! -d "$WORK/llama.cpp/gguf-py" ] && kill -0 $BUILD 2>/dev/null; do sleep 1; done
step 240 write-gguf python3 benchmarks/random_gguf.py "$WORK/gguf" "$SMALL" "$BIG" || log "no GGUF files: the llama.cpp steps are skipped"
export PYTHONPATH=$PWD
wait $BUILD
code=$?
log "build: exit $code"
[ "$code" -eq 0 ] || FAILED=$((FAILED + 1))
tail -5 "$WORK/misc/build.log" | tee -a "$OUT/log.txt"

G=$WORK/gguf
if [ -x "$BIN/llama-quantize" ] && [ -f "$G/$BIG-F16.gguf" ]; then
    for job in "$BIG Q4_K_M" "$SMALL Q4_K_M" "$BIG Q8_0"; do
        set -- $job
        step 150 "quantize $1 $2" "$BIN/llama-quantize" "$G/$1-F16.gguf" "$G/$1-$2.gguf" "$2" "$(nproc)" > "$WORK/misc/quantize-$1-$2.log" 2>&1
    done
fi

step 120 bench python3 -m gpuready bench --json > "$OUT/bench.json" 2> "$WORK/misc/bench.err"

Q4=$G/$BIG-Q4_K_M.gguf
files=()
for f in "$BIG-Q4_K_M" "$BIG-Q8_0" "$BIG-F16" "$SMALL-Q4_K_M"; do
    [ -f "$G/$f.gguf" ] && files+=(-m "$G/$f.gguf")
done
if [ -x "$BIN/llama-bench" ] && [ ${#files[@]} -gt 0 ]; then
    step 150 llama-bench "$BIN/llama-bench" "${files[@]}" -p 512 -n 128 --repack 0 -o jsonl > "$OUT/llama-bench.jsonl" 2> "$WORK/misc/llama-bench.err"
fi
if [ -x "$BIN/llama-bench" ] && [ -f "$Q4" ] && [ -f "$G/$SMALL-Q4_K_M.gguf" ]; then
    step 120 llama-bench-depth "$BIN/llama-bench" -m "$Q4" -m "$G/$SMALL-Q4_K_M.gguf" \
        -p 0 -n 128 -d "$DEPTHS" -r 3 --repack 0 -o jsonl >> "$OUT/llama-bench.jsonl" 2>> "$WORK/misc/llama-bench.err"
fi
if [ -x "$BIN/llama-fit-params" ] && [ -f "$Q4" ]; then
    step 60 fit-print "$BIN/llama-fit-params" -m "$Q4" -c 8192 --fit-print on > "$WORK/misc/fit-print.txt" 2>&1
    step 60 fit "$BIN/llama-fit-params" -m "$Q4" -c 8192 > "$WORK/misc/fit.txt" 2>&1
    "$BIN/llama-fit-params" --version > "$WORK/misc/fit-version.txt" 2>&1
    PATH=$BIN:$PATH step 60 estimate python3 -m gpuready estimate "$Q4" --json > "$OUT/estimate.json" 2> "$WORK/misc/estimate.err"
fi
if [ -x "$BIN/llama-bench" ] && [ -f "$Q4" ]; then
    PATH=$BIN:$PATH step 90 bench-llama python3 -m gpuready bench --llama-bench "$Q4" --json \
        > "$WORK/misc/bench-llama.json" 2> "$WORK/misc/bench-llama.err"
    step 60 report-after python3 -m gpuready report --json > "$WORK/misc/report-after-bench.json" 2> "$WORK/misc/report-after.err"
fi
# check's exit 1 is an answer (the requirement is not met), not a failed step
timeout 60 python3 -m gpuready check --model "$BIG" --min-speed 50 --json > "$WORK/misc/check.json" 2>&1
log "check: exit $?"
step 90 report-torch python3 -m gpuready report --torch --json > "$WORK/misc/report-torch.json" 2> "$WORK/misc/report-torch.err"
ls -la "$G" > "$WORK/misc/gguf-files.txt"
tar czf "$OUT/misc.tar.gz" -C "$WORK" misc
log "done: $FAILED step(s) failed"
[ "$FAILED" -eq 0 ]
