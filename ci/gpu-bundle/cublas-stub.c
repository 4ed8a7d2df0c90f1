/* A stand-in for libcublas.so.13, for the real llama.cpp CUDA build of the
 * GPU bundle (ci/gpu-bundle.sh) on a machine that has the NVIDIA driver and
 * no CUDA toolkit. ggml-cuda links cuBLAS, so its backend does not load
 * without a libcublas.so.13; the real one needs libcublasLt.so.13 beside it,
 * 57 MB and 552 MB in nvidia-cublas 13.10.0.20, which the bundle's 60 MiB
 * cannot carry. ggml creates its cuBLAS handle only when an operation
 * takes the cuBLAS path (ggml_cuda_mul_mat_cublas and a few others); the
 * tiny model's f16 matrix products at batch 8 take ggml's own kernels
 * (mmvf, mmf). Every function here says that it was called and aborts, so
 * a run that does need cuBLAS fails saying so, never with a wrong result.
 * ci/gpu-check.sh uses the machine's own libcublas.so.13 where it finds one.
 *
 * STUBS names a file of `STUB(name)` lines: the cuBLAS functions
 * libggml-cuda.so imports (its undefined dynamic symbols), written by
 * ci/gpu-bundle.sh. They are defined in the version node `libcublas.so.13`,
 * as the real library's are (cublas.map). */
#include <stdio.h>
#include <stdlib.h>

static void called(const char *name) {
    fprintf(stderr,
            "cublas stub error: %s was called: this llama.cpp build found no libcublas.so.13 on this machine and "
            "loaded the GPU bundle's stub (ci/gpu-bundle/cublas-stub.c)\n",
            name);
    fflush(stderr);
    abort();
}

#define STUB(name)                 \
    int name(void) {               \
        called(#name);             \
        return 14; /* not reached */ \
    }
#include STUBS
