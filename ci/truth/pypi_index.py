#!/usr/bin/env python3
"""Writes the Python side of the truth from what the real wheels hold.

usage:
  ci/truth/pypi_index.py --read WHEEL... [--cuobjdump PATH] > RECORDS.json
  ci/truth/pypi_index.py --reduce RECORDS... > ci/truth/pypi_facts.json
  ci/truth/pypi_index.py --facts ci/truth/pypi_facts.json --out mocks

RECORDS are facts records, one list of records or one record per file: per
artifact its file name, sha256, size, PyPI's upload time, METADATA
(Requires-Python, Requires-Dist, console scripts, top-level names) and, per
ELF file, DT_NEEDED, the highest GLIBC_/GLIBCXX_/CXXABI_/GCC_ version it
needs (`floors`) and the CUDA kernels `cuobjdump --list-elf --list-ptx` names
(SASS and PTX). `--read` writes them from wheels downloaded from PyPI (with
PyPI's sha256, which it checks, and the upload-time of PyPI's JSON simple
API): every member of the wheel whose first four bytes are the ELF magic
`\x7fELF` is read, whatever its name (an extensionless program such as
vllm/vllm-rs, torch/test/*, an AMD code object `*.co`), with `readelf -d -V
-W` and, when it has a `.nv_fatbin` section, cuobjdump (CUOBJDUMP or
--cuobjdump; ci/reality.sh installs the pinned one). `--reduce` keeps what
the truth is made of (given reduced records too, it keeps them as they are,
a later record of one file replacing an earlier), so that
`ci/truth/pypi_facts.json`, in the repository, regenerates the mocks byte for
byte.

`--out DIR` writes DIR/pypi/pypi.json, DIR/pypi/pytorch-cu129.json,
DIR/vllm/0.20.1.json, DIR/uv/0.12.20.json and DIR/uv/0.13.9.json. Every
fact in them comes from a record (named in `sources` with its sha256), or
from a public source named beside it; what no reachable artifact decides is
marked UNCONFIRMED with the reason. Output is deterministic: the same facts
give the same bytes. Bad input (a file that is not JSON records, a record
missing) ends with one line on stderr and exit 2.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
import zipfile

# The projects the index serves and the versions of each, with why.
INDEX = {
    "vllm": ["0.19.1", "0.20.1", "0.33.0"],
    "sglang": ["0.4.10", "0.5.4", "0.5.23"],
    "sgl-kernel": ["0.2.8", "0.3.16.post3"],
    "sglang-kernel": ["0.4.10"],
    "torch": ["2.7.1", "2.8.0", "2.10.0", "2.11.0", "2.14.0", "2.14.1"],
    "torchvision": ["0.22.1", "0.23.0", "0.25.0", "0.26.0", "0.29.0", "0.29.2"],
    "torchaudio": ["2.7.1", "2.8.0", "2.10.0", "2.11.0"],
}
UV_VERSIONS = ["0.12.20", "0.13.9"]

# The ELF file whose kernels stand for the package's (the one that computes
# or that is loaded at import), by project, first found wins.
KEY_ELF = {
    "vllm": ["vllm/_C.abi3.so", "vllm/_C_stable_libtorch.abi3.so"],
    "torch": ["torch/lib/libtorch_cuda.so"],
    "torchvision": ["torchvision/_C.so", "torchvision/_C_stable.so"],
    "torchaudio": ["torchaudio/lib/libtorchaudio.so", "torchaudio/lib/libtorchaudio.abi3.so"],
    "sgl-kernel": ["sgl_kernel/common_ops.abi3.so", "sgl_kernel/sm90/common_ops.abi3.so"],
    "sglang-kernel": ["sgl_kernel/sm90/common_ops.abi3.so"],
}
# Kernel packages load their ops when imported: a GPU without a kernel fails
# `import sgl_kernel` (sgl-project/sglang#17333, T4 and sm_75).
FAILS_AT_IMPORT = {"sgl-kernel", "sglang-kernel"}
# Libraries of the system (glibc, the C++ runtime, the driver): the rest of
# DT_NEEDED (libtorch.so, libc10.so, libcudart.so.N…) come with torch and its
# CUDA wheels, loaded by `import torch` before any extension.
SYSTEM = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2",
          "ld-linux-aarch64.so.1", "libstdc++.so.6", "libgcc_s.so.1", "libcuda.so.1"}
# The extras the recipes install (sglang[srt] before 0.5): their requirements
# are kept, those of other extras left out.
USED_EXTRAS = {"srt"}
NON_MODULES = {"include", "lib", "lib64", "functorch", "torchgen", "torio"}


def fail(msg):
    sys.stderr.write(f"pypi_index: {msg}\n")
    sys.exit(2)


def load_records(paths):
    out = []
    for p in paths:
        files = sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json")) if os.path.isdir(p) else [p]
        for f in files:
            try:
                with open(f) as fh:
                    data = json.load(fh)
            except (OSError, ValueError) as e:
                fail(f"{f}: {e}")
            for r in data if isinstance(data, list) else [data]:
                if not isinstance(r, dict) or not {"artifact", "version", "file", "sha256"} <= r.keys():
                    fail(f"{f}: not a facts record (artifact, version, file, sha256)")
                out.append(r)
    return out


def vkey(v):
    return [int(x) if x.isdigit() else x for x in re.split(r"[._]", v or "0")]


def reduce(records):
    """The fields of each wheel record the truth is made of; of two records
    of one file, the later (the fuller reading) wins."""
    keep = []
    latest = {r["file"]: r for r in records}
    for r in latest.values():
        name, version = r["artifact"], r["version"]
        if name == "uv":
            if version not in UV_VERSIONS or "musllinux" in r["file"]:
                continue
        elif version not in INDEX.get(name, []) or not r["file"].endswith(".whl"):
            continue
        # A record already reduced (pypi_facts.json itself) has its fields at the top.
        m = r.get("metadata") or {"Requires-Python": r.get("requires_python"),
                                  "Requires-Dist": r.get("requires_dist", []),
                                  "console_scripts": r.get("console_scripts"), "top_level": r.get("top_level")}
        elfs = []
        for e in r.get("elf", []):
            cuda = e.get("cuda") or {k: e[k] for k in ("sass", "ptx", "cudart") if k in e}
            elfs.append({
                "path": e["path"],
                "needed": e.get("needed", []),
                "floors": {k: v for k, v in (e.get("floors") or {}).items() if v},
                "sass": cuda.get("sass", []),
                "ptx": cuda.get("ptx", []),
                "cudart": cuda.get("cudart"),
            })
        keep.append({
            "artifact": name, "version": version, "file": r["file"], "sha256": r["sha256"], "size": r["size"],
            "upload_time": upload_time(r.get("upload_time") or m.get("upload_time")),
            "requires_python": m.get("Requires-Python"), "requires_dist": m.get("Requires-Dist", []),
            "console_scripts": sorted(m.get("console_scripts") or []), "top_level": m.get("top_level") or [],
            "elf": sorted(elfs, key=lambda e: e["path"]),
        })
    keep.sort(key=lambda r: (r["artifact"], vkey(r["version"]), r["file"]))
    return keep


# ------------------------------------------------------------------ --read
ELF_MAGIC = b"\x7fELF"
FLOOR_PREFIXES = ("GLIBC", "GLIBCXX", "CXXABI", "GCC")
SIMPLE = os.environ.get("PYPI_SIMPLE", "https://pypi.org/simple")


def pypi_file(name, filename):
    """The file's entry in PyPI's JSON simple API (PEP 691/700: its sha256
    and upload-time, the field the simulated index serves)."""
    req = urllib.request.Request(f"{SIMPLE}/{re.sub(r'[-_.]+', '-', name).lower()}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            page = json.loads(r.read(64 << 20))
    except (OSError, ValueError) as e:
        fail(f"PyPI's page of {name}: {e}")
    hit = [f for f in page.get("files", []) if f["filename"] == filename]
    if not hit:
        fail(f"{filename}: not on PyPI's page of {name}")
    return hit[0]


def readelf_facts(path):
    """DT_NEEDED (in order), the highest version of each prefix in the version
    needs, and whether the file has a .nv_fatbin section, as readelf says."""
    out = subprocess.run(["readelf", "-d", "-V", "-W", path], capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    names, on = [], False
    for line in out.splitlines():
        if line.startswith("Version needs section"):
            on = True
        elif re.match(r"Version (symbols|definition) section", line):
            on = False
        elif on:
            names += re.findall(r"Name: (\S+)", line)
    floors = {}
    for n in names:
        pre, _, v = n.partition("_")
        if pre in FLOOR_PREFIXES and re.fullmatch(r"[0-9][0-9.]*", v):
            if pre not in floors or vkey(v) > vkey(floors[pre]):
                floors[pre] = v
    sections = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True).stdout
    return needed, floors, " .nv_fatbin " in sections


def cuobjdump_kernels(cuobjdump, path):
    """The SASS and PTX targets cuobjdump --list-elf --list-ptx names, sorted."""
    out = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", path], capture_output=True, text=True).stdout
    key = lambda t: (int(re.match(r"sm_(\d+)", t).group(1)), t)
    sass = sorted(set(re.findall(r"^ELF file\s+\d+: .*\.(sm_\d+[a-z]*)\.cubin$", out, re.M)), key=key)
    ptx = sorted(set(re.findall(r"^PTX file\s+\d+: .*\.(sm_\d+[a-z]*)\.ptx$", out, re.M)), key=key)
    return sass, ptx


def metadata_of(text):
    head = text.split("\n\n", 1)[0]
    fields, key = {}, None
    for line in head.splitlines():
        if line[:1] in (" ", "\t") and key:
            fields[key][-1] += " " + line.strip()
            continue
        k, _, v = line.partition(":")
        key = k.strip()
        fields.setdefault(key, []).append(v.strip())
    return fields


def read_wheel(path, cuobjdump):
    """A facts record of one wheel, every ELF member found by its magic."""
    fname = os.path.basename(path)
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        fail(f"{path}: {e}")
    names = z.namelist()
    meta_name = next((n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
    if not meta_name:
        fail(f"{path}: no .dist-info/METADATA")
    fields = metadata_of(z.read(meta_name).decode("utf-8", "replace"))
    name = re.sub(r"[-_.]+", "-", fields.get("Name", [fname.split("-")[0]])[0]).lower()
    version = fields.get("Version", [""])[0]
    entry = pypi_file(name, fname)
    if entry["hashes"].get("sha256") != h.hexdigest():
        fail(f"{path}: sha256 {h.hexdigest()}, PyPI says {entry['hashes'].get('sha256')}")
    dist_info = meta_name.split("/")[0]
    scripts = []
    if f"{dist_info}/entry_points.txt" in names:
        section = None
        for line in z.read(f"{dist_info}/entry_points.txt").decode().splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
            elif section == "console_scripts" and "=" in line:
                scripts.append(line.split("=")[0].strip())
    if f"{dist_info}/top_level.txt" in names:
        top = [t.strip() for t in z.read(f"{dist_info}/top_level.txt").decode().splitlines() if t.strip()]
    else:
        top = sorted({n.split("/")[0].removesuffix(".py") for n in names
                      if not n.split("/")[0].endswith((".dist-info", ".data"))})
    elfs = []
    with tempfile.TemporaryDirectory() as tmp:
        for info in z.infolist():
            if info.is_dir() or info.file_size < 4:
                continue
            with z.open(info) as m:
                if m.read(4) != ELF_MAGIC:
                    continue
            out = z.extract(info, tmp)
            needed, floors, fatbin = readelf_facts(out)
            sass, ptx = cuobjdump_kernels(cuobjdump, out) if fatbin else ([], [])
            if fatbin and not cuobjdump:
                fail(f"{fname}: {info.filename} has CUDA code; give --cuobjdump")
            elfs.append({"path": info.filename, "needed": needed, "floors": floors,
                         "cuda": {"sass": sass, "ptx": ptx,
                                  "cudart": next((n for n in needed if n.startswith("libcudart")), None)}})
            os.remove(out)
    return {"artifact": name, "version": version, "file": fname, "sha256": h.hexdigest(), "size": size,
            "upload_time": entry.get("upload-time"),
            "metadata": {"Requires-Python": fields.get("Requires-Python", [None])[0],
                         "Requires-Dist": fields.get("Requires-Dist", []), "console_scripts": sorted(scripts),
                         "top_level": top},
            "elf": sorted(elfs, key=lambda e: e["path"])}


def upload_time(t):
    """PEP 700's form of an upload time: `2026-04-18T05:49:16.000000Z`."""
    if not t:
        return None
    t = t.rstrip("Z")
    whole, _, frac = t.partition(".")
    if len(whole) == 10:
        whole += "T00:00:00"
    return f"{whole}.{(frac + '000000')[:6]}Z"


def cc(sm):
    """`sm_90a` -> `9.0a`, `sm_100` -> `10.0`."""
    m = re.fullmatch(r"sm_(\d+?)(\d)([af]?)", sm)
    if not m:
        fail(f"`{sm}` is not a cuobjdump architecture name")
    return f"{m.group(1)}.{m.group(2)}{'a' if m.group(3) == 'a' else ''}"


def cc_key(c):
    return [int(x) for x in c.rstrip("a").split(".")] + [c.endswith("a")]


def requirement(text, keep):
    """A Requires-Dist line in PEP 508 form (`torch (==2.7.1)` -> `torch==2.7.1`)
    when its project is served and its marker is none or an extra; else None."""
    spec, _, marker = text.partition(";")
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(\[[^\]]*\])?\s*\(?([^)]*)\)?\s*", spec)
    if not m:
        fail(f"cannot read the requirement `{text}`")
    name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    if name not in keep:
        return None
    marker = marker.strip()
    extra = re.fullmatch(r'extra\s*==\s*"([a-z0-9-]+)"', marker)
    if marker and not (extra and extra.group(1) in USED_EXTRAS):
        return None
    out = name + (m.group(2) or "") + m.group(3).replace(" ", "")
    return out + (f"; {marker}" if marker else "")


def toolkit_of(torch_record):
    """The CUDA toolkit of a torch wheel from its pins of NVIDIA's runtime."""
    for req in torch_record["requires_dist"]:
        m = re.match(r"cuda-toolkit\[[^\]]*\]==(\d+)\.(\d+)", req) or \
            re.match(r"nvidia-cuda-runtime(?:-cu\d+)?==(\d+)\.(\d+)", req)
        if m:
            return f"{m.group(1)}.{m.group(2)}"
    return None


def arch_of(filename):
    return "aarch64" if filename.endswith("aarch64.whl") else "x86_64" if "x86_64" in filename else "any"


def short(h):
    return h[:12]


class Facts:
    def __init__(self, records):
        self.records = records

    def get(self, name, version, arch=None, build=None):
        found = [r for r in self.records if r["artifact"] == name and r["version"] == version
                 and (arch is None or arch_of(r["file"]) in (arch, "any"))
                 and (build is None or (f"-{version}-{build}-" in r["file"]) == bool(build))]
        if not found:
            fail(f"no record of {name} {version} {arch or ''}")
        return found

    def torch_toolkit(self, version, arch):
        return toolkit_of(self.get("torch", version, arch)[0])


def floors_of(elfs):
    best = {}
    for e in elfs:
        for k, v in e["floors"].items():
            if k in ("GLIBC", "GLIBCXX", "CXXABI") and (k not in best or vkey(v) > vkey(best[k])):
                best[k] = v
    return best


def elf_truth(record):
    """The wheel's ELF files that set its GLIBC floor (the highest GLIBC_ any
    of its files needs), and the first that sets its GLIBCXX floor when none
    of those does, each with its own floors and the system libraries it needs."""
    best = floors_of(record["elf"])
    pick = [e for e in record["elf"] if e["floors"].get("GLIBC") == best.get("GLIBC")]
    if best.get("GLIBCXX") and not any(e["floors"].get("GLIBCXX") == best["GLIBCXX"] for e in pick):
        pick += [next(e for e in record["elf"] if e["floors"].get("GLIBCXX") == best["GLIBCXX"])]
    out = []
    for e in sorted(pick, key=lambda e: e["path"]):
        f = e["floors"]
        requires = [f"{k}_{f[k]}" for k in ("GLIBC", "GLIBCXX", "CXXABI") if f.get(k)]
        out.append({"path": e["path"], "needed": [n for n in e["needed"] if n in SYSTEM], "requires": requires})
    return out


def cuda_truth(record, toolkit):
    for path in KEY_ELF.get(record["artifact"], []):
        for e in record["elf"]:
            if e["path"] == path and e["sass"]:
                c = {"toolkit": toolkit, "sass": sorted({cc(s) for s in e["sass"]}, key=cc_key),
                     "ptx": sorted({cc(s) for s in e["ptx"]}, key=cc_key)}
                if record["artifact"] in FAILS_AT_IMPORT:
                    c["fails_at_import"] = True
                return c
    return None


def modules_of(record):
    return sorted(t for t in record["top_level"]
                  if "." not in t and t not in NON_MODULES and not t.startswith("_"))


def dist(record, toolkit, sources):
    served = set(INDEX)
    # A project's requirements of its own extras (sglang[all] -> sglang[srt]) are left out.
    reqs = [x for x in (requirement(r, served - {record["artifact"]}) for r in record["requires_dist"]) if x]
    d = {"name": record["artifact"], "version": record["version"], "filename": record["file"]}
    if record["requires_python"]:
        d["requires_python"] = record["requires_python"]
    d["requires"] = reqs
    d["modules"] = modules_of(record)
    if record["console_scripts"]:
        d["scripts"] = record["console_scripts"]
    cuda = cuda_truth(record, toolkit) if toolkit else None
    if cuda:
        d["cuda"] = cuda
    elf = elf_truth(record)
    if elf:
        d["elf"] = elf
    if record.get("upload_time"):
        d["upload_time"] = record["upload_time"]
    sources.append(f"{record['file']}: sha256 {record['sha256']}, {record['size']} bytes; "
                   f"{len(reqs)} of its {len(record['requires_dist'])} Requires-Dist kept")
    return d


def build_pypi(facts):
    sources = list(PYPI_SOURCES)
    dists = []
    for name in sorted(INDEX):
        for version in sorted(INDEX[name], key=vkey):
            for r in sorted(facts.get(name, version), key=lambda r: r["file"]):
                dists.append(dist(r, kernel_toolkit(facts, r), sources))
    return {"name": "pypi", "sources": sources, "dists": dists}


# The torch each kernel package runs with: the one its SGLang release pins
# (sgl-kernel's wheels state no requirement; sglang-kernel pins torch).
KERNEL_TORCH = {("sgl-kernel", "0.2.8"): "2.7.1", ("sgl-kernel", "0.3.16.post3"): "2.8.0"}


def kernel_toolkit(facts, r):
    """The CUDA toolkit of a wheel with kernels: torch's from its pin of
    NVIDIA's runtime; for the others, that of the torch they pin exactly (or,
    for a kernel package that pins none, the torch of the SGLang that pins
    it); else `<major>.0` of the libcudart.so.<major> it needs (every CUDA 13
    torch here pins cuda-toolkit 13.0.x)."""
    if not any(e["sass"] for e in r["elf"]):
        return None
    if r["artifact"] == "torch":
        return toolkit_of(r)
    arch = arch_of(r["file"])
    pin = next((re.sub(r"^torch\s*\(?==", "", x).rstrip(")") for x in r["requires_dist"]
                if re.match(r"torch\s*\(?==", x) and ";" not in x), None)
    pin = pin or KERNEL_TORCH.get((r["artifact"], r["version"]))
    if pin:
        return facts.torch_toolkit(pin, arch if arch != "any" else "x86_64")
    majors = {e["cudart"].rsplit(".", 1)[-1] for e in r["elf"] if e.get("cudart")}
    if len(majors) != 1:
        fail(f"{r['file']}: cannot tell its CUDA runtime ({sorted(majors)})")
    return f"{majors.pop()}.0"


def cu129(dist_):
    """A PyPI dist as the +cu129 build of the same version (UNCONFIRMED: see sources)."""
    d = json.loads(json.dumps(dist_))
    v = d["version"]
    d["version"] = f"{v}+cu129"
    d["filename"] = d["filename"].replace(f"-{v}-", f"-{v}+cu129-", 1)
    if "cuda" in d:
        d["cuda"]["toolkit"] = "12.9"
        # CUDA 12.9 builds no sm_110 (Thor is sm_101 there) and nothing of CUDA 13's.
        d["cuda"]["sass"] = [s for s in d["cuda"]["sass"] if not s.startswith("11.")]
    d.pop("upload_time", None)
    return d


def build_pytorch_cu129(pypi):
    dists = [cu129(d) for d in pypi["dists"]
             if (d["name"], d["version"]) in {("torch", "2.11.0"), ("torchvision", "0.26.0"), ("torchaudio", "2.11.0")}]
    return {"name": "pytorch-cu129", "sources": list(PYTORCH_SOURCES), "dists": dists}


def build_vllm_release(pypi):
    assets = []
    for d in sorted(pypi["dists"], key=lambda d: "aarch64" in d["filename"]):
        if d["name"] != "vllm" or d["version"] != "0.20.1" or "-0.20.1-1-" in d["filename"]:
            continue
        w = cu129(d)
        w["filename"] = w["filename"].replace("manylinux_2_35", "manylinux_2_31")
        assets.append({"name": w["filename"], "wheel": w})
    return {
        "engine": "vllm", "version": "0.20.1", "repo": "vllm-project/vllm", "tag": "v0.20.1",
        "commit": "f98b274", "published_at": "2026-05-03T08:25:12Z", "sources": list(VLLM_SOURCES), "assets": assets,
    }


def build_uv(facts, version):
    assets, sources = [], list(UV_SOURCES)
    times = []
    for triple, arch in [("x86_64-unknown-linux-gnu", "x86_64"), ("aarch64-unknown-linux-gnu", "aarch64")]:
        r = [x for x in facts.get("uv", version, arch) if "manylinux" in x["file"]][0]
        times.append(r["upload_time"])
        sources.append(f"{triple}: uv and uvx as in {r['file']} (sha256 {r['sha256']}): "
                       "DT_NEEDED and the GLIBC floor read with readelf")
        files = []
        for prog in ["uv", "uvx"]:
            e = next(x for x in r["elf"] if x["path"].endswith(f"/bin/{prog}") or x["path"] == prog
                     or x["path"].endswith(f"/{prog}"))
            stub = {"needed": [n for n in e["needed"] if n in SYSTEM],
                    "requires": [f"GLIBC_{e['floors']['GLIBC']}"],
                    "version": {"args": ["--version"], "stdout": f"{prog} {version} ({triple})\n", "stderr": ""}}
            if prog == "uv":
                stub = {"emulates": "uv", **stub}
            files.append({"path": prog, "elf": stub})
        assets.append({"name": f"uv-{triple}.tar.gz", "top": f"uv-{triple}", "files": files})
        # Its `.sha256` beside it, as the release workflow uploads one (the server writes the line).
        assets.append({"name": f"uv-{triple}.tar.gz.sha256", "sha256_of": f"uv-{triple}.tar.gz"})
    published = min(t for t in times if t)
    published = published.split(".")[0].rstrip("Z") + "Z"
    return {"engine": "uv", "version": version, "repo": "astral-sh/uv", "tag": version,
            "commit": UV_COMMITS[version], "published_at": published, "sources": sources, "assets": assets}


UV_COMMITS = {"0.12.20": "3f1c2a9", "0.13.9": "5e0d2b7"}

PYPI_SOURCES = [
    "Written by ci/truth/pypi_index.py from ci/truth/pypi_facts.json: the wheels PyPI serves, each downloaded "
    "with the sha256 of PyPI's simple JSON, its METADATA and WHEEL read with unzip and every ELF file with "
    "readelf -d -V -W (DT_NEEDED, version needs) and cuobjdump 13.5.37 --list-elf --list-ptx (SASS and PTX); "
    "each file is named below with its sha256",
    "Served in PyPI's JSON simple API (PEP 691, api-version 1.1 with versions, size and upload-time of PEP 700), "
    "each file with its PEP 658/714 core-metadata hash — peps.python.org/pep-0691, pep-0700, pep-0714; the wheels "
    "served are the simulation's (a few kilobytes standing for the file named), so size and sha256 differ from "
    "PyPI's; upload-time is PyPI's",
    "Only the projects the engines need to resolve: vllm, sglang, sgl-kernel, sglang-kernel, torch, torchvision, "
    "torchaudio; each dist keeps the Requires-Dist naming one of them (the count kept is said per file below), "
    "markers other than the extra the recipes install (srt) dropped with their requirement (torch's platform_system == \"Linux\" lines name "
    "NVIDIA's runtime wheels, left out: the torch wheel stands for torch and its CUDA runtime)",
    "cuda: the kernels of the file that computes or loads at import (vllm/_C.abi3.so, else "
    "_C_stable_libtorch.abi3.so; torch/lib/libtorch_cuda.so; torchvision/_C.so or _C_stable.so; "
    "torchaudio/lib/libtorchaudio(.abi3).so; sgl_kernel/(sm90/)common_ops.abi3.so), as cuobjdump names the cubins "
    "(sm_90a -> 9.0a; an sm_100 whose fatbin entry has flag 0x200000 is a family build and is written 10.0), "
    "every cubin counted however few; the toolkit is that of the CUDA runtime the wheel's torch pins (torch's "
    "cuda-toolkit[...]==13.0.x or nvidia-cuda-runtime-cu12==12.x), the runtime's major being the libcudart.so.N "
    "the file needs",
    "elf: the files that set the wheel's floors (the highest GLIBC_ and GLIBCXX_ any of its ELF files needs), "
    "each with its own highest GLIBC_, GLIBCXX_ and CXXABI_ and the system libraries of its DT_NEEDED",
    "sgl-kernel and sglang-kernel load their ops at import, so a GPU without a kernel fails `import sgl_kernel` — "
    "sgl-project/sglang#17333 (no common_ops for sm_75); sglang-kernel is sgl-kernel renamed from 0.4.0 (last "
    "sgl-kernel 0.3.21), the import still sgl_kernel — sgl-project/sglang#20440",
    "sgl-kernel 0.2.8 has no aarch64 wheel on PyPI (its simple index lists the x86_64 wheel only)",
    "vllm 0.20.1 is on PyPI twice: the build-tag re-upload vllm-0.20.1-1-… (2026-05-04) beside the first "
    "(2026-05-03); a resolver prefers the build tag",
]

PYTORCH_SOURCES = [
    "Written by ci/truth/pypi_index.py. The index https://download.pytorch.org/whl/cu129 (vLLM's CUDA 12.9 lane: "
    "`--extra-index-url https://download.pytorch.org/whl/cu129`, vllm@docs/getting_started/installation/gpu), "
    "served here in PEP 691 JSON under /whl/cu129/; only torch, torchvision and torchaudio",
    "torch 2.11.0+cu129, torchvision 0.26.0+cu129, torchaudio 2.11.0+cu129: everything as PyPI's 2.11.0, 0.26.0 and "
    "2.11.0 wheels (read, see mocks/pypi/pypi.json) with toolkit 12.9 and no sm_110 (CUDA 12.9 cannot build it) — "
    "UNCONFIRMED: download.pytorch.org is not reachable from where the truth is written (only PyPI, npm and "
    "crates.io are), so no +cu129 file could be read",
]

VLLM_SOURCES = [
    "Written by ci/truth/pypi_index.py. Tags are v<version>; the CUDA 12.9 variant is a release asset "
    "vllm-<ver>+cu129-cp38-abi3-manylinux_<glibc>_<arch>.whl, arch x86_64 and aarch64, installed with torch from "
    "https://download.pytorch.org/whl/cu129 — vllm@docs/getting_started/installation/gpu; vllm-project/vllm#42756 "
    "(\"We only release cu129 and cu130 wheels\")",
    "The +cu129 wheels are tagged manylinux_2_31 while their vllm/_C.abi3.so needs GLIBC_2.34, as "
    "vllm-project/vllm#41103 reports of 0.20.0's manylinux_2_31 wheel (PyPI's 0.20.1 files need GLIBC_2.34 in "
    "_C.abi3.so, read); their kernels, pins and Requires-Python are those of PyPI's vllm 0.20.1 (read, "
    "mocks/pypi/pypi.json), toolkit 12.9, no sm_110 — UNCONFIRMED: the release's assets are on GitHub, which is "
    "not reachable from where the truth is written, so neither the tag nor the files could be read",
    "published_at 2026-05-03T08:25:12Z and commit f98b274: the upload time and _version.py commit (gf98b2747f) of "
    "PyPI's vllm-0.20.1-cp38-abi3-manylinux_2_35_aarch64.whl, the release's own build",
]

UV_SOURCES = [
    "Written by ci/truth/pypi_index.py. Tags have no v prefix — astral-sh/uv@crates/uv-bin-install/src/lib.rs",
    "Each archive uv-<triple>.tar.gz holds only uv and uvx under uv-<triple>/ (mkdir -p uv-$TARGET; cp uv uvx; "
    "tar czvf) — astral-sh/uv@.github/workflows/build-release-binaries.yml",
    "The binaries are read from the PyPI wheel of the same version and target (the release workflow builds both "
    "from the tag; the GitHub archive is not reachable from here and adds nothing the loader reads): DT_NEEDED "
    "and the GLIBC floor (GLIBC_2.17 x86_64, GLIBC_2.28 aarch64, as dist-workspace.toml's min-glibc-version)",
    "`uv --version` prints 'uv <version> (<target triple>)' on stdout, as the PyPI wheel's binary does when run "
    "(uv 0.13.9 (x86_64-unknown-linux-gnu)); the form is uv@crates/uv-cli/src/version.rs",
    "published_at is the upload time of the version's first wheel on PyPI; the commit is the simulation's (no "
    "reachable file names it, and nothing reads it)",
    "Each archive has its <asset>.sha256 beside it, one line '<sha256>  <asset>' (shasum -a 256 $ARCHIVE_FILE > "
    "$ARCHIVE_FILE.sha256, both uploaded: *.tar.gz and *.sha256) — "
    "astral-sh/uv@00309ed:.github/workflows/build-release-binaries.yml",
]


def dumps(v, indent=0):
    """JSON with two-space indentation, arrays of scalars and small objects of
    scalars on one line (as the mocks are written by hand)."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    flat = lambda x: not isinstance(x, (list, dict))
    if isinstance(v, list):
        if all(flat(x) for x in v) or all(isinstance(x, dict) and all(flat(y) for y in x.values()) and len(x) <= 1
                                         for x in v):
            return json.dumps(v, ensure_ascii=False)
        return "[\n" + ",\n".join(inner + dumps(x, indent + 1) for x in v) + "\n" + pad + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {dumps(x, indent + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    return json.dumps(v, ensure_ascii=False)


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(dumps(doc) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--read", nargs="+", metavar="WHEEL", help="wheels to read into facts records (stdout)")
    ap.add_argument("--cuobjdump", default=os.environ.get("CUOBJDUMP"), help="cuobjdump, for wheels with CUDA code")
    ap.add_argument("--reduce", nargs="+", metavar="RECORDS", help="facts records to reduce to stdout")
    ap.add_argument("--facts", help="the reduced facts (ci/truth/pypi_facts.json)")
    ap.add_argument("--out", help="the mocks directory to write into")
    a = ap.parse_args()
    if a.read:
        json.dump([read_wheel(w, a.cuobjdump) for w in a.read], sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return
    if a.reduce:
        json.dump(reduce(load_records(a.reduce)), sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return
    if not a.facts or not a.out:
        fail("give --reduce RECORDS..., or --facts FILE and --out DIR")
    facts = Facts(load_records([a.facts]))
    pypi = build_pypi(facts)
    write(os.path.join(a.out, "pypi", "pypi.json"), pypi)
    write(os.path.join(a.out, "pypi", "pytorch-cu129.json"), build_pytorch_cu129(pypi))
    write(os.path.join(a.out, "vllm", "0.20.1.json"), build_vllm_release(pypi))
    for v in UV_VERSIONS:
        write(os.path.join(a.out, "uv", f"{v}.json"), build_uv(facts, v))


if __name__ == "__main__":
    main()
