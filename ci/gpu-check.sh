#!/usr/bin/env bash
# The check on a real NVIDIA GPU (issue 5, point 5). Run it, from the
# repository root, on a machine with an NVIDIA GPU, nvcc and a CUDA torch;
# it needs no internet. It:
#   1. builds llmgw and compares `llmgw discover` with nvidia-smi (driver,
#      every GPU's name and compute capability);
#   2. builds with nvcc a small program that answers as `llama-server`
#      (--list-devices, launching nothing) and as `llama-bench` (llmgw's
#      compute check: a kernel launched on the device asked for): once with
#      machine code for this GPU, once with machine code only for an older
#      generation (no PTX);
#   3. runs `provision` against the fake release server with the old build
#      first: its --list-devices lists the GPU, the compute check must
#      refuse it with CUDA's "no kernel image" line and the next build must
#      be installed (tests/gpu.rs);
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
// As llama-server: --version, and --list-devices through the CUDA runtime,
// launching nothing (as ggml_cuda_init does). As llama-bench (llmgw's
// compute check: -m MODEL -dev CUDA<n> ... -o jsonl): a kernel launched on
// that device, then llama-bench's JSON rows; or CUDA's error line and an
// abort, as ggml-cuda's ggml_cuda_error does.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
__global__ void probe(int *out) { *out = 42; }
static const char *arg(int argc, char **argv, const char *flag) {
    for (int i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], flag)) return argv[i + 1];
    return nullptr;
}
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--version")) { fprintf(stderr, "version: 10850 (fe14399)\nbuilt with nvcc\n"); return 0; }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    if (argc > 1 && !strcmp(argv[1], "--list-devices")) {
        printf("Available devices:\n");
        for (int i = 0; i < n; i++) {
            cudaDeviceProp p; cudaGetDeviceProperties(&p, i);
            cudaSetDevice(i);
            size_t free_b = 0, total_b = 0; cudaMemGetInfo(&free_b, &total_b);
            printf("  CUDA%d: %s (%zu MiB, %zu MiB free)\n", i, p.name, total_b >> 20, free_b >> 20);
        }
        if (!n) printf("  (none)\n");
        return 0;
    }
    const char *model = arg(argc, argv, "-m"), *dev = arg(argc, argv, "-dev");
    if (!model || !dev) return 1;
    FILE *f = fopen(model, "rb");
    char magic[4] = {0};
    if (!f || fread(magic, 1, 4, f) != 4 || memcmp(magic, "GGUF", 4)) {
        fprintf(stderr, "llama_bench: error: failed to load model '%s'\n", model);
        return 1;
    }
    fclose(f);
    int d = -1;
    if (strncmp(dev, "CUDA", 4) || (d = atoi(dev + 4)) >= n) { fprintf(stderr, "error: invalid device: %s\n", dev); return 1; }
    cudaSetDevice(d);
    int *out = nullptr, h = 0;
    cudaMalloc(&out, sizeof(int));
    probe<<<1, 1>>>(out);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(&h, out, sizeof(int), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess || h != 42) {
        fprintf(stderr, "ggml_cuda_compute_forward: RMS_NORM failed\nCUDA error: %s\n  current device: %d\n", cudaGetErrorString(e), d);
        abort();
    }
    printf("{\"backends\": \"CUDA\", \"devices\": \"%s\", \"n_prompt\": 8, \"n_gen\": 0, \"avg_ts\": 1.0}\n", dev);
    printf("{\"backends\": \"CUDA\", \"devices\": \"%s\", \"n_prompt\": 0, \"n_gen\": 8, \"avg_ts\": 1.0}\n", dev);
    return 0;
}
CU
nvcc -O2 -gencode "arch=compute_${cc_num},code=sm_${cc_num}" -o "$work/good" "$work/server.cu"
nvcc -O2 -gencode "arch=compute_${old},code=sm_${old}" -o "$work/old" "$work/server.cu"
echo 'int llmgw_backend(void) { return 0; }' > "$work/backend.c"
cc -shared -fPIC -o "$work/libbackend.so" "$work/backend.c"
"$work/good" --list-devices
"$work/old" --list-devices
printf 'GGUF' > "$work/model.gguf"
"$work/good" -m "$work/model.gguf" -dev CUDA0 -o jsonl
"$work/old" -m "$work/model.gguf" -dev CUDA0 -o jsonl || echo "(the old build cannot compute here, as expected: exit status $?)"

echo "== provision with the real checks, and the Python GPU check"
LLMGW_GPU_HOST="$work/host.json" LLMGW_GPU_GOOD="$work/good" LLMGW_GPU_OLD="$work/old" LLMGW_GPU_LIB="$work/libbackend.so" \
  cargo test --release --quiet --features gpu-check --test gpu -- --nocapture --test-threads 1
echo "== gpu check passed"
