#!/usr/bin/env python3
"""Writes the truth of one llama.cpp release (mocks/llama.cpp/<tag>.json) from
`llmgw inspect --format json` of real ggml builds.

usage: ci/truth/llama_cpp_release.py --inspect DIR > mocks/llama.cpp/b11459.json

DIR holds `llmgw inspect --format json` outputs, as `ci/reality.sh` leaves
them in its cache (`<cache>/results/<file>.inspect.json`):

  node-llama-cpp-linux-x64-3.22.1.tgz.inspect.json         CPU x64
  node-llama-cpp-linux-x64-vulkan-3.22.1.tgz.inspect.json  Vulkan x64
  node-llama-cpp-linux-x64-cuda-3.22.1.tgz.inspect.json    CUDA 13 x64
  node-llama-cpp-linux-arm64-3.22.1.tgz.inspect.json       CPU arm64
  libcudart.so.13.inspect.json   nvidia-cuda-runtime 13.5.37 (PyPI)
  libcudart.so.12.inspect.json   nvidia-cuda-runtime-cu12 12.9 (PyPI)
  nvidia-cublas-13.8.2.12.whl.inspect.json      nvidia-cublas 13.8.2.12 (PyPI)
  nvidia-cublas-cu12-12.9.3.13.whl.inspect.json nvidia-cublas-cu12 12.9.3.13 (PyPI)

The official release archives are on GitHub, which this project's machines
cannot reach; the npm packages are ggml builds of the same source
(llama.cpp v0.5.0, `node-llama-cpp/llama/llama.cpp.info.json`) by the same
compiler as the official x64 archives (GCC 11.4.0 on Ubuntu 22.04: their
`.comment`, and `built with GNU 11.4.0 for Linux x86_64` of the official
b11505 archive). So each ELF file's needs, symbol versions and CUDA kernels
are read from the npm file of the same role; what differs in the official
archives (versioned SONAMEs and their links, the programs, the CUDA toolkit
of the asset name, the cudart companion's own directory) is written here
with its public source in `sources`. Output is deterministic: the same
inputs give the same bytes.
"""

import argparse
import json
import os
import sys

TAG = "b11459"
BUILD = 11459
# UNCONFIRMED: b11459's commit was not found; the version check reads the
# build number only. Invented, like the date (the release is "dated 2026-10").
COMMIT = "3c1e0d7a2"
PUBLISHED_AT = "2026-10-27T09:41:52Z"
SEMVER = "0.6.0-dev"  # 0.6.0-dev at builds 11429..11516
LIB_VERSIONS = {"ggml": "0.26.0", "llama": "0.6.0"}  # b11429's chains
X64_CPU = ["x64", "sse42", "sandybridge", "ivybridge", "piledriver", "haswell", "skylakex", "cannonlake",
           "cascadelake", "icelake", "cooperlake", "zen4", "alderlake", "sapphirerapids"]
ARM64_CPU = ["armv8.0_1", "armv8.2_1", "armv8.2_2", "armv8.2_3", "armv8.6_1", "armv8.6_2", "armv9.2_1",
             "armv9.2_2"]
# Versioned SONAMEs of the official archives, by unversioned name.
SONAME = {
    "libggml-base.so": ("libggml-base.so.0", LIB_VERSIONS["ggml"]),
    "libggml.so": ("libggml.so.0", LIB_VERSIONS["ggml"]),
    "libllama.so": ("libllama.so.0", LIB_VERSIONS["llama"]),
    "libllama-common.so": ("libllama-common.so.0", LIB_VERSIONS["llama"]),
    "libmtmd.so": ("libmtmd.so.0", LIB_VERSIONS["llama"]),
}
SYSTEM = ["libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"]


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return {os.path.basename(x["path"]): x for x in json.load(f)["files"]}


def npm_role(name):
    """The npm file name of an official library: libllama.so -> libllama*.v0.5.0.so."""
    stem = name[:-3]
    return lambda n: n == name or (n.startswith(stem + ".") and n.endswith(".v0.5.0.so"))


def stub_of(files, name):
    match = [f for n, f in sorted(files.items()) if npm_role(name)(n)]
    if not match:
        raise SystemExit(f"llama_cpp_release: no `{name}` in the inspect output")
    return dict(match[0]["elf"])


def official_name(n):
    """npm's `libggml.cuda.v0.5.0.so` is the official `libggml.so`."""
    for name in SONAME:
        if npm_role(name)(n):
            return name
    return n


def versioned(needed):
    return [SONAME.get(official_name(n), (n,))[0] for n in needed]


def with_floor(stub, floor):
    """Adds symbol versions the official build needs beyond the npm one's."""
    stub["requires"] = sorted(set(stub["requires"]) | set(floor), key=version_key)
    return stub


def version_key(v):
    name, _, num = v.partition("_")
    return (name, [int(p) if p.isdigit() else 0 for p in num.split(".")])


def program(runpath_of, requires, machine, compiler):
    return {
        "needed": ["libllama-server-impl.so", "libllama-common.so.0", "libmtmd.so.0", "libllama.so.0",
                   "libggml.so.0", "libggml-base.so.0"] + SYSTEM,
        "requires": requires,
        "runpath": runpath_of,
        "version": {
            "args": ["--version"],
            "stdout": "",
            "stderr": f"version: {SEMVER} (build {BUILD}, commit {COMMIT})\nbuilt with {compiler} for Linux {machine}\n",
        },
    }


def archive(files, arch, cpu_variants, backend, floor, compiler):
    """The files of one main archive, under llama-<tag>/."""
    machine = "x86_64" if arch == "x64" else "aarch64"
    base = stub_of(files, "libggml-base.so")
    common = with_floor(stub_of(files, "libllama-common.so"), floor)
    requires = common["requires"]
    out = []
    server = program(common["runpath"], requires, machine, compiler)
    server["lists_devices"] = True
    out.append({"path": "llama-server", "elf": server})
    for p in ["llama-cli", "llama-bench"]:
        elf = program(common["runpath"], requires, machine, compiler)
        if p == "llama-bench":
            # The compute check's program: it runs a model (-m FILE -dev DEVICE ... -o jsonl).
            elf["bench"] = True
        out.append({"path": p, "elf": elf})
    impl = dict(common)
    impl["needed"] = versioned(["libllama-common.so", "libmtmd.so", "libllama.so", "libggml.so",
                                "libggml-base.so"]) + SYSTEM
    out.append({"path": "libllama-server-impl.so", "elf": impl})
    for name, stub in [
        ("libggml-base.so", with_floor(base, floor)),
        ("libggml.so", with_floor(stub_of(files, "libggml.so"), floor)),
        ("libllama.so", with_floor(stub_of(files, "libllama.so"), floor)),
        ("libllama-common.so", common),
        ("libmtmd.so", dict(common, needed=versioned(["libllama.so", "libggml.so", "libggml-base.so"]) + SYSTEM)),
    ]:
        soname, full = SONAME[name]
        stub["needed"] = versioned(stub["needed"])
        if name == "libggml-base.so" and "libgomp.so.1" not in stub["needed"]:
            stub["needed"] = ["libgomp.so.1"] + stub["needed"]
        out.append({"path": f"{name}.{full}", "elf": stub})
        out.append({"path": soname, "link": f"{name}.{full}"})
        out.append({"path": name, "link": soname})
    rpc = with_floor(dict(base), floor)
    rpc["needed"] = ["libggml-base.so.0"] + SYSTEM
    rpc["backend"] = {"kind": "rpc"}
    out.append({"path": "libggml-rpc.so", "elf": rpc})
    for v in cpu_variants:
        name = f"libggml-cpu-{v}.so"
        stub = with_floor(stub_of(files, name), floor)
        stub["needed"] = versioned(stub["needed"])
        stub["backend"] = {"kind": "cpu"}
        out.append({"path": name, "elf": stub})
    if backend is not None:
        name, stub = backend
        stub = with_floor(stub, floor)
        stub["needed"] = versioned(stub["needed"])
        out.append({"path": name, "elf": stub})
    out.append({"path": "LICENSE", "text": "MIT License\n\nCopyright (c) 2023-2026 The ggml authors\n"})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inspect", required=True, help="directory of `llmgw inspect --format json` outputs")
    d = ap.parse_args().inspect
    cpu = load(d, "node-llama-cpp-linux-x64-3.22.1.tgz.inspect.json")
    vulkan = load(d, "node-llama-cpp-linux-x64-vulkan-3.22.1.tgz.inspect.json")
    cuda = load(d, "node-llama-cpp-linux-x64-cuda-3.22.1.tgz.inspect.json")
    arm = load(d, "node-llama-cpp-linux-arm64-3.22.1.tgz.inspect.json")
    cudart13 = load(d, "libcudart.so.13.inspect.json")["libcudart.so.13"]["elf"]
    cudart12 = load(d, "libcudart.so.12.inspect.json")["libcudart.so.12"]["elf"]
    cublas = {
        "13": load(d, "nvidia-cublas-13.8.2.12.whl.inspect.json"),
        "12": load(d, "nvidia-cublas-cu12-12.9.3.13.whl.inspect.json"),
    }

    def blas_stub(major, name, arch):
        """libcublas(Lt).so.<major> as NVIDIA's wheel has it: its needs, symbol
        versions and RUNPATH; its own kernels left out (ggml's backend is what
        the GPU check asks about)."""
        f = cublas[major][name]
        stub = {k: v for k, v in f["elf"].items() if k != "backend"}
        if f.get("rpath"):
            stub["runpath"] = f["rpath"]
        if arch == "arm64":
            stub["needed"] = [n.replace("ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1") for n in stub["needed"]]
        return stub

    # The CUDA archives are built in nvidia/cuda's Ubuntu 24.04 image (GCC 13):
    # a user reports the official CUDA build needs GLIBC 2.38.
    cuda_floor = ["GLIBC_2.38", "GLIBCXX_3.4.32", "CXXABI_1.3.15"]
    # arm64 archives: ubuntu-24.04-arm with gcc-14 (release.yml).
    arm_floor = ["GLIBC_2.38", "GLIBC_2.39", "GLIBCXX_3.4.32", "GLIBCXX_3.4.33", "CXXABI_1.3.15"]

    def cuda_backend(toolkit, sass, ptx):
        stub = stub_of(cuda, "libggml-cuda.so")
        major = toolkit.split(".")[0]
        stub["needed"] = [n.replace(".so.13", f".so.{major}") for n in stub["needed"]]
        stub["backend"] = dict(stub["backend"], toolkit=toolkit)
        if sass is not None:
            stub["backend"]["sass"], stub["backend"]["ptx"] = sass, ptx
        return "libggml-cuda.so", stub

    vk = stub_of(vulkan, "libggml-vulkan.so")
    vk["backend"] = {"kind": "vulkan"}
    vk_arm = dict(vk, needed=["libggml-base.so.0", "libvulkan.so.1"] + SYSTEM)
    assets = []

    def add(name, top, files):
        assets.append({"name": name, "top": top, "files": files})

    top = f"llama-{TAG}"
    add(f"llama-{TAG}-bin-ubuntu-x64.tar.gz", top, archive(cpu, "x64", X64_CPU, None, [], "GNU 11.4.0"))
    arm_files = archive(arm, "arm64", ARM64_CPU, None, arm_floor, "GNU 14.2.0")
    add(f"llama-{TAG}-bin-ubuntu-arm64.tar.gz", top, arm_files)
    add(f"llama-{TAG}-bin-ubuntu-vulkan-x64.tar.gz", top,
        archive(vulkan, "x64", X64_CPU, ("libggml-vulkan.so", vk), [], "GNU 11.4.0"))
    add(f"llama-{TAG}-bin-ubuntu-vulkan-arm64.tar.gz", top,
        archive(arm, "arm64", ARM64_CPU, ("libggml-vulkan.so", vk_arm), arm_floor, "GNU 14.2.0"))
    # ggml's default architectures for CUDA 12.8 (CMakeLists.txt): the npm
    # CUDA 13 build shows what the CUDA 13 default gives, kept as read.
    cu128 = (["8.6", "8.9", "12.0a"], ["5.0", "6.1", "7.0", "7.5", "8.0", "9.0"])
    for toolkit, arch, kernels, cudart in [("13.4", "x64", None, cudart13), ("12.8", "x64", cu128, cudart12),
                                           ("13.4", "arm64", None, cudart13)]:
        major = toolkit.split(".")[0]
        name = f"llama-{TAG}-bin-ubuntu-cuda-{toolkit}-{arch}.tar.gz"
        sass, ptx = kernels if kernels else (None, None)
        src = cuda if arch == "x64" else arm
        variants = X64_CPU if arch == "x64" else ARM64_CPU
        floor = cuda_floor if arch == "x64" else arm_floor
        add(name, top, archive(src, arch, variants, cuda_backend(toolkit, sass, ptx), floor,
                               "GNU 13.3.0" if arch == "x64" else "GNU 14.2.0"))
        companion = f"cudart-llama-{TAG}-bin-ubuntu-cuda-{toolkit}-{arch}"
        rt = dict(cudart)
        if arch == "arm64":
            rt["needed"] = [n.replace("ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1") for n in rt["needed"]]
        lt = blas_stub(major, f"libcublasLt.so.{major}", arch)
        blas = blas_stub(major, f"libcublas.so.{major}", arch)
        add(f"{companion}.tar.gz", companion, [
            {"path": f"libcudart.so.{major}", "elf": rt},
            {"path": f"libcublasLt.so.{major}", "elf": lt},
            {"path": f"libcublas.so.{major}", "elf": blas},
        ])

    release = {
        "engine": "llama.cpp",
        "version": TAG,
        "repo": "ggml-org/llama.cpp",
        "tag": TAG,
        "commit": COMMIT,
        "published_at": PUBLISHED_AT,
        "prerelease": True,
        "sources": SOURCES,
        "assets": assets,
    }
    json.dump(release, sys.stdout, indent=2)
    sys.stdout.write("\n")


SOURCES = [
    "Written by ci/truth/llama_cpp_release.py from `llmgw inspect --format json` of the npm packages "
    "@node-llama-cpp/linux-x64 3.22.1 (sha256 0d953e1503d5ab4608d8ed5b739132308c81ac05ffeb760d2a7f30e08a9f90e0), "
    "linux-x64-vulkan 3.22.1 (e10577190fc4bd1649d3b655588e5c7a85fc6b6dbf7136fee596cbe9e25521e7), "
    "linux-x64-cuda 3.22.1 (d6cd3ff39a43b024816952e0bc6452d6711608d26256ff6eb0fe8cf7ff55bb2c), "
    "linux-arm64 3.22.1 (39c76b998e35ed2f236c01472fc79eda0fc558b1c8b535023c2d7ded8c327cc4): ggml builds of "
    "llama.cpp v0.5.0 by GCC 11.4.0 on Ubuntu 22.04 (their .comment), the compiler of the official x64 archives",
    "The Linux asset names of b11459, CUDA 13.4 (x64, arm64) and 12.8 (x64 only) with their cudart-llama-<tag>-… "
    "companions: the release's asset list as a public test fixture copied it from the GitHub API "
    "(LlamaServerAssetSelectionTests); CUDA 13.4 since ggml-org/llama.cpp#29202 (merged 2026-09-21)",
    "A prerelease, as every b<N> release since 2026-08-25; /releases/latest is a vX.Y.Z release with only "
    "nightly-tag.txt (public issues of downstream projects; ggml-org/llama.cpp#27485)",
    "Every main archive under llama-<tag>/ (release.yml: tar --transform 's,^\\.,llama-<tag>,' -C ./build/bin .)",
    "The cudart companion under its own directory, the asset's name without .tar.gz "
    "(cudart-llama-<tag>-bin-ubuntu-cuda-<X.Y>-<arch>/), holding libcudart, libcublas and libcublasLt .so.<major>: "
    "four public installers agree (LD_LIBRARY_PATH=…/cudart-llama-b11218-bin-ubuntu-cuda-13.4-x64, "
    "…/cudart-llama-b11146-bin-ubuntu-cuda-12.8-x64/libcudart.so.12); whether NVIDIA's versioned files and "
    "links are there too is UNCONFIRMED (no tar listing of the archive is public)",
    "libcudart.so.13 as read from PyPI nvidia-cuda-runtime 13.5.37 (lib sha256 "
    "be114eaabb3f3251…: needs GLIBC_2.17 at most), libcudart.so.12 from nvidia-cuda-runtime-cu12 12.9 "
    "(256e6409e4f06f61…); libcublas.so.13 and libcublasLt.so.13 as read from PyPI nvidia-cublas "
    "13.8.2.12 (wheel sha256 21721774d8e7044d…), libcublas.so.12 and libcublasLt.so.12 from "
    "nvidia-cublas-cu12 12.9.3.13 (d7d51055f161b317…): libcublas needs libcublasLt and GLIBC_2.17, "
    "libcublasLt GLIBC_2.27, neither libstdc++; RUNPATH $ORIGIN (llmgw inspect of each wheel)",
    "Versioned SONAMEs with link chains libllama.so -> libllama.so.0 -> libllama.so.0.6.0 (llama 0.6.0, "
    "ggml 0.26.0 at b11429), libllama-server-impl.so and libllama-common.so.0 beside llama-server, and "
    "DT_NEEDED naming libX.so.0: a downstream list of the b11429 archives' files (solstone "
    "VULKAN_LINUX_X64_B11429_REQUIRED, CUDA_SHARED_WANTED_FILES) and objdump -p of b11222's libllama.so.0.5.0 "
    "(needs libggml.so.0, libggml-base.so.0) and libggml-base.so.0.25.3 (needs libgomp.so.1)",
    "llama-server's DT_NEEDED beyond those five (libllama-server-impl.so) and llama-cli's and llama-bench's: "
    "UNCONFIRMED (inferred from the files beside them)",
    "`llama-server --version` on stderr: 'version: 0.6.0-dev (build <N>, commit <hash>)' then 'built with GNU "
    "11.4.0 for Linux x86_64' (the official b11505 x64 archive, quoted in public benchmark output); 0.6.0-dev "
    "at builds 11429-11516; b11459's commit and the release date are invented (UNCONFIRMED)",
    "CUDA 13 kernels SASS sm_86, sm_89, sm_120a, sm_121a and PTX sm_75, sm_80, sm_90, zstd-compressed: "
    "inspect of the npm libggml-cuda.so (toolkit 13.1), agreeing with cuobjdump 13.5 on it and with a user's "
    "listing of the official b11034 CUDA 13.3 archive and solstone's embedded_arch_set for b11429; the "
    "toolkit is the asset's 13.4",
    "CUDA 12.8 kernels SASS 8.6, 8.9, 12.0a and PTX 5.0, 6.1, 7.0, 7.5, 8.0, 9.0: ggml's default "
    "architectures for 12.8 (ggml/src/ggml-cuda/CMakeLists.txt); the npm CUDA 12.4 build (linux-x64-cuda-ext "
    "3.22.1, 1c4817215f51…) shows the same pattern below 12.8 (SASS 8.6; PTX 5.0 to 8.0)",
    "The CUDA x64 archives need GLIBC_2.38: built in nvidia/cuda's Ubuntu 24.04 image (#29202) and a user's "
    "report that the official CUDA build requires GLIBC 2.38 (b11081); GLIBCXX_3.4.32 follows from GCC 13 "
    "there: UNCONFIRMED beyond that report",
    "arm64 archives: ubuntu-24.04-arm with gcc-14 (release.yml @002efcd), so GLIBC_2.39 and GLIBCXX_3.4.33: "
    "UNCONFIRMED (the npm arm64 build is clang's and says nothing of it); DT_NEEDED from the npm arm64 files",
]

if __name__ == "__main__":
    main()
