#!/usr/bin/env bash
# Pack the llama.cpp source that benchmarks/gpu_run.sh builds, small enough to carry to a machine that
# cannot download anything: the tree vendored in llama-cpp-python's sdist (llama-cpp-python 0.3.36 vendors
# llama.cpp commit 0c1e570), without models/, docs/, tests/, examples/, the web UI and the backends other
# than CPU and CUDA (about 5.5 MB instead of 176 MB).
#
#     bash benchmarks/pack_llama_cpp.sh [OUT.tar.gz]     (default .lcpp/llama.cpp.tar.gz)
#
# A plain llama.cpp checkout works too: set LCPP_SOURCE=DIR to pack that tree instead of the sdist's, and
# LCPP_COMMIT=HASH when running gpu_run.sh so llama-bench reports the commit.
set -euo pipefail
OUT=$(realpath -m "${1:-.lcpp/llama.cpp.tar.gz}")
VERSION=${LLAMA_CPP_PYTHON:-0.3.36}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -n "${LCPP_SOURCE:-}" ]; then
    cp -a "$LCPP_SOURCE" "$WORK/llama.cpp"
else
    python3 -m pip download --quiet --no-deps --no-binary=:all: "llama-cpp-python==$VERSION" -d "$WORK"
    tar xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
    mv "$WORK"/llama_cpp_python-*/vendor/llama.cpp "$WORK/llama.cpp"
fi
cd "$WORK/llama.cpp"
rm -rf .git models docs media tests examples pocs benches tools/ui tools/server app .github
for backend in cann openvino webgpu et metal hexagon sycl vulkan opencl virtgpu zdnn blas musa hip rpc kompute zendnn; do
    rm -rf "ggml/src/ggml-$backend"
done
mkdir -p "$(dirname "$OUT")"
tar czf "$OUT" -C "$WORK" llama.cpp
echo "$OUT: $(du -h "$OUT" | cut -f1)"
