#!/usr/bin/env bash
# The check on a real NVIDIA GPU (issue 5, point 5). Run it, from the
# repository root, on a machine with an NVIDIA GPU, nvcc and a CUDA torch;
# it needs no internet. It:
#   1. builds llmgw and compares `llmgw discover` with nvidia-smi (driver,
#      every GPU's name and compute capability);
#   2. builds with nvcc a small `llama-server` that lists a CUDA device only
#      when a kernel really ran on it: once with machine code for this GPU,
#      once with machine code only for an older generation (no PTX);
#   3. runs `provision` against the fake release server with the old build
#      first: the real --list-devices check must refuse it and the next
#      build must be installed (tests/gpu.rs);
#   4. runs llmgw's Python GPU check with the torch installed here.
# Everything it prints also goes to $OUT/gpu-check.log when OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
log=${OUT:-$work}/gpu-check.log
exec > >(tee "$log") 2>&1

echo "== build"
cargo build --release --quiet --features gpu-check

echo "== discover vs nvidia-smi"
./target/release/llmgw discover --output "$work/host.json"
nvidia-smi --query-gpu=driver_version,compute_cap,name --format=csv,noheader > "$work/smi.csv"
python3 - "$work/host.json" "$work/smi.csv" <<'PY'
import json, sys
host = json.load(open(sys.argv[1]))
rows = [[c.strip() for c in line.split(",", 2)] for line in open(sys.argv[2]) if line.strip()]
nv = host["nvidia"]
assert nv, "discover found no NVIDIA GPU"
assert nv["driver"] == rows[0][0], ("driver", nv["driver"], rows[0][0])
assert len(nv["gpus"]) == len(rows), ("GPUs", len(nv["gpus"]), len(rows))
for g, (_, cc, name) in zip(nv["gpus"], rows):
    assert (g["compute_capability"], g["name"]) == (cc, name), (g, cc, name)
print("discover agrees with nvidia-smi: driver", nv["driver"], [f'{g["name"]} {g["compute_capability"]}' for g in nv["gpus"]])
PY

echo "== nvcc builds"
cc_num=$(head -1 "$work/smi.csv" | cut -d, -f2 | tr -d ' .')   # 9.0 -> 90
major=${cc_num:0:${#cc_num}-1}
if [ "$major" -ge 9 ]; then old=80; else old=75; fi           # another major: its SASS cannot run here
cat > "$work/server.cu" <<'CU'
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
__global__ void probe(int *out) { *out = 42; }
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--version")) { fprintf(stderr, "version: 10850 (fe14399)\nbuilt with nvcc\n"); return 0; }
    if (argc < 2 || strcmp(argv[1], "--list-devices")) return 1;
    printf("Available devices:\n");
    int n = 0, listed = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    for (int i = 0; i < n; i++) {
        cudaSetDevice(i);
        cudaDeviceProp p; cudaGetDeviceProperties(&p, i);
        int *d = nullptr, h = 0;
        cudaMalloc(&d, sizeof(int));
        probe<<<1, 1>>>(d);
        cudaError_t e = cudaDeviceSynchronize();
        if (e == cudaSuccess) e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
        cudaFree(d);
        if (e != cudaSuccess || h != 42) { fprintf(stderr, "ggml_cuda_init: device %d: %s\n", i, cudaGetErrorString(e)); continue; }
        size_t free_b = 0, total_b = 0; cudaMemGetInfo(&free_b, &total_b);
        printf("  CUDA%d: %s (%zu MiB, %zu MiB free)\n", listed++, p.name, total_b >> 20, free_b >> 20);
    }
    if (!listed) printf("  (none)\n");
    return 0;
}
CU
nvcc -O2 -gencode "arch=compute_${cc_num},code=sm_${cc_num}" -o "$work/good" "$work/server.cu"
nvcc -O2 -gencode "arch=compute_${old},code=sm_${old}" -o "$work/old" "$work/server.cu"
echo 'int llmgw_backend(void) { return 0; }' > "$work/backend.c"
cc -shared -fPIC -o "$work/libbackend.so" "$work/backend.c"
"$work/good" --list-devices
"$work/old" --list-devices || true

echo "== provision with the real checks, and the Python GPU check"
LLMGW_GPU_HOST="$work/host.json" LLMGW_GPU_GOOD="$work/good" LLMGW_GPU_OLD="$work/old" LLMGW_GPU_LIB="$work/libbackend.so" \
  cargo test --release --quiet --features gpu-check --test gpu -- --nocapture --test-threads 1
echo "== gpu check passed"
