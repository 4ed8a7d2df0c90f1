#!/usr/bin/env bash
# Builds the CUDA fixtures of tests/fixtures/cuda/: small shared objects whose
# .nv_fatbin (and __nv_relfatbin) sections were written by the real NVIDIA
# tools, and beside each the real `cuobjdump` and `readelf` listings that
# crates/llmgw-core/src/inspect/fatbin.rs is checked against. No GPU is needed.
#
# Tools come from PyPI, pinned, into virtual environments in a cache directory:
#   CUDA 13.5: nvidia-cuda-nvcc, -crt, nvidia-nvvm, -cuda-runtime, -cuda-cuobjdump
#   CUDA 12.9: nvidia-cuda-nvcc-cu12 (ptxas/libnvvm only: the cu12 wheels ship
#              no `nvcc` driver and no `fatbinary`), nvidia-cuda-nvrtc-cu12 and
#              nvidia-nvfatbin-cu12 (NVIDIA's fatbin-writing library); the 12.9
#              fixtures are therefore compiled by NVRTC 12.9 and packed by
#              nvFatbin 12.9, then embedded the way nvcc's fatbin.c embeds them.
# Every listing is made by the CUDA 13.5 cuobjdump (there is no cu12 cuobjdump
# wheel).
#
# Usage: ci/cuda-fixtures.sh [--install-only] [--out DIR]
#   LLMGW_CACHE      cache root (default $HOME/.cache/llmgw)
#   LLMGW_CUDA13     CUDA 13 venv (default $LLMGW_CACHE/cuda-13)
#   LLMGW_CUDA129    CUDA 12.9 venv (default $LLMGW_CACHE/cuda-12.9)
#   --out DIR        where fixtures go (default tests/fixtures/cuda beside this script's repo)
#
# Re-runnable: an environment is reinstalled only when its pinned set changed.
# Reproducibility: the .nv_fatbin bytes nvcc 13.5 writes are identical run to run;
# the only difference nvcc leaves in a linked object is a STT_FILE symbol named
# after its temporary file (tmpxft_<pid>_...cudafe1.cpp) in .symtab, so every
# object is linked with --strip-all (.dynsym stays) and the outputs are then
# byte-identical between runs on the same host toolchain (g++/ld versions do
# change host code). The 12.9 path (NVRTC + nvFatbin + gcc) is deterministic too.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
out="$repo/tests/fixtures/cuda"
install_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --install-only) install_only=1 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "cuda-fixtures: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

cache=${LLMGW_CACHE:-$HOME/.cache/llmgw}
cuda13=${LLMGW_CUDA13:-$cache/cuda-13}
cuda129=${LLMGW_CUDA129:-$cache/cuda-12.9}

CUDA13_PKGS="nvidia-cuda-nvcc==13.5.37 nvidia-cuda-crt==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cuda-cuobjdump==13.5.37"
CUDA129_PKGS="nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-nvfatbin-cu12==12.9.82"

need() { command -v "$1" >/dev/null 2>&1 || { echo "cuda-fixtures: needs $1 ($2)" >&2; exit 1; }; }
need python3 "to make the tool environments"
need g++ "nvcc's host compiler: apt-get install g++"
need gcc "apt-get install gcc"
need readelf "apt-get install binutils"

# install DIR "PKGS": a venv at DIR holding exactly the pinned PKGS.
install() {
  local dir=$1 pkgs=$2
  if [ -f "$dir/.llmgw-pins" ] && [ "$(cat "$dir/.llmgw-pins")" = "$pkgs" ]; then
    echo "cuda-fixtures: using $dir ($pkgs)"
    return
  fi
  echo "cuda-fixtures: installing into $dir: $pkgs"
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  python3 -m venv "$dir"
  # shellcheck disable=SC2086
  "$dir/bin/pip" install --quiet --disable-pip-version-check $pkgs
  printf '%s' "$pkgs" >"$dir/.llmgw-pins"
}
install "$cuda13" "$CUDA13_PKGS"
install "$cuda129" "$CUDA129_PKGS"

site13=$("$cuda13/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
site129=$("$cuda129/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cu13=$site13/nvidia/cu13
# -cudart shared links -lcudart: the wheel has only the soname file.
[ -e "$cu13/lib/libcudart.so" ] || ln -s libcudart.so.13 "$cu13/lib/libcudart.so"
nvcc=$cu13/bin/nvcc
cuobjdump=$cu13/bin/cuobjdump
echo "cuda-fixtures: nvcc $("$nvcc" --version | tail -1), cuobjdump from $cuobjdump"
[ "$install_only" = 1 ] && exit 0

mkdir -p "$out"
src=$out/kernels.cu
[ -f "$src" ] || { echo "cuda-fixtures: $src is missing" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The oracle files beside <name>.so:
#   <name>.cuobjdump.txt          cuobjdump --list-elf --list-ptx (stdout; the
#                                 "info: No PTX file found" notes go to stderr)
#   <name>.cuobjdump-all.txt      the same with -all (also lists __nv_relfatbin)
#   <name>.cuobjdump-headers.txt  the fatbin entry headers as `cuobjdump -all -elf -ptx`
#                                 prints them (arch, code version, compressed...)
#   <name>.readelf.txt            readelf -d -V --dyn-syms -W
#   <name>.sections.txt           readelf -S -W (offsets/sizes of .nv_fatbin etc.)
oracle() {
  local name=$1
  (
    cd "$out"
    "$cuobjdump" --list-elf --list-ptx "$name.so" 2>/dev/null >"$name.cuobjdump.txt"
    "$cuobjdump" -all --list-elf --list-ptx "$name.so" 2>/dev/null >"$name.cuobjdump-all.txt"
    "$cuobjdump" -all -elf -ptx "$name.so" 2>/dev/null |
      grep -E '^[[:space:]]*(Fatbin .*code:|arch = |code version = |producer = |host = |compile_size = |compressed$|identifier = |ptxasOptions = |64-?bit (ELF|elf): )' \
        >"$name.cuobjdump-headers.txt" || true
    readelf -d -V --dyn-syms -W "$name.so" >"$name.readelf.txt"
    readelf -S -W "$name.so" >"$name.sections.txt"
  )
  echo "cuda-fixtures: $name.so $(stat -c %s "$out/$name.so") bytes: $(tr '\n' ';' <"$out/$name.cuobjdump-all.txt")"
}

# nvcc NAME FLAGS...: one shared object from kernels.cu with nvcc 13.5.
build13() {
  local name=$1
  shift
  (cd "$work" && "$nvcc" -shared -Xcompiler -fPIC -cudart shared -Xlinker --strip-all "$@" -o "$out/$name.so" "$src")
  oracle "$name"
}

build13 sass_sm86 -gencode arch=compute_86,code=sm_86
build13 ptx_compute75 -gencode arch=compute_75,code=compute_75
build13 ptx_compute75_nocompress --no-compress -gencode arch=compute_75,code=compute_75
# ggml's real mix (SASS 86, 89, 120a, 121a + PTX 75, 80, 90), three kernels.
build13 ggml_mix -DMANY_KERNELS \
  -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89 \
  -gencode arch=compute_120a,code=sm_120a -gencode arch=compute_121a,code=sm_121a \
  -gencode arch=compute_75,code=compute_75 -gencode arch=compute_80,code=compute_80 \
  -gencode arch=compute_90,code=compute_90
build13 sm90a -gencode arch=compute_90a,code=sm_90a
build13 sm100a_sm120a -gencode arch=compute_100a,code=sm_100a -gencode 'arch=compute_120a,code=[sm_120a,compute_120a]'
build13 family_f -gencode 'arch=compute_100f,code=[sm_100f,compute_100f]' -gencode arch=compute_120f,code=sm_120f
build13 compress_all -Xfatbin=-compress-all -gencode arch=compute_86,code=sm_86 -gencode arch=compute_80,code=compute_80
build13 compress_mode_size --compress-mode=size -gencode arch=compute_86,code=sm_86
# --compress-mode=speed: nvcc 13 writes LZ4 (flag 0x2000) PTX, as CUDA 12 did.
build13 compress_mode_speed --compress-mode=speed -gencode 'arch=compute_86,code=[sm_86,compute_86]'
# --concat packs several images into one compressed "concatenated" entry (kind 0x100).
build13 concat --concat -gencode arch=compute_86,code=sm_86 -gencode arch=compute_120a,code=sm_120a \
  -gencode 'arch=compute_100f,code=[sm_100f,compute_100f]' -gencode arch=compute_75,code=compute_75
# Relocatable device code: the relocatable images go to __nv_relfatbin.
build13 rdc -rdc=true -gencode arch=compute_86,code=sm_86 -gencode arch=compute_80,code=compute_80

# CUDA 12.9: NVRTC 12.9 compiles, nvFatbin 12.9 packs (identifier "kernels.cu"),
# gcc embeds the fatbin in .nv_fatbin with a __fatBinC_Wrapper_t in .nvFatBinSegment.
cat >"$work/mkfatbin129.py" <<'EOF'
import ctypes, os, sys
site, src_path, out = sys.argv[1:4]
targets = sys.argv[4:]  # sm_NN (SASS via NVRTC -arch=sm_NN) or compute_NN (PTX)
nvrtc = ctypes.CDLL(os.path.join(site, "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"))
fb = ctypes.CDLL(os.path.join(site, "nvidia/nvfatbin/lib/libnvfatbin.so.12"))
def strs(xs):
    return (ctypes.c_char_p * len(xs))(*[x.encode() for x in xs])
def compile_(src, arch, cubin):
    prog = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"kernels.cu", 0, None, None) == 0
    if nvrtc.nvrtcCompileProgram(prog, 1, strs(["-arch=" + arch])) != 0:
        n = ctypes.c_size_t(); nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value); nvrtc.nvrtcGetProgramLog(prog, log)
        sys.exit("nvrtc: " + log.value.decode())
    n = ctypes.c_size_t()
    if cubin:
        nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n)); buf = ctypes.create_string_buffer(n.value); nvrtc.nvrtcGetCUBIN(prog, buf)
    else:
        nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(n)); buf = ctypes.create_string_buffer(n.value); nvrtc.nvrtcGetPTX(prog, buf)
    return buf.raw
opts = ["-64", "-host=linux"] + os.environ.get("NVFATBIN_OPTS", "").split()
src = open(src_path, "rb").read()
h = ctypes.c_void_p()
assert fb.nvFatbinCreate(ctypes.byref(h), strs(opts), len(opts)) == 0
for t in targets:
    kind, num = t.split("_")
    code = compile_(src, t, kind == "sm")
    if kind == "sm":
        r = fb.nvFatbinAddCubin(h, code, len(code), num.encode(), b"kernels.cu")
    else:
        r = fb.nvFatbinAddPTX(h, code, len(code), num.encode(), b"kernels.cu", b"")
    assert r == 0, (t, r)
n = ctypes.c_size_t(); fb.nvFatbinSize(h, ctypes.byref(n))
buf = ctypes.create_string_buffer(n.value)
assert fb.nvFatbinGet(h, buf) == 0
open(out, "wb").write(buf.raw)
EOF
cat >"$work/host129.c" <<'EOF'
/* What nvcc's generated <file>.fatbin.c does: the fatbin in .nv_fatbin, its wrapper in .nvFatBinSegment. */
__asm__(".section .nv_fatbin, \"a\"\n.balign 8\n.globl llmgw_fatbin_data\nllmgw_fatbin_data:\n.incbin \"" FATBIN "\"\n.previous\n");
extern const unsigned long long llmgw_fatbin_data[];
typedef struct { int magic; int version; const unsigned long long *data; void *filename_or_fatbins; } fatbin_wrapper;
__attribute__((section(".nvFatBinSegment"), aligned(8), used))
const fatbin_wrapper llmgw_fatbin_wrapper = { 0x466243b1, 1, llmgw_fatbin_data, 0 };
EOF
build129() {
  local name=$1 opts=$2
  shift 2
  NVFATBIN_OPTS=$opts "$cuda129/bin/python" "$work/mkfatbin129.py" "$site129" "$src" "$work/$name.fatbin" "$@"
  (cd "$work" && gcc -shared -fPIC -s -DFATBIN="\"$name.fatbin\"" -o "$out/$name.so" host129.c)
  oracle "$name"
}
build129 cuda129 "" sm_86 compute_75
build129 cuda129_compress_all "-compress-all" sm_86 compute_75

{
  echo "# Tools that made these fixtures (ci/cuda-fixtures.sh)"
  "$cuda13/bin/pip" freeze --disable-pip-version-check | grep -i nvidia
  "$cuda129/bin/pip" freeze --disable-pip-version-check | grep -i nvidia
  "$nvcc" --version | tail -2
  echo "host: $(g++ --version | head -1); $(ld --version | head -1)"
} >"$out/TOOLS.txt"
echo "cuda-fixtures: wrote $out"
