#!/usr/bin/env bash
# Issue 29's GPU check in one go, on the GPU machine (no package index there): installs the
# carried wheels (tools/gpu-wheels.sh put them in .whl/) beside the image's torch, builds the
# native library, prints the GPU, driver and library versions, runs what `make test-gpu` runs
# (`pytest -q -m gpu -rs`), then the GPU benchmarks, each step under a time limit.
#
#   tools/gpu-check.sh            # there, from the repository root, .whl carried with the tree
#   PYTHON=/path/to/venv/bin/python tools/gpu-check.sh --local
#                                 # here: this venv, no wheel install; GPU tests skip and the
#                                 # benchmark runs its small CPU mode, to try the script itself
#
# Results go flat into $OUT (default /tmp/gpu-check-out), at most 8 files: check.log (all the
# output), summary.txt (each step's exit status and seconds), pytest-gpu.xml, gpu_bench.json/.md,
# gpu_llm_bench.json/.md (if bench/gpu_llm_bench.py exists). Limits in seconds, overridable:
# TEST_LIMIT (210), BENCH_LIMIT (170), LLM_LIMIT (90); the whole run fits in about 8 minutes.
# GPU_TEST_WORKERS=N runs the GPU tests in N pytest-xdist processes, a test file per process
# (serial by default, as `make test-gpu`).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
LOCAL=0
[ "${1:-}" = --local ] && LOCAL=1
OUT=${OUT:-/tmp/gpu-check-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
TEST_LIMIT=${TEST_LIMIT:-210}
BENCH_LIMIT=${BENCH_LIMIT:-170}
LLM_LIMIT=${LLM_LIMIT:-90}
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"

step() {  # step NAME LIMIT COMMAND...: runs it under `timeout`, SIGINT first so pytest and the
    local name=$1 limit=$2 start rc  # benchmarks write what they have, then SIGKILL
    shift 2
    echo
    echo "===== $name (limit ${limit}s): $*"
    start=$(date +%s)
    timeout -s INT -k 15 "$limit" "$@"
    rc=$?
    echo "$name: exit $rc after $(($(date +%s) - start))s$([ $rc = 124 ] && echo ', TIME LIMIT')" \
        | tee -a "$SUMMARY"
    return $rc
}

versions() {
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo 'unknown (no .git here)')"
    command -v nvidia-smi >/dev/null && timeout 30 nvidia-smi
    timeout -k 5 90 "$PY" - <<'EOF'
import importlib.metadata as metadata
import platform

print("python", platform.python_version(), platform.machine())
for name in ("torch", "cupy-cuda13x", "cuda-bindings", "nvidia-ml-py", "onnxruntime",
             "onnxruntime-gpu", "onnx", "transformers", "tokenizers", "safetensors", "numpy",
             "grpcio", "protobuf", "tritonclient", "ml-dtypes", "pytest", "pytest-xdist"):
    try:
        print(f"  {name} {metadata.version(name)}")
    except metadata.PackageNotFoundError:
        print(f"  {name}: not installed")

def fact(label, read):
    try:
        print(f"{label}: {read()}")
    except Exception as exc:
        print(f"{label}: failed ({type(exc).__name__}: {exc})")

def torch_facts():
    import torch
    if not torch.cuda.is_available():
        return f"{torch.__version__}, no CUDA device"
    names = [f"{torch.cuda.get_device_name(i)} (sm_{''.join(map(str, torch.cuda.get_device_capability(i)))})"
             for i in range(torch.cuda.device_count())]
    return (f"{torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
            f"{torch.backends.cudnn.version()}, devices {names}")

def cupy_facts():
    import cupy
    runtime = cupy.cuda.runtime
    return (f"{cupy.__version__}, runtime {runtime.runtimeGetVersion()}, driver "
            f"{runtime.driverGetVersion()}, {runtime.getDeviceCount()} device(s)")

def bindings_facts():
    from cuda.bindings import driver
    driver.cuInit(0)
    error, version = driver.cuDriverGetVersion()
    return f"cuDriverGetVersion {version} ({error})"

def ort_facts():
    import onnxruntime
    return f"{onnxruntime.__version__}, providers {onnxruntime.get_available_providers()}"

def tritium_facts():
    from tritium import gpus
    inventory = gpus.discover()
    return f"driver {inventory.driver_version}, {[(d.device_id, d.name, d.uuid) for d in inventory.devices]}"

fact("torch", torch_facts)
fact("cupy", cupy_facts)
fact("cuda.bindings", bindings_facts)
fact("onnxruntime", ort_facts)
fact("tritium.gpus.discover()", tritium_facts)
EOF
    local rc=$?
    [ $rc = 0 ] || echo "versions: the Python part exited $rc$([ $rc = 124 ] && echo ' (90 s limit)')"
}

main() {
    echo "gpu-check: $(date -u +%FT%TZ) on $(hostname), results in $OUT"
    if [ $LOCAL = 1 ]; then
        PY=${PYTHON:-$ROOT/.venv/bin/python}
        export PYTHONPATH=$ROOT/src${PYTHONPATH:+:$PYTHONPATH}
    else
        PY=${PYTHON:-python3}
        ls .whl/*.whl >/dev/null 2>&1 || {
            echo "gpu-check: no wheels in .whl/ (run tools/gpu-wheels.sh here, carry .whl)"
            return 1
        }
        step wheels 120 "$PY" -m pip install -q --no-index --no-deps --no-compile \
            --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
        export PYTHONPATH=/tmp/site:$ROOT/src
        # tritonclient's generated modules refuse a protobuf runtime older than their gencode.
        if ! "$PY" -c "import tritonclient.grpc.service_pb2" 2>/dev/null; then
            echo "gpu-check: the image's protobuf cannot load tritonclient's modules:" \
                 "installing .whl/fallback"
            "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
                --upgrade --target /tmp/site .whl/fallback/*.whl || return 1
        fi
    fi
    echo "python: $PY; PYTHONPATH=$PYTHONPATH"
    "$PY" -c "import tritium, tritonclient.grpc, tritonclient.http" || return 1

    echo
    echo "===== versions"
    versions
    # `make native`: Tritium's libtritonserver.so for native backends (a failure fails only those).
    step native 180 "$PY" -c \
        "import sys; from tritium.backend.native import build; sys.exit(build.main())"

    # Only the test files that can hold GPU tests (they take the mark from support.gpu): the
    # others would be imported for nothing, and some need what the image lacks (ray, trustme,
    # kubernetes; see gpu-wheels.sh).
    local files
    mapfile -t files < <(grep -rlE "support\.gpu|pytest\.mark\.gpu" tests --include='test_*.py' \
                         | sort)
    echo "gpu-check: ${#files[@]} test files use the gpu mark: ${files[*]}"
    local workers=()
    if [ "${GPU_TEST_WORKERS:-0}" -gt 0 ]; then
        workers=(-n "$GPU_TEST_WORKERS" --dist loadfile)
    fi
    if [ ${#files[@]} = 0 ]; then
        echo "test-gpu: exit 5 after 0s (no test file uses the gpu mark)" | tee -a "$SUMMARY"
    else
        step test-gpu "$TEST_LIMIT" "$PY" -m pytest -q -m gpu -rs -p no:cacheprovider \
            --timeout 120 --continue-on-collection-errors --junitxml "$OUT/pytest-gpu.xml" \
            "${workers[@]}" "${files[@]}"
    fi

    local bench=()
    [ $LOCAL = 1 ] && bench=(--device cpu --width 64 --seconds 1 --warmup 0.3
                             --direct-seconds 0.3 --batches 8 64 --concurrency 2 --clients 2)
    step gpu-bench "$BENCH_LIMIT" "$PY" bench/gpu_bench.py "${bench[@]}" \
        --out "$OUT/gpu_bench.json" --markdown "$OUT/gpu_bench.md"

    if [ -f bench/gpu_llm_bench.py ]; then
        local llm=()
        [ $LOCAL = 1 ] && llm=(--size tiny --device cpu --dtype float32 --streams 4 --rounds 1
                               --single 1 --prompt-tokens 32 --max-tokens 16)
        grep -q -- '"--out"' bench/gpu_llm_bench.py && llm+=(--out "$OUT/gpu_llm_bench.json")
        grep -q -- '"--markdown"' bench/gpu_llm_bench.py \
            && llm+=(--markdown "$OUT/gpu_llm_bench.md")
        step gpu-llm-bench "$LLM_LIMIT" "$PY" bench/gpu_llm_bench.py "${llm[@]}"
    else
        echo "gpu-check: no bench/gpu_llm_bench.py: the llm GPU benchmark is not run"
    fi
    echo
    echo "===== summary"
    cat "$SUMMARY"
    ! grep -qv ": exit 0 " "$SUMMARY"
}

main "$@" 2>&1 | tee "$OUT/check.log"
