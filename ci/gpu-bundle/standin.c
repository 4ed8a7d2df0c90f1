/* A stand-in for llama.cpp's `llama-server` and `llama-bench`, for the check
 * on a real NVIDIA GPU (ci/gpu-check.sh; built by ci/gpu-bundle.sh). It talks
 * to the GPU through the driver's libcuda.so.1 alone (loaded with dlopen, as
 * the CUDA runtime does), so that it runs on a machine with nothing but the
 * driver, whatever its version from 525 on:
 *
 *   --version        `version: 0.4.0-dev (build 10850, commit fe14399)` on
 *                    stderr, as llama-server prints it (common/arg.cpp)
 *   --list-devices   `Available devices:` then `  CUDA<n>: <name> (<total>
 *                    MiB, <free> MiB free)` per device, as llama-server lists
 *                    them; loads no kernel (as ggml_cuda_init launches none)
 *   -m MODEL -dev CUDA<n> …   as llama-bench in llmgw's compute check: the
 *                    model's GGUF magic read, then the device code embedded
 *                    below loaded on device n and a kernel launched; two JSON
 *                    rows as llama-bench -o jsonl prints them (a prompt row,
 *                    a generation row); or CUDA's own words for why it could
 *                    not (`CUDA error: no kernel image is available for
 *                    execution on the device`, cuGetErrorString's) and an
 *                    abort, as ggml-cuda's ggml_cuda_error does.
 *
 * Every run that touches the GPU first says what ggml_cuda_init says
 * (ggml/src/ggml-cuda/ggml-cuda.cu): `ggml_cuda_init: found N CUDA devices:`
 * and a line per device, or `ggml_cuda_init: failed to initialize CUDA: …`.
 *
 * The device code (probe.cu) is a fatbin written by NVRTC and nvFatbin.
 * With SEEN defined it lies where nvcc puts it, in the section `.nv_fatbin`
 * with nvcc's wrapper in `.nvFatBinSegment`, so that `llmgw inspect` and
 * `cuobjdump` list its machine code; without, in a data section of its own
 * (`.rodata.llmgw_probe`) that no tool reads as CUDA code, as the code of a
 * program that loads its module at run time: then only the driver, at the
 * compute check, says whether it runs on the GPU (the old stand-in: llmgw's
 * reading of the files before they run would refuse it otherwise, which is
 * not the check this program is for). FATBIN names the file; VERSION_LINE,
 * BUILD_NUMBER and BUILD_COMMIT what it says. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef VERSION_LINE
#define VERSION_LINE "version: 0.4.0-dev (build 10850, commit fe14399)"
#endif
#ifndef BUILD_NUMBER
#define BUILD_NUMBER 10850
#endif
#ifndef BUILD_COMMIT
#define BUILD_COMMIT "fe14399"
#endif

#ifdef SEEN
#define FATBIN_SECTION ".nv_fatbin"
#else
#define FATBIN_SECTION ".rodata.llmgw_probe"
#endif
__asm__(".section " FATBIN_SECTION ", \"a\"\n.balign 16\n.globl llmgw_fatbin_data\nllmgw_fatbin_data:\n.incbin \"" FATBIN
        "\"\n.previous\n");
extern const unsigned long long llmgw_fatbin_data[];
#ifdef SEEN
typedef struct {
    int magic;
    int version;
    const unsigned long long *data;
    void *filename_or_fatbins;
} fatbin_wrapper;
__attribute__((section(".nvFatBinSegment"), aligned(8), used)) const fatbin_wrapper llmgw_fatbin_wrapper = {
    0x466243b1, 1, llmgw_fatbin_data, 0};
#endif

/* The driver API, as cuda.h declares it (the _v2 entry points). */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;
enum { ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76 };

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                             void **, void **);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*GetErrorString)(CUresult, const char **);
} cu;

static const char *says(CUresult r) {
    const char *s = NULL;
    if (cu.GetErrorString && cu.GetErrorString(r, &s) == 0 && s) return s;
    return "unknown CUDA error";
}

/* ggml_cuda_init: the driver loaded and asked; the number of devices, or -1
 * after saying why not. */
static int init(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "ggml_cuda_init: failed to initialize CUDA: %s\n", dlerror());
        return -1;
    }
#define SYM(field, name)                                                                    \
    if (!(*(void **)&cu.field = dlsym(h, name))) {                                          \
        fprintf(stderr, "ggml_cuda_init: failed to initialize CUDA: libcuda.so.1 has no %s\n", name); \
        return -1;                                                                          \
    }
    SYM(Init, "cuInit") SYM(DeviceGetCount, "cuDeviceGetCount")
    SYM(DeviceGet, "cuDeviceGet") SYM(DeviceGetName, "cuDeviceGetName")
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute") SYM(DeviceTotalMem, "cuDeviceTotalMem_v2")
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") SYM(CtxSetCurrent, "cuCtxSetCurrent")
    SYM(MemGetInfo, "cuMemGetInfo_v2") SYM(ModuleLoadData, "cuModuleLoadData")
    SYM(ModuleGetFunction, "cuModuleGetFunction") SYM(MemAlloc, "cuMemAlloc_v2") SYM(MemsetD32, "cuMemsetD32_v2")
    SYM(LaunchKernel, "cuLaunchKernel") SYM(CtxSynchronize, "cuCtxSynchronize") SYM(MemcpyDtoH, "cuMemcpyDtoH_v2")
    SYM(GetErrorString, "cuGetErrorString")
#undef SYM
    CUresult r = cu.Init(0);
    int n = 0;
    if (r == 0) r = cu.DeviceGetCount(&n);
    if (r != 0) {
        fprintf(stderr, "ggml_cuda_init: failed to initialize CUDA: %s\n", says(r));
        return -1;
    }
    fprintf(stderr, "ggml_cuda_init: found %d CUDA devices:\n", n);
    for (int i = 0; i < n; i++) {
        CUdevice d;
        char name[256] = "?";
        int major = 0, minor = 0;
        cu.DeviceGet(&d, i);
        cu.DeviceGetName(name, sizeof name, d);
        cu.DeviceGetAttribute(&major, ATTR_CC_MAJOR, d);
        cu.DeviceGetAttribute(&minor, ATTR_CC_MINOR, d);
        fprintf(stderr, "  Device %d: %s, compute capability %d.%d, VMM: no\n", i, name, major, minor);
    }
    return n;
}

static const char *arg(int argc, char **argv, const char *flag) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], flag)) return argv[i + 1];
    return NULL;
}

static int list_devices(void) {
    int n = init();
    printf("Available devices:\n");
    for (int i = 0; i < n; i++) {
        CUdevice d;
        CUcontext c;
        char name[256] = "?";
        size_t total = 0, free_b = 0, t2 = 0;
        cu.DeviceGet(&d, i);
        cu.DeviceGetName(name, sizeof name, d);
        cu.DeviceTotalMem(&total, d);
        if (cu.DevicePrimaryCtxRetain(&c, d) == 0 && cu.CtxSetCurrent(c) == 0) cu.MemGetInfo(&free_b, &t2);
        printf("  CUDA%d: %s (%zu MiB, %zu MiB free)\n", i, name, total >> 20, free_b >> 20);
    }
    if (n <= 0) printf("  (none)\n");
    return 0;
}

/* A failed CUDA call, in ggml_cuda_error's form, then an abort. */
static void fail(const char *what, CUresult r, int device) {
    fprintf(stderr, "standin: %s failed\nCUDA error: %s\n  current device: %d\n", what, says(r), device);
    fflush(stderr);
    abort();
}

static int bench(const char *model, const char *dev) {
    FILE *f = fopen(model, "rb");
    char magic[4] = {0};
    if (!f || fread(magic, 1, 4, f) != 4 || memcmp(magic, "GGUF", 4)) {
        fprintf(stderr, "llama_model_load: error loading model: %s is not a GGUF file\n", model);
        fprintf(stderr, "main: error: failed to load model '%s'\n", model);
        return 1;
    }
    fclose(f);
    int n = init();
    char *end = NULL;
    long i = strncmp(dev, "CUDA", 4) ? -1 : strtol(dev + 4, &end, 10);
    if (i < 0 || !end || *end || i >= n) {
        fprintf(stderr, "error: invalid device: %s\n", dev);
        return 1;
    }
    CUdevice d;
    CUcontext c;
    CUmodule m;
    CUfunction k;
    CUdeviceptr out;
    CUresult r;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((r = cu.DeviceGet(&d, (int)i))) fail("cuDeviceGet", r, (int)i);
    if ((r = cu.DevicePrimaryCtxRetain(&c, d)) || (r = cu.CtxSetCurrent(c))) fail("cuDevicePrimaryCtxRetain", r, (int)i);
    /* The driver picks the machine code for this GPU from the fatbin, or
     * says there is none (CUDA_ERROR_NO_BINARY_FOR_GPU): no PTX to compile. */
    if ((r = cu.ModuleLoadData(&m, llmgw_fatbin_data))) fail("cuModuleLoadData", r, (int)i);
    if ((r = cu.ModuleGetFunction(&k, m, "probe"))) fail("cuModuleGetFunction", r, (int)i);
    if ((r = cu.MemAlloc(&out, sizeof(int))) || (r = cu.MemsetD32(out, 0, 1))) fail("cuMemAlloc", r, (int)i);
    void *params[] = {&out};
    if ((r = cu.LaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL))) fail("cuLaunchKernel", r, (int)i);
    if ((r = cu.CtxSynchronize())) fail("cuCtxSynchronize", r, (int)i);
    int got = 0;
    if ((r = cu.MemcpyDtoH(&got, out, sizeof got))) fail("cuMemcpyDtoH", r, (int)i);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* probe.cu: the 32 threads of a warp add their indices: 0 + 1 + … + 31. */
    if (got != 496) {
        fprintf(stderr, "standin: the kernel computed %d, not 496\nCUDA error: wrong result\n", got);
        abort();
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double ts = secs > 0 ? 8.0 / secs : 1.0;
    for (int row = 0; row < 2; row++)
        printf("{\"build_commit\": \"%s\", \"build_number\": %d, \"backends\": \"CUDA\", \"n_gpu_layers\": 99, "
               "\"devices\": \"%s\", \"n_prompt\": %d, \"n_gen\": %d, \"avg_ts\": %f}\n",
               BUILD_COMMIT, BUILD_NUMBER, dev, row ? 0 : 8, row ? 8 : 0, ts);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        fprintf(stderr, "%s\nbuilt with zig cc for x86_64-linux-gnu.2.17 (a stand-in of ci/gpu-bundle.sh)\n",
                VERSION_LINE);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--list-devices")) return list_devices();
    const char *model = arg(argc, argv, "-m"), *dev = arg(argc, argv, "-dev");
    if (model && dev) return bench(model, dev);
    fprintf(stderr, "a stand-in of ci/gpu-bundle.sh: --version, --list-devices, or -m MODEL -dev CUDA<n>\n");
    return 1;
}
