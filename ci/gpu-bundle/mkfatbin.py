"""A fatbin of machine code only, for the stand-ins of ci/gpu-bundle.sh.

Usage: python mkfatbin.py SITE SOURCE OUT TARGET [TARGET ...]

NVRTC 12.9 compiles SOURCE (CUDA C++) to a cubin for each sm_NN and to PTX
for each compute_NN, and nvFatbin 12.9 packs them, uncompressed: a GPU
whose family has no cubin there, and no PTX at or below its compute
capability, gets no kernel from it. SITE is the site-packages of the
virtual environment with nvidia-cuda-nvrtc-cu12 and nvidia-nvfatbin-cu12
(ci/gpu-bundle/standins.txt). The way ci/cuda-fixtures.sh makes its 12.9
fixtures.
"""

import ctypes
import os
import sys

site, src_path, out = sys.argv[1:4]
targets = sys.argv[4:]
nvrtc = ctypes.CDLL(os.path.join(site, "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"))
fb = ctypes.CDLL(os.path.join(site, "nvidia/nvfatbin/lib/libnvfatbin.so.12"))


def strs(xs):
    return (ctypes.c_char_p * len(xs))(*[x.encode() for x in xs])


def compile_(src, arch):
    prog = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"probe.cu", 0, None, None) == 0
    if nvrtc.nvrtcCompileProgram(prog, 1, strs(["-arch=" + arch])) != 0:
        n = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        sys.exit("nvrtc (%s): %s" % (arch, log.value.decode()))
    n = ctypes.c_size_t()
    if arch.startswith("sm_"):
        assert nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n)) == 0 and n.value > 0, arch
        buf = ctypes.create_string_buffer(n.value)
        assert nvrtc.nvrtcGetCUBIN(prog, buf) == 0
    else:
        assert nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(n)) == 0 and n.value > 0, arch
        buf = ctypes.create_string_buffer(n.value)
        assert nvrtc.nvrtcGetPTX(prog, buf) == 0
    return buf.raw


major, minor = ctypes.c_int(), ctypes.c_int()
nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
src = open(src_path, "rb").read()
opts = ["-64", "-host=linux", "-compress=false"]
h = ctypes.c_void_p()
assert fb.nvFatbinCreate(ctypes.byref(h), strs(opts), len(opts)) == 0
for t in targets:
    kind, num = t.split("_")
    code = compile_(src, t)
    if kind == "sm":
        r = fb.nvFatbinAddCubin(h, code, len(code), num.encode(), b"probe.cu")
    else:
        assert kind == "compute", t
        r = fb.nvFatbinAddPTX(h, code, len(code), num.encode(), b"probe.cu", b"")
    assert r == 0, (t, r)
n = ctypes.c_size_t()
fb.nvFatbinSize(h, ctypes.byref(n))
buf = ctypes.create_string_buffer(n.value)
assert fb.nvFatbinGet(h, buf) == 0
open(out, "wb").write(buf.raw)
print("NVRTC %d.%d: %s -> %s (%d bytes)" % (major.value, minor.value, " ".join(targets), out, n.value))
