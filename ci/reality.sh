#!/usr/bin/env bash
# reality.sh — `llmgw inspect` against NVIDIA's and binutils' own tools, on the
# builds engines really publish.
#
# NOT run by .ci/run: it reads ~7 GB of downloads and takes about ten minutes.
#
# For every pinned artifact below (npm tarballs of node-llama-cpp's prebuilt
# ggml, PyPI wheels of vLLM, sgl-kernel, sglang-kernel, sglang, torch, uv, gguf)
# it:
#   1. finds the file in the cache (or downloads it: npm registry, PyPI's JSON
#      API) and verifies its sha256 against the value pinned below;
#   2. runs `llmgw inspect --format json ARTIFACT` on the archive itself;
#   3. unpacks every ELF file of the artifact, found by its magic (`\x7fELF`,
#      the first four bytes), whatever its name (a shared library, a wheel
#      script, an extensionless program such as vllm/vllm-rs or torch/test/*,
#      an AMD code object), and runs the oracles on each: `readelf -d -V -W`
#      (SONAME, NEEDED,
#      RUNPATH/RPATH, symbol-version needs -> GLIBC/GLIBCXX/CXXABI floors) and,
#      when it has a .nv_fatbin section, `cuobjdump --list-elf --list-ptx`
#      (the SASS and PTX sets as cuobjdump names them);
#   4. compares the two, ELF by ELF (every ELF file; inspect reads every
#      member, and the files it reports that are not ELF by their magic are
#      counted), and prints one line per artifact: name, version, sha256, what
#      inspect found, what the oracles found, agree=yes|NO (and the fields
#      that differ, file by file);
#   5. for the largest CUDA library read, prints llmgw inspect's wall time and
#      peak memory (GNU time) on the unpacked file next to cuobjdump's.
#
# usage: reality.sh [--cache DIR] [--keep] [--only REGEX] [--verbose] [--list]
#   --cache DIR   where tools, downloads and results go
#                 (default ${LLMGW_CACHE:-$HOME/.cache/llmgw}/reality). An
#                 artifact already in DIR/dl or one folder below DIR
#                 (DIR/pypi/FILE, DIR/npm/FILE) is verified and used in place,
#                 never deleted.
#   --keep        keep the downloads and the unpacked trees (default: delete
#                 each artifact's download and tree once it is read; results stay)
#   --only REGEX  only the artifacts whose "name version file" matches REGEX
#   --verbose     also print one line per ELF that carries CUDA code
#   --list        print the pinned artifacts and exit
# env: LLMGW_BIN=path/to/llmgw (default: `cargo build --release` of this
#      repository, target/release/llmgw); CUOBJDUMP=path/to/cuobjdump (default:
#      pip-installs the pinned nvidia-cuda-cuobjdump wheel into the cache);
#      REALITY_PYPI (default https://pypi.org/pypi) for the PyPI JSON API.
# exit: 0 all verified and llmgw agrees; 1 a sha256 mismatch, a failed
#       download, llmgw failing or disagreeing with the oracles; 2 usage or a
#       missing tool.
set -euo pipefail

CUOBJDUMP_PIN="nvidia-cuda-cuobjdump==13.5.37"
CUOBJDUMP_WHEEL_SHA256="38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58"  # ..._x86_64.manylinux_2_17_x86_64.whl

# kind name version file sha256   (recorded 2026-11-30 from the registries)
ARTIFACTS=(
  "npm @node-llama-cpp/linux-x64-cuda 3.22.1 node-llama-cpp-linux-x64-cuda-3.22.1.tgz d6cd3ff39a43b024816952e0bc6452d6711608d26256ff6eb0fe8cf7ff55bb2c"
  "npm @node-llama-cpp/linux-x64-cuda-ext 3.22.1 node-llama-cpp-linux-x64-cuda-ext-3.22.1.tgz 1c4817215f51d0ebea37ea684a409a418e62cfb19fcbb5b6e0300e50c6ee9bee"
  "npm @node-llama-cpp/linux-x64-vulkan 3.22.1 node-llama-cpp-linux-x64-vulkan-3.22.1.tgz e10577190fc4bd1649d3b655588e5c7a85fc6b6dbf7136fee596cbe9e25521e7"
  "npm @node-llama-cpp/linux-x64 3.22.1 node-llama-cpp-linux-x64-3.22.1.tgz 0d953e1503d5ab4608d8ed5b739132308c81ac05ffeb760d2a7f30e08a9f90e0"
  "npm @node-llama-cpp/linux-arm64 3.22.1 node-llama-cpp-linux-arm64-3.22.1.tgz 39c76b998e35ed2f236c01472fc79eda0fc558b1c8b535023c2d7ded8c327cc4"
  "npm node-llama-cpp 3.22.1 node-llama-cpp-3.22.1.tgz a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f"
  "pypi vllm 0.19.1 vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl 71a87f46cafab4489c69a5c5c83b870d0235e5694d8222303d460576293dc719"
  "pypi vllm 0.19.1 vllm-0.19.1-cp38-abi3-manylinux_2_31_aarch64.whl c8dde3c9af20f00a644e64a50ebe43948f2921bab3ffd5407d634c15836cb181"
  "pypi vllm 0.20.0 vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl 24d28892e210200f6e1bd13f699c42a74cd2bb7364c11248e2348f677c7f6dfb"
  "pypi vllm 0.20.0 vllm-0.20.0-cp38-abi3-manylinux_2_35_aarch64.whl 29a135ca0d70650f057f15c7c0b560d24659524c771f70fbddc24597c861c118"
  "pypi vllm 0.20.1 vllm-0.20.1-cp38-abi3-manylinux_2_35_x86_64.whl da89341f2a07f49a2571edecbec612071839b04b6d7ea1e3bddb5347d47859df"
  "pypi vllm 0.20.1 vllm-0.20.1-cp38-abi3-manylinux_2_35_aarch64.whl 1cfa5f5654e4c7a8a9f949ef7a9597a63b9736129202c96c006434b57f511223"
  "pypi vllm 0.20.1 vllm-0.20.1-1-cp38-abi3-manylinux_2_35_x86_64.whl 11907857c94c226caf82ada92ab09b1e0dbf538b5b80a93aed74be29e861020c"
  "pypi vllm 0.20.1 vllm-0.20.1-1-cp38-abi3-manylinux_2_35_aarch64.whl 4a5c24a94be8413ce682e72d6c22762ac7be64635cf191f4807d30910f928268"
  "pypi vllm 0.33.0 vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl 4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa"
  "pypi vllm 0.33.0 vllm-0.33.0-cp38-abi3-manylinux_2_28_aarch64.whl e9e404f52c8494b69bd83fe99fe7ecfa9f6b89fbd156d2a9639c24ea41d6d606"
  "pypi sgl-kernel 0.3.21 sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl 57dfb3a2a3cd759f499c32e2bad5f6489b7c58f7f9a84ee00c53ec92d303aaab"
  "pypi sgl-kernel 0.3.21 sgl_kernel-0.3.21-cp310-abi3-manylinux2014_aarch64.whl bafdcc26e9ce1e9102b99e4186d652fefbafe5c22ea2cbb5ffe07b331e83be1f"
  "pypi sgl-kernel 0.3.16.post3 sgl_kernel-0.3.16.post3-cp310-abi3-manylinux2014_x86_64.whl d12f1250233e2716db1b5096cfc4eb9ac1bfe6391ae4e40762be73210159bdf0"
  "pypi sgl-kernel 0.2.8 sgl_kernel-0.2.8-cp39-abi3-manylinux2014_x86_64.whl 6e4fb1f9cc955c4044f9b85249207c6d4f7a48844f85ec88384236e3f4b21cf5"
  "pypi sglang-kernel 0.4.10 sglang_kernel-0.4.10-cp310-abi3-manylinux2014_x86_64.whl 043cbe4a10e7887ea1b25599b729ff1ce115a0d5217b2c177aff9f9ae5327724"
  "pypi sglang-kernel 0.4.10 sglang_kernel-0.4.10-cp310-abi3-manylinux2014_aarch64.whl 2c48d45eb3d6399000fb1d71e792128911f0d906f0dc61724348e96c2aac0429"
  "pypi sglang 0.5.23 sglang-0.5.23-cp312-cp312-manylinux_2_34_x86_64.whl 8d257a319395b322bb1be327d05e5528859358153c8563b04c0a4a3c8af164b6"
  "pypi sglang 0.5.23 sglang-0.5.23-cp312-cp312-manylinux_2_34_aarch64.whl 2d538a89a6e7b1b0707e2ab7f8edef4af6a7beb5da661f9a231cddcdf5308417"
  "pypi sglang 0.5.8 sglang-0.5.8-py3-none-any.whl b7fbd890f6edd87f46c6e3ce72d592316af316f183c9bd999c3cc44b20fa2451"
  "pypi sglang 0.5.4 sglang-0.5.4-py3-none-any.whl 342b370145e33f232bef21b73da119d4a96202a0386ebcd54cdbf46a11fbeda3"
  "pypi sglang 0.4.10 sglang-0.4.10-py3-none-any.whl 93b4eaca8f2815477e3a4005639cda095f24f1f7435b5898a62acb48c327bf2b"
  "pypi torch 2.15.0 torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl 6d8c86f4e33a9f12a58149bd9b0d64351632b8eb44479be8ff85e5389932dd79"
  "pypi torch 2.15.0 torch-2.15.0-cp312-cp312-manylinux_2_28_aarch64.whl 9e51cf9460c5441dcd2a4f31ece207e35ea7c3d2535be0f929cca4944e2eeb18"
  "pypi torch 2.11.0 torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl 0f68f4ac6d95d12e896c3b7a912b5871619542ec54d3649cf48cc1edd4dd2756"
  "pypi torch 2.11.0 torch-2.11.0-cp312-cp312-manylinux_2_28_aarch64.whl f99924682ef0aa6a4ab3b1b76f40dc6e273fca09f367d15a524266db100a723f"
  "pypi uv 0.13.9 uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19"
  "pypi uv 0.13.9 uv-0.13.9-py3-none-manylinux_2_28_aarch64.whl ecb6028d79dc96fbeafffe5c8af62a7099487ebc05a701e76714eebcffd06375"
  "pypi uv 0.13.9 uv-0.13.9-py3-none-musllinux_1_1_x86_64.whl 2c45530751517d6c3bbc69a19473f6effe47cce047bede01ffd8af7ea7b36b25"
  "pypi uv 0.13.8 uv-0.13.8-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl e18a57b8b352eb7c8feb317b9f6f533c8f0ad9673fd6cf34bbe3cf1a9f6a8984"
  "pypi uv 0.13.8 uv-0.13.8-py3-none-manylinux_2_28_aarch64.whl 5337c30bb893b4f9ce0ceb921ba2da0d13f649da644f40ad3bef84083bef0203"
  "pypi uv 0.13.8 uv-0.13.8-py3-none-musllinux_1_1_x86_64.whl 29451c60f5e8b07403e0a175d5229efc36b0289b34143ff4aaa499a5dd52553a"
  "pypi uv 0.12.20 uv-0.12.20-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl d0837cb0ec80f830198e4a0fe86385e2a8ba8846f066acd243a1c15f4d52ca74"
  "pypi uv 0.12.20 uv-0.12.20-py3-none-manylinux_2_28_aarch64.whl af3ea78e4080905ca7d29ec9561c2b86b15b18c6637cb3b80f4f2ac50d891309"
  "pypi uv 0.12.20 uv-0.12.20-py3-none-musllinux_1_1_x86_64.whl 903262c10ea3902e4bf5fe7c1a54fe386145afd5cf4b79e35815ce4e141d94f1"
  "pypi gguf 0.19.0 gguf-0.19.0-py3-none-any.whl 70bcd10edfe697fb2dad6e40af2234b9d8ece9a41a99761405121ebda1c3c1cd"
)

# ---------------------------------------------------------------- arguments
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgw}/reality"
KEEP=0
ONLY=""
VERBOSE=0
LIST=0
while (($#)); do
  case $1 in
    --cache) [[ $# -ge 2 ]] || { echo "reality: --cache needs a directory" >&2; exit 2; }; CACHE=$2; shift 2 ;;
    --cache=*) CACHE=${1#--cache=}; shift ;;
    --keep) KEEP=1; shift ;;
    --only) [[ $# -ge 2 ]] || { echo "reality: --only needs a regex" >&2; exit 2; }; ONLY=$2; shift 2 ;;
    --verbose|-v) VERBOSE=1; shift ;;
    --list) LIST=1; shift ;;
    -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
    *) echo "reality: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

if ((LIST)); then printf '%s\n' "${ARTIFACTS[@]}"; exit 0; fi

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
secs3() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
T0=$(now)
FAILED=0
LLMGW_COMPARED=0
LLMGW_MISMATCH=0

mkdir -p "$CACHE"/{tools,dl,work,results}
CACHE=$(cd "$CACHE" && pwd)
echo "reality: cache directory $CACHE (tools in $CACHE/tools, downloads in $CACHE/dl, results in $CACHE/results)"

# -------------------------------------------------------------------- tools
for t in python3 readelf sha256sum tar awk sed sort; do
  command -v "$t" >/dev/null || { echo "reality: needs $t (readelf: apt-get install binutils)" >&2; exit 2; }
done
[[ -x /usr/bin/time ]] || { echo "reality: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 2; }
if [[ -n ${CUOBJDUMP:-} ]]; then
  [[ -x $CUOBJDUMP ]] || { echo "reality: CUOBJDUMP=$CUOBJDUMP is not executable" >&2; exit 2; }
else
  CUDIR="$CACHE/tools/${CUOBJDUMP_PIN/==/-}"
  CUOBJDUMP="$CUDIR/nvidia/cu13/bin/cuobjdump"
  if [[ ! -x $CUOBJDUMP ]]; then
    echo "reality: installing $CUOBJDUMP_PIN into $CUDIR (pip --target, hash-checked)"
    req="$CACHE/tools/cuobjdump-requirements.txt"
    printf '%s --hash=sha256:%s\n' "$CUOBJDUMP_PIN" "$CUOBJDUMP_WHEEL_SHA256" > "$req"
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes --target "$CUDIR" -r "$req"
  fi
fi
echo "reality: cuobjdump $("$CUOBJDUMP" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') at $CUOBJDUMP; $(readelf --version | head -1)"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${LLMGW_BIN:-} ]]; then
  command -v cargo >/dev/null || { echo "reality: needs cargo to build llmgw, or LLMGW_BIN" >&2; exit 2; }
  echo "reality: building llmgw (cargo build --release in $REPO)"
  (cd "$REPO" && cargo build --release --quiet --bin llmgw)
  LLMGW_BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/llmgw"
fi
[[ -x $LLMGW_BIN ]] || { echo "reality: LLMGW_BIN=$LLMGW_BIN is not executable" >&2; exit 2; }
LLMGW_BIN=$(cd "$(dirname "$LLMGW_BIN")" && pwd)/$(basename "$LLMGW_BIN")
echo "reality: llmgw at $LLMGW_BIN"
HOST_ARCH=$(uname -m)

# ----------------------------------------------------------------- download
# fetch KIND NAME VERSION FILE SHA256 -> path of the verified file on stdout.
# A file already in the cache (dl/, or one folder below it) with that sha256 is
# used in place; only one in dl/ (fetched there) is deleted after it is read.
fetch() {
  local kind=$1 name=$2 ver=$3 file=$4 sha=$5 dst="$CACHE/dl/$4" have
  while IFS= read -r have; do
    if echo "$sha  $have" | sha256sum -c --quiet - >/dev/null 2>&1; then
      echo "$have"; return 0
    fi
  done < <(find "$CACHE" -mindepth 2 -maxdepth 2 -type f -name "$file" 2>/dev/null | sort)
  rm -f "$dst" "$dst.part"
  case $kind in
    npm)
      if command -v npm >/dev/null; then
        local tmp; tmp=$(mktemp -d "$CACHE/dl/npm.XXXXXX")
        (cd "$tmp" && npm pack --silent "$name@$ver" >/dev/null 2>&1) || { rm -rf "$tmp"; return 1; }
        mv "$tmp/$file" "$dst.part" || { rm -rf "$tmp"; return 1; }
        rm -rf "$tmp"
      else
        python3 - "$name" "$ver" "$dst.part" <<'PY' || return 1
import json, shutil, sys, urllib.request
name, ver, out = sys.argv[1:4]
meta = json.load(urllib.request.urlopen(f"https://registry.npmjs.org/{name.replace('/', '%2F')}/{ver}"))
with urllib.request.urlopen(meta["dist"]["tarball"]) as r, open(out, "wb") as f:
    shutil.copyfileobj(r, f, 1 << 20)
PY
      fi ;;
    pypi)
      python3 - "${REALITY_PYPI:-https://pypi.org/pypi}" "$name" "$ver" "$file" "$dst.part" <<'PY' || return 1
import json, shutil, sys, urllib.parse, urllib.request
base, name, ver, fname, out = sys.argv[1:6]
api = f"{base}/{name}/json"
files = json.load(urllib.request.urlopen(api))["releases"].get(ver, [])
hit = [f for f in files if f["filename"] == fname]
if not hit:
    sys.exit(f"reality: {fname} not on PyPI for {name} {ver}")
url = urllib.parse.urljoin(api, hit[0]["url"])
with urllib.request.urlopen(url) as r, open(out, "wb") as f:
    shutil.copyfileobj(r, f, 1 << 20)
PY
      ;;
  esac
  if ! echo "$sha  $dst.part" | sha256sum -c --quiet - >/dev/null 2>&1; then
    echo "reality: SHA256 MISMATCH for $file: expected $sha, got $(sha256sum "$dst.part" | cut -c1-64)" >&2
    rm -f "$dst.part"; return 1
  fi
  mv "$dst.part" "$dst"
  echo "$dst"
}

# ------------------------------------------------------------------ unpack
# unpack FILE DIR: every ELF file, found by its magic and not by its name (+
# dist-info METADATA/WHEEL of a wheel); an npm tarball is unpacked whole.
unpack() {
  local file=$1 dir=$2
  rm -rf "$dir"; mkdir -p "$dir"
  case $file in
    *.tgz) tar -xzf "$file" -C "$dir" ;;
    *.whl) python3 - "$file" "$dir" <<'PY'
import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for i in z.infolist():
    if i.is_dir():
        continue
    if re.search(r"\.dist-info/(METADATA|WHEEL)$", i.filename):
        z.extract(i, sys.argv[2])
        continue
    with z.open(i) as m:
        if m.read(4) == b"\x7fELF":
            z.extract(i, sys.argv[2])
PY
    ;;
  esac
}

is_elf() { [[ -f $1 && ! -L $1 && $(head -c4 "$1" | od -An -c | tr -d ' \n') == '177ELF' ]]; }

# ------------------------------------------------------------------ oracles
# oracle_readelf ELF OUTFILE -> writes readelf output; prints "GLIBC=.. GLIBCXX=.. CXXABI=.."
# The floor of a prefix is the highest version of it in the version-needs
# section (.gnu.version_r), compared with sort -V.
version_needs() {  # readelf output -> one needed version name per line
  awk '/^Version needs section/ { f = 1; next }
       /^Version (symbols|definition) section/ { f = 0 }
       f && /Name:/ { for (i = 1; i < NF; i++) if ($i == "Name:") print $(i + 1) }' "$1"
}
floor_of() {  # PREFIX NAMESFILE -> highest version or "-"
  local v
  v=$({ grep -E "^$1_[0-9][0-9.]*$" "$2" || true; } | sed "s/^$1_//" | sort -V | tail -1)
  echo "${v:--}"
}
dyn_field() {  # TAG READELF_OUT -> bracketed value(s), comma-joined, or "-"
  local v
  v=$({ grep -E "\($1\)" "$2" || true; } | sed -E 's/.*\[(.*)\]$/\1/' | paste -sd, -)
  echo "${v:--}"
}
# normalise_cuobjdump LISTING -> "sass=a,b ptx=c" (sorted, unique; "-" when none)
normalise_cuobjdump() {
  local sass ptx
  sass=$({ sed -nE 's/^ELF file +[0-9]+: .*\.(sm_[0-9]+[a-z]*)\.cubin$/\1/p' "$1" || true; } | sort -uV | paste -sd, -)
  ptx=$({ sed -nE 's/^PTX file +[0-9]+: .*\.(sm_[0-9]+[a-z]*)\.ptx$/\1/p' "$1" || true; } | sort -uV | paste -sd, -)
  echo "sass=${sass:--} ptx=${ptx:--}"
}

# ------------------------------------------------------ llmgw vs the oracles
# compare_artifact ORACLE_TSV INSPECT_JSON: the oracles' facts (one TSV row per
# ELF) against `llmgw inspect --format json` of the whole artifact, file by
# file. First line: "inspect[...] oracle[...] agree=yes|NO inspect_only=N";
# then one line per field that differs. Exit 1 when any differs.
compare_artifact() {
  python3 - "$1" "$2" <<'PY'
import csv, json, re, sys
tsv, js = sys.argv[1:3]
oracle = list(csv.DictReader(open(tsv), delimiter="\t"))
doc = json.load(open(js))
files = {f["path"]: f for f in doc["files"]}
def vkey(v): return [int(x) for x in re.findall(r"\d+", v)]
def tkey(t):
    m = re.fullmatch(r"sm_(\d+)([a-z]*)", t)
    return (int(m.group(1)), m.group(2)) if m else (0, t)
def floors(f):
    out = {}
    for n in (v for need in f["version_needs"] for v in need["versions"]):
        p, _, v = n.partition("_")
        if p in ("GLIBC", "GLIBCXX", "CXXABI") and re.fullmatch(r"[0-9][0-9.]*", v):
            if p not in out or vkey(v) > vkey(out[p]):
                out[p] = v
    return out
def dash(v): return v if v else "-"
def ours(f):
    fl = floors(f)
    kinds = {"sass": set(), "ptx": set()}
    for t in f["targets"]:
        if t["section"] == ".nv_fatbin" and t["kind"] in kinds:
            kinds[t["kind"]].add(t["listed_as"])
    return {
        "soname": dash(f["soname"]), "needed": dash(",".join(f["elf"]["needed"])),
        "runpath": dash(f["elf"].get("runpath")), "rpath": dash(f["rpath"]),
        "GLIBC": dash(fl.get("GLIBC")), "GLIBCXX": dash(fl.get("GLIBCXX")), "CXXABI": dash(fl.get("CXXABI")),
        "cudart": dash(",".join(n for n in f["elf"]["needed"] if n.startswith("libcudart"))),
        "sass": dash(",".join(sorted(kinds["sass"], key=tkey))), "ptx": dash(",".join(sorted(kinds["ptx"], key=tkey))),
    }
fields = ["soname", "needed", "runpath", "rpath", "GLIBC", "GLIBCXX", "CXXABI", "cudart", "sass", "ptx"]
diffs = []
agg = {"inspect": [], "oracle": []}
for row in oracle:
    f = files.get(row["path"])
    if f is None:
        diffs.append(f"    {row['path']}: inspect did not read it as an ELF file")
        continue
    mine = ours(f)
    agg["inspect"].append(mine); agg["oracle"].append(row)
    for k in fields:
        if mine[k] != row[k]:
            diffs.append(f"    {row['path']}: {k}: inspect={mine[k]} oracle={row[k]}")
def summary(rows):
    out = []
    for k in ("GLIBC", "GLIBCXX", "CXXABI"):
        vs = [r[k] for r in rows if r[k] != "-"]
        out.append(f"{k}={max(vs, key=vkey) if vs else '-'}")
    for k, key in (("cudart", str), ("sass", tkey), ("ptx", tkey)):
        s = {x for r in rows if r[k] != "-" for x in r[k].split(",")}
        out.append(f"{k}={','.join(sorted(s, key=key)) or '-'}")
    return " ".join(out)
extra = len(set(files) - {r["path"] for r in oracle})
agree = "yes" if not diffs else "NO"
print(f"inspect[{summary(agg['inspect'])}] oracle[{summary(agg['oracle'])}] agree={agree} inspect_only={extra}")
for d in diffs:
    print(d)
sys.exit(1 if diffs else 0)
PY
}

# The largest CUDA library read so far, timed both ways: wall seconds (to the
# millisecond, around the command) and peak resident KiB (GNU time).
BIG_SIZE=0 BIG_NAME="" BIG_CU="" BIG_LL=""
time_largest() {  # ELF ARTIFACT_FILE REL "CUOBJDUMP_SECONDS CUOBJDUMP_KIB"
  local f=$1 size tf t0; size=$(stat -c %s "$f")
  ((size > BIG_SIZE)) || return 0
  tf=$(mktemp); t0=$(now)
  /usr/bin/time -f '%M' -o "$tf" "$LLMGW_BIN" inspect --format json "$f" >/dev/null 2>&1 || true
  BIG_LL="$(secs3 "$t0" "$(now)") $(tail -1 "$tf")"
  BIG_SIZE=$size BIG_NAME="$2 $3" BIG_CU=$4
  rm -f "$tf"
}

# ---------------------------------------------------------------- per artifact
inspect_artifact() {
  local kind=$1 name=$2 ver=$3 file=$4 sha=$5
  local t_a t_dl t_in path dir res js elfs=0 cudas=0 f rel ro names tf fl_glibc fl_cxx fl_abi fetched
  local extra="" verdict
  t_a=$(now)
  if ! path=$(fetch "$kind" "$name" "$ver" "$file" "$sha"); then
    echo "$name $ver FAILED download/verify ($file)"; FAILED=1; return 0
  fi
  # Only what fetch placed in dl/ is ours to delete; a file found elsewhere in the cache stays.
  fetched=0; [[ $path == "$CACHE/dl/$file" ]] && fetched=1
  t_dl=$(now)
  js="$CACHE/results/$file.inspect.json"
  if ! "$LLMGW_BIN" inspect --format json "$path" > "$js" 2> "$js.err"; then
    echo "$name $ver sha256=$sha llmgw inspect FAILED: $(head -1 "$js.err")"; FAILED=1
    if ((! KEEP && fetched)); then rm -f "$path"; fi
    return 0
  fi
  t_in=$(now)
  dir="$CACHE/work/$file"
  unpack "$path" "$dir"
  res="$CACHE/results/$file.tsv"
  printf 'path\tsoname\tneeded\trunpath\trpath\tGLIBC\tGLIBCXX\tCXXABI\tcudart\tsass\tptx\n' > "$res"
  ro=$(mktemp); names=$(mktemp); tf=$(mktemp)
  while IFS= read -r -d '' f; do
    is_elf "$f" || continue
    elfs=$((elfs + 1)); rel=${f#"$dir"/}
    readelf -V -d -W "$f" > "$ro" 2>/dev/null || true
    version_needs "$ro" > "$names"
    fl_glibc=$(floor_of GLIBC "$names"); fl_cxx=$(floor_of GLIBCXX "$names"); fl_abi=$(floor_of CXXABI "$names")
    local needed soname runpath rpath cudart cu="sass=- ptx=-"
    needed=$(dyn_field NEEDED "$ro"); soname=$(dyn_field SONAME "$ro")
    runpath=$(dyn_field RUNPATH "$ro"); rpath=$(dyn_field RPATH "$ro")
    cudart=$({ tr ',' '\n' <<<"$needed" | grep '^libcudart' || true; } | paste -sd, -); cudart=${cudart:--}
    readelf -S -W "$f" > "$ro" 2>/dev/null || true
    if grep -q ' \.nv_fatbin ' "$ro"; then
      cudas=$((cudas + 1))
      local c0; c0=$(now)
      /usr/bin/time -f '%M' -o "$tf" "$CUOBJDUMP" --list-elf --list-ptx "$f" > "$ro" 2>/dev/null || true
      local cu_time; cu_time="$(secs3 "$c0" "$(now)") $(tail -1 "$tf")"
      cu=$(normalise_cuobjdump "$ro")
      if ((KEEP)); then cp "$ro" "$CACHE/results/$file.${rel//\//__}.cuobjdump.txt"; fi
      time_largest "$f" "$file" "$rel" "$cu_time"
    fi
    local sass=${cu#sass=}; sass=${sass%% *}; local ptx=${cu##*ptx=}
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" "$soname" "$needed" "$runpath" "$rpath" \
      "$fl_glibc" "$fl_cxx" "$fl_abi" "$cudart" "$sass" "$ptx" >> "$res"
    if ((VERBOSE)) && [[ $cu != "sass=- ptx=-" ]]; then
      echo "    $rel GLIBC=$fl_glibc GLIBCXX=$fl_cxx CXXABI=$fl_abi cudart=$cudart $cu"
    fi
  done < <(find "$dir" -type f -print0 | sort -z)
  rm -f "$ro" "$names" "$tf"
  # uv: what --version prints, where this host can run it
  if [[ $name == uv && $file == *x86_64* && $HOST_ARCH == x86_64 ]]; then
    local uvb; uvb=$(find "$dir" -path '*/scripts/uv' -type f | head -1)
    if [[ -n $uvb ]]; then chmod +x "$uvb"; extra+=" version_out=\"$("$uvb" --version 2>&1 || true)\""; fi
  fi
  # wheel metadata: Requires-Python and the pins that matter
  local md; md=$(find "$dir" -path '*.dist-info/METADATA' | head -1)
  if [[ -n $md ]]; then
    local rp pins
    rp=$(sed -n 's/^Requires-Python: //p' "$md" | head -1)
    pins=$({ grep -E '^Requires-Dist: (torch|sgl-kernel|sglang-kernel)[ =<>~!]' "$md" || true; } | sed 's/^Requires-Dist: //; s/ //g' | paste -sd, -)
    extra+=" requires_python=${rp:--} pins=${pins:--}"
  fi
  if verdict=$(compare_artifact "$res" "$js"); then :; else LLMGW_MISMATCH=$((LLMGW_MISMATCH + 1)); fi
  LLMGW_COMPARED=$((LLMGW_COMPARED + elfs))
  printf '%s %s sha256=%s elfs=%d cuda_elfs=%d %s%s t_dl=%ss t_inspect=%ss t_oracle=%ss\n' \
    "$name" "$ver" "$sha" "$elfs" "$cudas" "$(head -1 <<<"$verdict")" "$extra" \
    "$(secs "$t_a" "$t_dl")" "$(secs "$t_dl" "$t_in")" "$(secs "$t_in" "$(now)")"
  tail -n +2 <<<"$verdict"
  if ((! KEEP)); then rm -rf "$dir"; if ((fetched)); then rm -f "$path"; fi; fi
}

n=0
for a in "${ARTIFACTS[@]}"; do
  read -r kind name ver file sha <<<"$a"
  if [[ -n $ONLY ]] && ! [[ "$name $ver $file" =~ $ONLY ]]; then continue; fi
  n=$((n + 1))
  inspect_artifact "$kind" "$name" "$ver" "$file" "$sha"
done
((n)) || { echo "reality: no artifact matches --only '$ONLY'" >&2; exit 2; }

echo "reality: llmgw compared with the oracles on $LLMGW_COMPARED ELF file(s) of $n artifact(s): $LLMGW_MISMATCH artifact(s) disagree"
if ((BIG_SIZE)); then
  read -r cu_s cu_k <<<"$BIG_CU"; read -r ll_s ll_k <<<"$BIG_LL"
  awk -v name="$BIG_NAME" -v size="$BIG_SIZE" -v cs="$cu_s" -v ck="$cu_k" -v ls="$ll_s" -v lk="$ll_k" 'BEGIN {
    printf "reality: largest CUDA library %s (%d bytes): llmgw inspect %.3f s, %.1f MB peak; cuobjdump --list-elf --list-ptx %.3f s, %.1f MB peak; time ratio %.4f (target <= 0.25), llmgw peak < 64 MB: %s\n",
      name, size, ls, lk / 1024, cs, ck / 1024, (cs > 0 ? ls / cs : 0), (lk / 1024 < 64 ? "yes" : "NO") }'
fi
echo "reality: $n artifact(s) in $(secs "$T0" "$(now)")s; per-ELF results in $CACHE/results"
if ((FAILED || LLMGW_MISMATCH)); then exit 1; fi
