#!/usr/bin/env bash
# Downloads into .whl/ the wheels that Tritium and its tests need and the GPU machine's image
# lacks (CPython 3.12, manylinux x86_64), for tools/gpu-check.sh to install there: that machine
# reaches no package index, so what it lacks travels with the working tree (`carry: [".whl"]`).
#
# Run here, on a machine with pip and the network, from anywhere in the checkout:
#   tools/gpu-wheels.sh            # downloads what is missing from .whl/, prints the sizes
#
# The image already has torch, numpy, grpcio, protobuf, aiohttp, anyio, httpx, h11, certifi,
# urllib3, requests, ml-dtypes, packaging, pyyaml, uvloop, hypothesis, pytest(-timeout),
# onnx(runtime), tokenizers, safetensors, jinja2, prometheus-client, cuda-bindings, cupy and
# nvidia-ml-py (/work/.library/device/KINDS.md); its transformers (5.17) is older than the llm
# backend's floor. The versions below are the ones the
# CPU test suite passes with here; one version of each, or pip refuses the whole install.
# Not carried: ray (the wheel alone is over the 64 MiB a run may carry), kubernetes and
# jsonschema (the KServe manifest tests), trustme and cryptography (the gRPC TLS tests): none of
# them has GPU tests, and gpu-check.sh collects only the test files that use the gpu mark.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=$ROOT/.whl
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3

WHEELS=(
    # tritonclient[grpc,http]: the clients the tests and the benchmark drive the server with.
    tritonclient==2.73.0 python-rapidjson==1.25
    geventhttpclient==2.6.1 gevent==26.9.0 greenlet==3.3.2 zope.event==6.2 zope.interface==8.7
    brotli==1.2.1
    # Tritium itself: the HTTP parser, HPACK for its HTTP/2, JSON bodies, ELF reading.
    httptools==0.9.0 hpack==4.2.0 orjson==3.13.0 pyelftools==0.33
    # The HTTP/2 tests' client.
    h2==4.4.1 hyperframe==6.1.0
    # The OpenAI frontend's tests drive it with the official client.
    openai==3.57.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 jiter==0.19.0
    sniffio==1.3.1 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0
    typing-inspection==0.4.5
    # Floors of the above newer than the image may hold (pure Python, backwards compatible).
    typing-extensions==4.16.0 anyio==4.16.0 idna==3.20
    # The llm backend needs transformers>=5.24 (the `cache=` keyword of its forward); the image
    # has 5.17. Its own needs are met there (huggingface-hub 1.33, tokenizers 0.23.2,
    # safetensors 0.8.0). 13.5 MB.
    transformers==5.24.0
)
# Installed there only if the image's protobuf cannot load tritonclient's generated modules
# (their gencode is 6.33.5; an older runtime refuses them).
FALLBACK=(protobuf==6.33.6)

PLATFORMS=()
for p in manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 \
         manylinux_2_31_x86_64 manylinux_2_28_x86_64 manylinux_2_27_x86_64 \
         manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    PLATFORMS+=(--platform "$p")
done

fetch() {  # fetch DIR SPEC...
    local dir=$1
    shift
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --abi cp312 --abi abi3 --abi none "${PLATFORMS[@]}" \
        --platform any -d "$dir" "$@" 2> >(grep -v "is ignored: it is neither" >&2)
}

mkdir -p "$DEST/fallback"
fetch "$DEST" "${WHEELS[@]}"
fetch "$DEST/fallback" "${FALLBACK[@]}"

# One version of each: a wheel left from an older pin would stop the install there.
duplicates=$(ls "$DEST"/*.whl | sed -E 's#.*/##; s#-[0-9][^-]*-.*##' | tr 'A-Z_.' 'a-z--' \
    | sort | uniq -d)
if [ -n "$duplicates" ]; then
    echo "gpu-wheels: more than one version of: $duplicates (remove the old ones from .whl/)" >&2
    exit 1
fi
ls -l "$DEST"/*.whl "$DEST"/fallback/*.whl | awk '{printf "%9d  %s\n", $5, $NF}' | sed "s#$ROOT/##"
du -sh "$DEST" | awk '{print "total: " $1}'
git -C "$ROOT" check-ignore -q .whl/ 2>/dev/null \
    || echo "gpu-wheels: add /.whl/ to .gitignore (or .git/info/exclude), or git will see them" >&2
