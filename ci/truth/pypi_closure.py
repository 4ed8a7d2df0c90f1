#!/usr/bin/env python3
"""The Python engines' truth as PyPI really resolves them: the whole closure.

usage:
  ci/truth/pypi_closure.py [--cache DIR] [--out FILE] [--only REGEX] [--exclude-newer TIME]
  ci/truth/pypi_closure.py --compare [--truth FILE] [--cache DIR] [--only REGEX]
  ci/truth/pypi_closure.py --list [--truth FILE]

The first form installs the pinned uv of `ci/real-uv.txt` (pip
--require-hashes, into a virtual environment under DIR, default
`${LLMGW_CACHE:-$HOME/.cache/llmgw}/closure`) and, for every vLLM and SGLang
version of `matrix/wants.json`, with the requirement the recipes hand uv
(`vllm==V`; `sglang==V`, `sglang[srt]==V` before 0.5: crates/llmgw-core/src/recipe/vllm.rs,
crates/llmgw-core/src/recipe/sglang.rs), for x86_64 and aarch64 and Python 3.12
(crates/llmgw-core/src/recipe/python.rs), runs the real uv against PyPI with builds forbidden,
at every manylinux level uv's `--python-platform` takes:

  uv pip compile -v --no-build --python-version 3.12
     --python-platform <arch>-manylinux_2_<N> --exclude-newer TIME ...

From uv's own output it records the closure (every package, its version and
the wheel uv selected: its `Selecting: name==version [compatible] (file)` line
of `-v`, and its `# via` annotations), and from PyPI's JSON simple API
(PEP 691, `Accept: application/vnd.pypi.simple.v1+json`) every file of each
version in a closure (name, tags, size, sha256, upload-time, yanked), each
selected wheel's METADATA (PEP 658, checked against its core-metadata sha256)
and its unpacked size (the zip's central directory, read with HTTP ranges).
The floor of a closure is the lowest level at which it resolves (and every
level above it does); the glibc it really needs is the highest of the lowest
manylinux tag of each wheel selected there; the packages that set it are the
wheels selected there that no lower level takes. A version that resolves at
no level is recorded with uv's own error, the closure of the rest (the
packages published as source only excluded with `--excludes`), and what uv
says with builds allowed. Builds the recipes take from elsewhere
(vLLM's +cu129: GitHub and download.pytorch.org) are recorded UNCONFIRMED
with the reason when those hosts are not reachable.

`--exclude-newer` (default EXCLUDE_NEWER below) makes the run reproducible:
PyPI as it stood then, as uv sees it. The JSON (default
ci/truth/pypi_closure.json) is deterministic: sorted, no time but PyPI's own
upload times and the cut-off given. The run log goes to stdout
(ci/truth/pypi_closure.out.txt is the last one).

`--compare` reads the committed truth and resolves again with no cut-off,
against PyPI now: it prints the engines' versions PyPI has beyond the truth's,
every file of the truth that is yanked or gone, and every closure whose floor
or pins moved. Exit 0 when it could compare (whatever moved), 2 on bad input
or a tool missing.
"""

import argparse
import hashlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIMPLE = "https://pypi.org/simple"
ACCEPT = "application/vnd.pypi.simple.v1+json"
UV_VERSION = "0.13.9"  # ci/real-uv.txt, recipe::UV_VERSION
PYTHON = "3.12"  # crates/llmgw-core/src/recipe/python.rs PYTHON
ARCHES = ["x86_64", "aarch64"]
# PyPI as it stood at this time: the resolution this truth records.
EXCLUDE_NEWER = "2026-12-01T00:00:00Z"
# The packages whose versions the recipes and the GPU checks care about.
PINNED = re.compile(r"^(torch|torchvision|torchaudio|triton|sgl-kernel|sglang-kernel|flashinfer-python|"
                    r"flashinfer-cubin|flashinfer-jit-cache|xformers|cuda-python|cuda-bindings|cuda-toolkit|"
                    r"nvidia-cuda-runtime(-cu\d+)?|nvidia-nccl-cu\d+|nvidia-cudnn-cu\d+|vllm|sglang)$")
MAX_JSON = 64 << 20  # the largest simple-API page read (torch's is a few MB)
MAX_METADATA = 4 << 20
MAX_CENTRAL = 64 << 20
MAX_SDIST = 64 << 20  # a source-only release's sdist, read for its PKG-INFO
HTTP_TIMEOUT = 120


def fail(msg):
    sys.stderr.write(f"pypi_closure: {msg}\n")
    sys.exit(2)


def say(msg=""):
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


def norm(name):
    """PEP 503 normalized name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def vkey(v):
    """A sort key for versions (numeric parts as numbers; enough for ordering
    the releases of one project, not a full PEP 440 comparison)."""
    parts = []
    for p in re.split(r"[.+!-]", v):
        m = re.fullmatch(r"(\d*)(\D*)(\d*)", p)
        if not m:
            parts.append((1, 0, p, 0))
            continue
        num, tag, rest = m.groups()
        # A pre-release (a/b/rc/dev) sorts before the release; post after.
        rank = {"": 2, "post": 3}.get(tag, 1)
        parts.append((0, int(num or 0), rank if tag else 2, tag, int(rest or 0)))
    return parts


def is_prerelease(v):
    return bool(re.search(r"\d(a|b|rc|\.dev)\d*$|\d(a|b|rc)\d+\.", v.split("+")[0]))


# ------------------------------------------------------------------ HTTP
def get(url, accept=None, limit=MAX_JSON, headers=None, want=(200,)):
    """GET `url`, at most `limit` bytes; (status, body, headers)."""
    h = dict(headers or {})
    if accept:
        h["Accept"] = accept
    req = urllib.request.Request(url, headers=h)
    for attempt in range(4):
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as r:
                body = r.read(limit + 1)
                if len(body) > limit:
                    fail(f"{url}: answer longer than {limit} bytes")
                if r.status not in want:
                    fail(f"{url}: HTTP {r.status}")
                return r.status, body, r.headers
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return 404, b"", e.headers
            if attempt == 3:
                fail(f"{url}: HTTP {e.code}")
        except (urllib.error.URLError, OSError) as e:
            if attempt == 3:
                fail(f"{url}: {e}")
        time.sleep(2 * (attempt + 1))
    fail(f"{url}: no answer")


class RangeFile(io.RawIOBase):
    """A remote file read with HTTP ranges, for zipfile: only the end (the
    central directory) is fetched."""

    def __init__(self, url, size):
        super().__init__()
        self.url, self.size, self.pos, self.segments, self.fetched = url, size, 0, [], 0

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def _fetch(self, a, b):
        for s, data in self.segments:
            if s <= a and b <= s + len(data):
                return data[a - s:b - s]
        start, end = a, max(b, min(self.size, a + (64 << 10)))
        self.fetched += end - start
        if self.fetched > MAX_CENTRAL:
            fail(f"{self.url}: more than {MAX_CENTRAL} bytes of its central directory")
        _, data, _ = get(self.url, headers={"Range": f"bytes={start}-{end - 1}"}, limit=end - start, want=(206,))
        self.segments.append((start, data))
        return data[a - start:b - start]

    def read(self, n=-1):
        if n is None or n < 0:
            n = self.size - self.pos
        n = max(0, min(n, self.size - self.pos))
        data = self._fetch(self.pos, self.pos + n) if n else b""
        self.pos += len(data)
        return data

    def readinto(self, b):
        d = self.read(len(b))
        b[:len(d)] = d
        return len(d)


# --------------------------------------------------------------- wheels
LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def parse_filename(filename):
    """(kind, name, version, build, python tags, abi tags, platform tags) of a
    wheel or sdist file name; None for anything else."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        if len(parts) not in (5, 6):
            return None
        name, version = parts[0], parts[1]
        build = parts[2] if len(parts) == 6 else None
        py, abi, plat = parts[-3:]
        return {"kind": "wheel", "name": norm(name), "version": version, "build": build,
                "python": py.split("."), "abi": abi.split("."), "platform": plat.split(".")}
    m = re.fullmatch(r"(.+)-([^-]+)\.(tar\.gz|zip|tar\.bz2|tgz)", filename)
    if m:
        return {"kind": "sdist", "name": norm(m.group(1)), "version": m.group(2)}
    return None


def glibc_of(tag, arch):
    """The glibc (major, minor) a manylinux platform tag needs on `arch`; None
    when the tag is not a manylinux one for it."""
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", tag)
    if m and m.group(3) == arch:
        return int(m.group(1)), int(m.group(2))
    m = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)", tag)
    if m and m.group(2) == arch:
        return LEGACY[m.group(1)]
    return None


def wheel_need(filename, arch):
    """The lowest glibc at which a wheel installs on `arch`: (0, 0) for a pure
    wheel, None when it has no tag for this arch's glibc."""
    p = parse_filename(filename)
    if not p or p["kind"] != "wheel":
        return None
    if "any" in p["platform"]:
        return (0, 0)
    needs = [g for g in (glibc_of(t, arch) for t in p["platform"]) if g]
    return min(needs) if needs else None


def fits_python(p):
    """Whether a wheel's Python and ABI tags take CPython 3.12."""
    for py in p["python"]:
        for abi in p["abi"]:
            if py in ("py3", "py2.py3", "py312", "cp312") and abi in ("none", "cp312"):
                return True
            m = re.fullmatch(r"cp3(\d+)", py)
            if m and abi == "abi3" and int(m.group(1)) <= 12:
                return True
            if py.startswith("py3") and abi == "none":
                return True
    return False


def linux_or_any(p):
    return any(t == "any" or re.search(r"(linux|manylinux\w*)_(x86_64|aarch64)$", t) for t in p["platform"])


def gl(g):
    return f"{g[0]}.{g[1]}"


# --------------------------------------------------------------- PyPI
class PyPI:
    """PyPI's JSON simple API, each project asked once a run, and what is
    read of a wheel (METADATA, unpacked size), kept by sha256 in the cache."""

    def __init__(self, cache):
        self.cache = cache
        self.pages = {}
        os.makedirs(os.path.join(cache, "wheels"), exist_ok=True)

    def page(self, name):
        name = norm(name)
        if name not in self.pages:
            status, body, _ = get(f"{SIMPLE}/{name}/", ACCEPT)
            self.pages[name] = json.loads(body) if status == 200 else None
        return self.pages[name]

    def files(self, name, version):
        """Every file of `version` that can matter on Linux x86_64/aarch64
        with CPython 3.12: its sdists and the wheels whose tags take it."""
        page = self.page(name)
        out = []
        for f in (page or {}).get("files", []):
            p = parse_filename(f["filename"])
            if not p or p["name"] != norm(name) or p["version"] != version:
                continue
            if p["kind"] == "wheel" and not (fits_python(p) and linux_or_any(p)):
                continue
            e = {"filename": f["filename"], "size": f.get("size"), "sha256": f["hashes"].get("sha256"),
                 "upload_time": f.get("upload-time"), "requires_python": f.get("requires-python"),
                 "yanked": f.get("yanked") or False}
            cm = f.get("core-metadata") or f.get("dist-info-metadata")
            if isinstance(cm, dict) and cm.get("sha256"):
                e["core_metadata_sha256"] = cm["sha256"]
            e["_url"] = f["url"]
            out.append(e)
        return sorted(out, key=lambda e: e["filename"])

    def wheel_facts(self, f):
        """METADATA fields and the unpacked size of one wheel file (cached)."""
        path = os.path.join(self.cache, "wheels", f["sha256"] + ".json")
        if os.path.exists(path):
            with open(path) as fh:
                return json.load(fh)
        url = urllib.parse.urljoin(f"{SIMPLE}/", f["_url"])
        text = None
        if f.get("core_metadata_sha256"):
            status, body, _ = get(url + ".metadata", limit=MAX_METADATA)
            if status == 200:
                if hashlib.sha256(body).hexdigest() != f["core_metadata_sha256"]:
                    fail(f"{f['filename']}.metadata: sha256 is not PyPI's core-metadata hash")
                text = body.decode("utf-8", "replace")
        zf = zipfile.ZipFile(RangeFile(url, f["size"]))
        if text is None:
            name = next((n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
            if not name:
                fail(f"{f['filename']}: no .dist-info/METADATA")
            text = zf.read(name).decode("utf-8", "replace")
        facts = metadata_fields(text)
        infos = zf.infolist()
        facts["unpacked_size"] = sum(i.file_size for i in infos)
        facts["files"] = len(infos)
        with open(path + ".part", "w") as fh:
            json.dump(facts, fh, sort_keys=True)
        os.replace(path + ".part", path)
        return facts

    def sdist_metadata(self, f):
        """Requires-Dist and Requires-Python of a source distribution's
        PKG-INFO (the file downloaded, its sha256 checked; cached)."""
        path = os.path.join(self.cache, "wheels", f["sha256"] + ".json")
        if os.path.exists(path):
            with open(path) as fh:
                return json.load(fh)
        if not f["filename"].endswith(".tar.gz") or (f.get("size") or 0) > MAX_SDIST:
            return None
        _, body, _ = get(urllib.parse.urljoin(f"{SIMPLE}/", f["_url"]), limit=MAX_SDIST)
        if hashlib.sha256(body).hexdigest() != f["sha256"]:
            fail(f"{f['filename']}: sha256 is not PyPI's")
        import tarfile
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as t:
            m = next((m for m in t.getmembers() if re.fullmatch(r"[^/]+/PKG-INFO", m.name)), None)
            if m is None:
                return None
            text = t.extractfile(m).read(MAX_METADATA).decode("utf-8", "replace")
        facts = metadata_fields(text)
        facts["from"] = "PKG-INFO"
        with open(path + ".part", "w") as fh:
            json.dump(facts, fh, sort_keys=True)
        os.replace(path + ".part", path)
        return facts

    def release_json(self, name, version):
        """PyPI's JSON API for one release (what a source-only release states)."""
        status, body, _ = get(f"https://pypi.org/pypi/{norm(name)}/{version}/json")
        return json.loads(body) if status == 200 else None


def metadata_fields(text):
    """Requires-Python, Requires-Dist and Provides-Extra of a METADATA text
    (RFC 822 headers up to the first blank line; continuation lines joined)."""
    head = text.split("\n\n", 1)[0]
    fields = {}
    key = None
    for line in head.splitlines():
        if line[:1] in (" ", "\t") and key:
            fields[key][-1] += " " + line.strip()
            continue
        k, _, v = line.partition(":")
        key = k.strip()
        fields.setdefault(key, []).append(v.strip())
    return {"requires_python": (fields.get("Requires-Python") or [None])[0],
            "requires_dist": fields.get("Requires-Dist", []),
            "provides_extra": fields.get("Provides-Extra", [])}


# ------------------------------------------------------------------ uv
def install_uv(cache):
    """The pinned uv of ci/real-uv.txt in a virtual environment of its own."""
    env = os.path.join(cache, "uv-venv")
    uv = os.path.join(env, "bin", "uv")
    pins = os.path.join(REPO, "ci", "real-uv.txt")
    if not os.path.exists(pins):
        fail(f"{pins} is missing")
    if not os.path.exists(uv):
        say(f"pypi_closure: installing uv from {os.path.relpath(pins, REPO)} into {env} (pip --require-hashes)")
        subprocess.run([sys.executable, "-m", "venv", env], check=True)
        subprocess.run([os.path.join(env, "bin", "python"), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", "--no-deps", "--only-binary", ":all:", "--require-hashes",
                        "-r", pins], check=True)
    out = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout.strip()
    if not out.startswith(f"uv {UV_VERSION} "):
        fail(f"{uv} says `{out}`, not uv {UV_VERSION}")
    with open(pins) as fh:
        hashes = re.findall(r"sha256:([0-9a-f]{64})", fh.read())
    return uv, out, hashes


def levels_of(uv):
    """The manylinux levels uv's --python-platform takes, from its own help."""
    text = subprocess.run([uv, "pip", "compile", "--help"], capture_output=True, text=True).stdout
    minors = sorted({int(m) for m in re.findall(r"x86_64-manylinux_2_(\d+)", text)})
    if not minors:
        fail("uv pip compile --help names no x86_64-manylinux_2_N platform")
    return [f"manylinux_2_{m}" for m in minors]


class Uv:
    def __init__(self, uv, cache, exclude_newer, refresh=False):
        self.uv, self.cache, self.exclude_newer, self.refresh = uv, cache, exclude_newer, refresh
        self.work = os.path.join(cache, "work")
        self.python = sys.executable

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
        env.update({"UV_CACHE_DIR": os.path.join(self.cache, "uv-cache"), "NO_COLOR": "1"})
        return env

    def compile(self, tag, requirement, arch, level, build=False, excludes=(), python=None, timeout=900):
        """One `uv pip compile`; {ok, packages: {name: {version, file, via}}, error, argv}."""
        d = os.path.join(self.work, tag)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "requirements.in"), "w") as fh:
            fh.write(requirement + "\n")
        argv = ["uv", "pip", "compile", "-v", "--no-config", "--no-python-downloads", "--color", "never",
                "--no-header", "--annotation-style", "split", "--index-url", SIMPLE,
                "--python-version", PYTHON, "--python-platform", f"{arch}-{level}"]
        if self.exclude_newer:
            argv += ["--exclude-newer", self.exclude_newer]
        if not build:
            argv.append("--no-build")
        if excludes:
            with open(os.path.join(d, "excludes.txt"), "w") as fh:
                fh.write("".join(x + "\n" for x in excludes))
            argv += ["--excludes", "excludes.txt"]
        if self.refresh:
            argv.append("--refresh")
        argv += ["requirements.in", "-o", "resolved.txt"]
        run = [self.uv] + argv[1:] + ["--python", python or self.python]
        if os.path.exists(os.path.join(d, "resolved.txt")):
            os.remove(os.path.join(d, "resolved.txt"))
        try:
            p = subprocess.run(run, cwd=d, env=self.env(), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": f"(killed after {timeout} s)", "argv": argv}
        with open(os.path.join(d, "uv.log"), "w") as fh:
            fh.write(p.stderr)
        if p.returncode != 0:
            return {"ok": False, "error": uv_error(p.stderr), "argv": argv}
        with open(os.path.join(d, "resolved.txt")) as fh:
            packages = parse_resolved(fh.read())
        selected = {}
        for m in re.finditer(r"Selecting: (\S+)==(\S+) \[[^\]]*\] \(([^)]+)\)", p.stderr):
            selected[(norm(m.group(1)), m.group(2))] = m.group(3)
        for name, pk in packages.items():
            pk["file"] = selected.get((name, pk["version"]))
            if not pk["file"]:
                fail(f"uv named no file for {name}=={pk['version']} ({tag}, see {d}/uv.log)")
        return {"ok": True, "packages": packages, "argv": argv}


def uv_error(stderr):
    """uv's error: from its `error:` line to the end, without its log lines."""
    lines = stderr.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("error:")), None)
    if start is None:
        return "\n".join(l for l in lines if not re.match(r"\s*(DEBUG|TRACE|WARN|INFO)\b", l)).strip()
    keep = [l.rstrip() for l in lines[start:] if not re.match(r"(DEBUG|TRACE|WARN|INFO)\b", l)]
    return "\n".join(keep).strip()


def first_cause(error):
    """The first sentence of uv's reason, for the log."""
    m = re.search(r"Because (.*?)(, we can conclude|$)", error, re.S)
    text = m.group(1) if m else error.splitlines()[0]
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= 200 else text[:200] + "…"


def parse_resolved(text):
    """`name==version` lines of uv's requirements.txt and their `# via` lines."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if m:
            cur = norm(m.group(1))
            out[cur] = {"version": m.group(2), "via": []}
            continue
        m = re.match(r"^\s+#\s+(?:via\s+)?(\S.*)$", line)
        if m and cur and m.group(1) != "via":
            out[cur]["via"].append(m.group(1).strip())
    for pk in out.values():
        pk["via"] = sorted("(requirement)" if v.startswith("-r ") else norm(v) for v in pk["via"])
    return out


# ------------------------------------------------------------- engines
def engine_versions():
    """The vLLM and SGLang versions the truth holds: matrix/wants.json."""
    path = os.path.join(REPO, "matrix", "wants.json")
    try:
        with open(path) as fh:
            wants = json.load(fh)["wants"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{path}: {e}")
    out = []
    for i, w in enumerate(wants):
        if not isinstance(w, dict) or "engine" not in w or "version" not in w:
            fail(f"{path}: wants[{i}] has no engine and version")
        if w["engine"] in ("vllm", "sglang"):
            out.append((w["engine"], w["version"]))
    return sorted(set(out), key=lambda e: (e[0], vkey(e[1])))


def lt(a, b):
    return vkey(a) < vkey(b)


def recipe(engine, version):
    """What the recipes hand uv for a version (crates/llmgw-core/src/recipe/vllm.rs,
    crates/llmgw-core/src/recipe/sglang.rs): the PyPI requirement and its variant, and the
    variants installed from elsewhere."""
    if engine == "vllm":
        # CUDA13_SINCE 0.20; NO_CU129_SINCE 0.33; the cu129 build is the
        # release's vllm-<v>+cu129 wheel with torch from download.pytorch.org/whl/cu129.
        pypi_variant = "cu12" if lt(version, "0.20") else "cu13"
        other = ["cu129"] if not lt(version, "0.20") and lt(version, "0.33") else []
        return f"vllm=={version}", pypi_variant, other
    # PLAIN_SINCE 0.5 (sglang[srt] before it); CUDA13_SINCE 0.5.11.
    req = f"sglang[srt]=={version}" if lt(version, "0.5") else f"sglang=={version}"
    return req, ("cu12" if lt(version, "0.5.11") else "cu13"), []


def reachable(host):
    """None when `host` answers on 443, else why not."""
    try:
        with socket.create_connection((host, 443), timeout=10):
            return None
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def python312():
    """A CPython 3.12 on this machine, for uv's builds when they are allowed."""
    cands = ["python3.12"] + sorted(
        os.path.join(root, d, "bin", "python3.12") for root in [os.path.expanduser("~/.pyenv/versions")]
        if os.path.isdir(root) for d in os.listdir(root) if d.startswith("3.12"))
    for c in cands:
        try:
            out = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out == "True":
            return c
    return None


# ----------------------------------------------------------- resolving
def no_wheels(error):
    """The packages uv says have no usable wheels, (name, version)."""
    return sorted({(norm(m.group(1)), m.group(2))
                   for m in re.finditer(r"Because ([A-Za-z0-9._-]+)==(\S+) has no usable wheels", error)})


def resolve_one(uv, pypi, engine, version, arch, levels, probe_python):
    requirement, variant, _ = recipe(engine, version)
    tag = f"{engine}-{version}-{arch}"
    results = {}
    for level in levels:
        r = uv.compile(f"{tag}-{level}", requirement, arch, level)
        results[level] = r
        status = f"{len(r['packages'])} packages" if r["ok"] else "no: " + first_cause(r["error"])
        say(f"  {engine} {version} {arch} {level}: {status}")
    top = levels[-1]
    res = {"engine": engine, "version": version, "variant": variant, "requirement": requirement, "arch": arch,
           "command": " ".join(results[top]["argv"]).replace(f"{arch}-{top}", f"{arch}-<level>")}
    ok_levels = [lv for lv in levels if results[lv]["ok"]]
    if not ok_levels:
        res["resolves"] = False
        res["uv_error"] = results[top]["error"]
        same = all(results[lv]["error"] == results[top]["error"] for lv in levels)
        res["uv_error_at_every_level"] = same
        if not same:
            res["uv_errors"] = {lv: results[lv]["error"] for lv in levels}
        # The rest of the closure, the source-only packages left out.
        source_only, rest = set(), None
        for _ in range(6):
            found = set(no_wheels(rest["error"] if rest else res["uv_error"])) - source_only
            if not found:
                break
            source_only |= found
            rest = uv.compile(f"{tag}-rest", requirement, arch, top, excludes=sorted({n for n, _v in source_only}))
            if rest["ok"]:
                break
        excluded = sorted({n for n, _v in source_only})
        res["source_only"] = [{"name": n, "version": v} for n, v in sorted(source_only)]
        if rest:
            res["without_source_only"] = {"excluded": excluded, "level": top, "resolves": rest["ok"]}
            if rest["ok"]:
                res["without_source_only"]["closure"] = closure_entries(rest["packages"])
            else:
                res["without_source_only"]["uv_error"] = rest["error"]
        if probe_python:
            b = uv.compile(f"{tag}-builds", requirement, arch, top, build=True, python=probe_python, timeout=900)
            wb = {"level": top, "resolves": b["ok"], "command": " ".join(b["argv"])}
            if b["ok"]:
                wb["packages"] = len(b["packages"])
                wb["built_from_source"] = [{"name": n, "version": p["version"], "file": p["file"]}
                                           for n, p in sorted(b["packages"].items()) if not p["file"].endswith(".whl")]
                wb["pins"] = pins_of(b["packages"])
                res["_builds_packages"] = b["packages"]
            else:
                wb["uv_error"] = b["error"]
            res["with_builds"] = wb
        else:
            res["with_builds"] = {"resolves": None, "why": "UNCONFIRMED: no CPython 3.12 on this machine for uv's builds"}
        res["_results"] = results
        return res
    # The floor: the lowest level from which every level resolves.
    floor_i = len(levels) - 1
    while floor_i > 0 and results[levels[floor_i - 1]]["ok"]:
        floor_i -= 1
    floor = levels[floor_i]
    res["resolves"] = True
    res["closure_level"] = top
    res["closure"] = closure_entries(results[top]["packages"])
    res["levels"] = {}
    for lv in levels:
        r = results[lv]
        if not r["ok"]:
            res["levels"][lv] = {"resolves": False, "uv_error": r["error"]}
            continue
        diff = {}
        for n, p in r["packages"].items():
            t = results[top]["packages"].get(n)
            if not t or t["version"] != p["version"] or t["file"] != p["file"]:
                diff[n] = {"version": p["version"], "file": p["file"]}
        gone = sorted(set(results[top]["packages"]) - set(r["packages"]))
        res["levels"][lv] = {"resolves": True, "differs": dict(sorted(diff.items()))}
        if gone:
            res["levels"][lv]["absent"] = gone
    non_monotonic = [lv for lv in ok_levels if levels.index(lv) < floor_i]
    res["floor"] = {"level": floor}
    res["_floor"] = (results[floor]["packages"], parse_level(levels[floor_i - 1]) if floor_i > 0 else None)
    if floor_i > 0:
        res["floor"]["below"] = {"level": levels[floor_i - 1], "uv_error": results[levels[floor_i - 1]]["error"]}
    if non_monotonic:
        res["floor"]["also_resolves_at"] = non_monotonic
    res["pins"] = pins_of(results[top]["packages"])
    res["_results"] = results
    return res


def parse_level(level):
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)", level)
    return int(m.group(1)), int(m.group(2))


def closure_entries(packages):
    return [{"name": n, "version": p["version"], "file": p["file"], "via": p["via"]} for n, p in sorted(packages.items())]


def pins_of(packages):
    return {n: p["version"] for n, p in sorted(packages.items()) if PINNED.match(n)}


def add_sizes_and_markers(res, pypi, catalog):
    """Sizes of every resolving level's closure, and each package's
    requirement lines that brought it in (its parents' Requires-Dist)."""
    results = res.pop("_results")
    bp = res.pop("_builds_packages", None)
    used = []  # (name, version, file) of every closure here
    for lv, r in results.items():
        if r["ok"]:
            used += [(n, p["version"], p["file"]) for n, p in r["packages"].items()]
    if "without_source_only" in res and res["without_source_only"].get("closure"):
        used += [(c["name"], c["version"], c["file"]) for c in res["without_source_only"]["closure"]]
    if bp:
        used += [(n, p["version"], p["file"]) for n, p in bp.items()]
    for n, v in [(s["name"], s["version"]) for s in res.get("source_only", [])]:
        catalog_version(pypi, catalog, n, v)
    for n, v, f in used:
        catalog_file(pypi, catalog, n, v, f)
    if res["resolves"]:
        # The glibc the floor's closure needs: per package, the lowest
        # manylinux tag of any of its version's wheels that take this arch and
        # CPython 3.12; the packages that set it, those no lower level takes.
        fl, below = res.pop("_floor")
        needs = {}
        for n, p in fl.items():
            files = catalog[n]["versions"][p["version"]]["files"]
            gs = [g for g in (wheel_need(fn, res["arch"]) for fn in files) if g is not None]
            needs[n] = min(gs)
        need = max(needs.values())
        set_by = sorted(n for n, g in needs.items() if (g > below if below else g == need))
        res["floor"]["glibc"] = gl(need)
        res["floor"]["set_by"] = [
            {"name": n, "version": fl[n]["version"], "needs_glibc": gl(needs[n]),
             "wheels": sorted(fn for fn in catalog[n]["versions"][fl[n]["version"]]["files"]
                              if wheel_need(fn, res["arch"]) is not None)} for n in set_by]
        sizes = {}
        for lv, r in results.items():
            if r["ok"]:
                sizes[lv] = size_of(catalog, r["packages"])
        res["size"] = sizes[res["closure_level"]]
        res["size_by_level"] = sizes
        top = results[res["closure_level"]]["packages"]
        asked = active_extras(catalog, res, top)
        for c in res["closure"]:
            c["required_as"] = required_as(catalog, res, c, top, asked)
            if asked.get(c["name"]):
                c["extras"] = sorted(asked[c["name"]])
    elif res.get("without_source_only", {}).get("closure"):
        rest = res["without_source_only"]
        pk = {c["name"]: c for c in rest["closure"]}
        rest["size"] = size_of(catalog, pk)
        asked = active_extras(catalog, res, pk)
        for c in rest["closure"]:
            c["required_as"] = required_as(catalog, res, c, pk, asked)
            if asked.get(c["name"]):
                c["extras"] = sorted(asked[c["name"]])


def size_of(catalog, packages):
    dl = un = 0
    for n, p in packages.items():
        f = catalog[n]["versions"][p["version"]]["files"][p["file"]]
        dl += f["size"]
        un += f["unpacked_size"]
    return {"download": dl, "unpacked": un, "wheels": len(packages)}


def active_extras(catalog, res, packages):
    """The extras asked of each package of a closure: the root's, and those of
    every requirement line of a package in it whose marker holds."""
    env = marker_env(res["arch"])
    root, rx, _ = split_requirement(res["requirement"])
    asked = {n: set() for n in packages}
    asked.setdefault(root, set()).update(rx)
    changed = True
    while changed:
        changed = False
        for n, p in packages.items():
            for line in requires_of(catalog, n, p):
                dep, extras, marker = split_requirement(line)
                if dep in asked and extras and (marker is None or marker_eval(marker, env, asked[n])):
                    if not set(extras) <= asked[dep]:
                        asked[dep] |= set(extras)
                        changed = True
    return asked


def requires_of(catalog, name, p):
    v = catalog[name]["versions"][p["version"]]
    f = v["files"].get(p["file"]) or {}
    return f.get("requires_dist", v.get("requires_dist", []))


def required_as(catalog, res, c, packages, asked):
    """The requirement lines that brought `c` in: the root requirement, or each
    parent's Requires-Dist naming it whose marker holds here (with the extras
    asked of that parent)."""
    env = marker_env(res["arch"])
    out = []
    for parent in c["via"]:
        if parent == "(requirement)":
            out.append(f"(requirement): {res['requirement']}")
            continue
        p = packages.get(parent)
        if not p:
            continue
        for line in requires_of(catalog, parent, p):
            dep, _extras, marker = split_requirement(line)
            if dep == c["name"] and (marker is None or marker_eval(marker, env, asked.get(parent, set()))):
                ex = sorted(asked.get(parent, set()))
                out.append(f"{parent}{'[' + ','.join(ex) + ']' if ex and marker and 'extra' in marker else ''}: {line}")
    return sorted(set(out))


# The environment a node's resolution is for (PEP 508 marker variables), as
# uv takes `--python-version 3.12 --python-platform <arch>-manylinux_2_N`.
def marker_env(arch):
    return {"python_version": PYTHON, "python_full_version": PYTHON + ".0", "platform_machine": arch,
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "implementation_version": PYTHON + ".0", "platform_release": "", "platform_version": ""}


VERSION_VARS = {"python_version", "python_full_version", "implementation_version"}
MARKER_TOKEN = re.compile(r"\s*(\(|\)|'[^']*'|\"[^\"]*\"|===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b|and\b|or\b|"
                          r"[A-Za-z_][A-Za-z0-9_.]*)")


def marker_tokens(marker):
    out, pos = [], 0
    marker = marker.strip()
    while pos < len(marker):
        m = MARKER_TOKEN.match(marker, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read the marker `{marker}` at offset {pos}")
        out.append(re.sub(r"\s+", " ", m.group(1)))
        pos = m.end()
        while pos < len(marker) and marker[pos].isspace():
            pos += 1
    return out


def version_cmp(a, op, b):
    if op == "~=":
        parts = b.split(".")
        prefix = ".".join(parts[:-1])
        return vkey(a) >= vkey(b) and (a == prefix or a.startswith(prefix + "."))
    if op in ("==", "!=") and b.endswith(".*"):
        eq = a == b[:-2] or a.startswith(b[:-1])
        return eq if op == "==" else not eq
    ka, kb = vkey(a), vkey(b)
    # 3.12 == 3.12.0
    while len(ka) < len(kb):
        ka.append((0, 0, 2, "", 0))
    while len(kb) < len(ka):
        kb.append((0, 0, 2, "", 0))
    return {"==": ka == kb, "===": a == b, "!=": ka != kb, "<": ka < kb, "<=": ka <= kb, ">": ka > kb,
            ">=": ka >= kb}[op]


def marker_eval(marker, env, extras):
    """PEP 508 marker `marker` in `env`, `extra` true for any of `extras`.
    Raises ValueError for a marker it cannot read."""
    toks = marker_tokens(marker)
    pos = 0

    def value(t):
        if t[0] in "'\"":
            return ("lit", t[1:-1])
        if t == "extra" or t in env:
            return ("var", t)
        raise ValueError(f"unknown marker variable `{t}` in `{marker}`")

    def atom():
        nonlocal pos
        if toks[pos] == "(":
            pos += 1
            v = expr()
            if toks[pos] != ")":
                raise ValueError(f"unbalanced `(` in `{marker}`")
            pos += 1
            return v
        lhs, op, rhs = value(toks[pos]), toks[pos + 1], value(toks[pos + 2])
        pos += 3
        var = lhs[1] if lhs[0] == "var" else rhs[1] if rhs[0] == "var" else None
        if var == "extra":
            lit = norm(rhs[1] if lhs[0] == "var" else lhs[1])
            if op == "==":
                return lit in {norm(e) for e in extras}
            if op == "!=":
                return lit not in {norm(e) for e in extras}
            raise ValueError(f"`extra {op}` in `{marker}`")
        a = env[lhs[1]] if lhs[0] == "var" else lhs[1]
        b = env[rhs[1]] if rhs[0] == "var" else rhs[1]
        if op == "in":
            return a in b
        if op == "not in":
            return a not in b
        if var in VERSION_VARS and re.fullmatch(r"[0-9.*]+", a) and re.fullmatch(r"[0-9.*]+", b):
            return version_cmp(a, op, b)
        if op in ("==", "===", "!="):
            return (a == b) == (op != "!=")
        raise ValueError(f"`{op}` on `{var}` (not a version) in `{marker}`")

    def conj():
        nonlocal pos
        v = atom()
        while pos < len(toks) and toks[pos] == "and":
            pos += 1
            v = atom() and v
        return v

    def expr():
        nonlocal pos
        v = conj()
        while pos < len(toks) and toks[pos] == "or":
            pos += 1
            v = conj() or v
        return v

    v = expr()
    if pos != len(toks):
        raise ValueError(f"cannot read the marker `{marker}` past `{' '.join(toks[:pos])}`")
    return v


def split_requirement(line):
    """(name, extras, marker) of a Requires-Dist line."""
    body, _, marker = line.partition(";")
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", body)
    if not m:
        raise ValueError(f"cannot read the requirement `{line}`")
    extras = [norm(e) for e in (m.group(2) or "").split(",") if e.strip()]
    return norm(m.group(1)), extras, marker.strip() or None


def catalog_version(pypi, catalog, name, version):
    proj = catalog.setdefault(name, {"versions": {}})
    if version in proj["versions"]:
        return proj["versions"][version]
    files = pypi.files(name, version)
    entry = {"files": {f["filename"]: f for f in files}}
    if not any(f["filename"].endswith(".whl") for f in files):
        # Published as source only (for these platforms): what its sdist's
        # PKG-INFO states (uv reads the same), else PyPI's JSON API.
        entry["source_only"] = True
        sd = next((pypi.sdist_metadata(f) for f in files if f["filename"].endswith(".tar.gz")), None)
        if sd:
            entry["requires_dist"], entry["requires_python"] = sd["requires_dist"], sd["requires_python"]
            entry["metadata_from"] = "PKG-INFO of " + next(f["filename"] for f in files
                                                           if f["filename"].endswith(".tar.gz"))
        else:
            info = ((pypi.release_json(name, version) or {}).get("info")) or {}
            entry["requires_dist"] = info.get("requires_dist") or []
            entry["requires_python"] = info.get("requires_python") or None
            entry["metadata_from"] = f"https://pypi.org/pypi/{name}/{version}/json"
    proj["versions"][version] = entry
    return entry


def catalog_file(pypi, catalog, name, version, filename):
    entry = catalog_version(pypi, catalog, name, version)
    f = entry["files"].get(filename)
    if f is None:
        fail(f"uv selected {filename}, which PyPI's simple page of {name} does not list for {version}")
    if filename.endswith(".whl") and "unpacked_size" not in f:
        facts = pypi.wheel_facts(f)
        f.update({"unpacked_size": facts["unpacked_size"], "members": facts["files"],
                  "requires_dist": facts["requires_dist"], "provides_extra": facts["provides_extra"],
                  "selected": True})
        if facts["requires_python"] != f.get("requires_python"):
            f["metadata_requires_python"] = facts["requires_python"]


def finish_catalog(catalog):
    out = {}
    for name in sorted(catalog):
        vs = {}
        for v in sorted(catalog[name]["versions"], key=vkey):
            e = catalog[name]["versions"][v]
            files = []
            for fn in sorted(e["files"]):
                f = {k: x for k, x in e["files"][fn].items() if not k.startswith("_")}
                p = parse_filename(fn)
                if p and p["kind"] == "wheel":
                    f["tags"] = {"python": p["python"], "abi": p["abi"], "platform": p["platform"]}
                    if p["build"]:
                        f["build"] = p["build"]
                files.append(f)
            d = {"files": files}
            if e.get("source_only"):
                d.update({"source_only": True, "requires_dist": e["requires_dist"],
                          "requires_python": e["requires_python"], "metadata_from": e["metadata_from"]})
            vs[v] = d
        out[name] = {"versions": vs}
    return out


# --------------------------------------------------------------- main
def run_truth(a):
    cache = a.cache
    os.makedirs(cache, exist_ok=True)
    t0 = time.time()
    uv_bin, uv_says, uv_hashes = install_uv(cache)
    levels = levels_of(uv_bin)
    say(f"pypi_closure: {uv_says}; index {SIMPLE}; Python {PYTHON}; --exclude-newer {a.exclude_newer}")
    say(f"pypi_closure: levels (uv's --python-platform): {', '.join(levels)}")
    uv = Uv(uv_bin, cache, a.exclude_newer)
    pypi = PyPI(cache)
    probe = python312()
    probe_says = subprocess.run([probe, "--version"], capture_output=True, text=True).stdout.strip() if probe else None
    say(f"pypi_closure: CPython 3.12 for the builds-allowed probe: {probe_says or 'none on this machine'}")
    unreachable = {h: reachable(h) for h in ("download.pytorch.org", "github.com")}
    for h, why in unreachable.items():
        say(f"pypi_closure: {h}: {'reachable' if not why else 'not reachable (' + why + ')'}")
    resolutions, unconfirmed, catalog = [], [], {}
    for engine, version in engine_versions():
        if a.only and not re.search(a.only, f"{engine} {version}"):
            continue
        requirement, variant, others = recipe(engine, version)
        say(f"{engine} {version}: {requirement} ({variant}, PyPI)")
        for arch in ARCHES:
            res = resolve_one(uv, pypi, engine, version, arch, levels, probe)
            add_sizes_and_markers(res, pypi, catalog)
            resolutions.append(res)
            report(res)
        for other in others:
            hosts = ["github.com", "download.pytorch.org"]
            why = "; ".join(f"{h} {unreachable[h]}" for h in hosts if unreachable[h])
            item = {"engine": engine, "version": version, "variant": other,
                    "source": f"the release asset vllm-{version}+cu129-cp38-abi3-manylinux_<glibc>_<arch>.whl of "
                              f"github.com/vllm-project/vllm tag v{version}, with torch, torchvision and torchaudio "
                              "from https://download.pytorch.org/whl/cu129 (crates/llmgw-core/src/recipe/vllm.rs)"}
            if why:
                item["status"] = f"UNCONFIRMED: not reachable from where the truth is written ({why})"
            else:
                item["status"] = "UNCONFIRMED: reachable, but this script does not resolve it yet"
            unconfirmed.append(item)
            say(f"{engine} {version} {other}: {item['status']}")
    doc = {
        "written_by": "ci/truth/pypi_closure.py",
        "uv": {"version": uv_says, "pins": "ci/real-uv.txt", "wheel_sha256": uv_hashes},
        "index": SIMPLE,
        "exclude_newer": a.exclude_newer,
        "python": PYTHON,
        "levels": levels,
        "file_filter": "every file of a version in a closure that can matter on Linux x86_64 or aarch64 with "
                       "CPython 3.12: its sdists, and the wheels with a manylinux/musllinux/linux x86_64 or aarch64 "
                       "tag or `any`, whose Python and ABI tags take CPython 3.12 (cp312-cp312, cp3N-abi3 with "
                       "N <= 12, py3-none); the selected wheels carry their METADATA's Requires-Dist, "
                       "Requires-Python and Provides-Extra, and their unpacked size (the sum of the sizes in the "
                       "zip's central directory)",
        "resolutions": sorted(resolutions, key=lambda r: (r["engine"], vkey(r["version"]), r["arch"])),
        "unconfirmed": unconfirmed,
        "packages": finish_catalog(catalog),
    }
    tmp = a.out + ".part"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True, ensure_ascii=False)
        fh.write("\n")
    os.replace(tmp, a.out)
    n_files = sum(len(v["files"]) for p in doc["packages"].values() for v in p["versions"].values())
    say(f"pypi_closure: wrote {os.path.relpath(a.out, REPO) if a.out.startswith(REPO) else a.out}: "
        f"{len(resolutions)} resolutions, {len(doc['packages'])} projects, {n_files} files; "
        f"{time.time() - t0:.0f} s")


def mb(n):
    return f"{n / 1e6:,.0f} MB"


def report(res):
    head = f"= {res['engine']} {res['version']} {res['arch']} ({res['requirement']}, {res['variant']})"
    if res["resolves"]:
        f = res["floor"]
        by = ", ".join(f"{s['name']} {s['version']} (wheels for glibc {s['needs_glibc']} and newer: "
                       f"{', '.join(s['wheels'])})" for s in f["set_by"][:6])
        more = f" and {len(f['set_by']) - 6} more" if len(f["set_by"]) > 6 else ""
        say(f"{head}: resolves, {len(res['closure'])} packages; floor {f['level']} (glibc {f['glibc']}), set by {by}{more}")
        if "below" in f:
            say(f"    at {f['below']['level']} uv says: " + f["below"]["uv_error"].replace("\n", "\n      "))
        s = res["size"]
        say(f"    size at {res['closure_level']}: {s['wheels']} wheels, download {mb(s['download'])}, "
            f"unpacked {mb(s['unpacked'])}")
        say("    pins: " + ", ".join(f"{k}=={v}" for k, v in res["pins"].items()))
    else:
        say(f"{head}: DOES NOT RESOLVE with builds forbidden; uv says"
            f"{' (at every level)' if res['uv_error_at_every_level'] else ''}:")
        say("      " + res["uv_error"].replace("\n", "\n      "))
        rest = res.get("without_source_only")
        if rest:
            if rest["resolves"]:
                say(f"    without {', '.join(rest['excluded'])}: {len(rest['closure'])} packages, download "
                    f"{mb(rest['size']['download'])}, unpacked {mb(rest['size']['unpacked'])}")
            else:
                say(f"    without {', '.join(rest['excluded'])}: uv says " + rest["uv_error"].splitlines()[0])
        wb = res["with_builds"]
        if wb.get("resolves"):
            built = ", ".join(f"{b['name']} {b['version']} ({b['file']})" for b in wb["built_from_source"])
            say(f"    with builds allowed: resolves, {wb['packages']} packages, built from source: {built}; pins: "
                + ", ".join(f"{k}=={v}" for k, v in wb["pins"].items()))
        elif wb.get("resolves") is False:
            say("    with builds allowed uv says: " + wb["uv_error"].replace("\n", "\n      "))
        else:
            say(f"    with builds allowed: {wb['why']}")


def load_truth(path):
    """The committed truth, its shape checked: exit 2 naming the file and the
    entry when it is not what this script writes."""
    try:
        with open(path) as fh:
            truth = json.load(fh)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    if not isinstance(truth, dict):
        fail(f"{path}: not a JSON object")
    for key, kind in (("resolutions", list), ("packages", dict), ("levels", list), ("exclude_newer", str)):
        if not isinstance(truth.get(key), kind):
            fail(f"{path}: `{key}` is missing or not a {kind.__name__}")
    need = {"engine", "version", "arch", "requirement", "resolves"}
    for i, r in enumerate(truth["resolutions"]):
        if not isinstance(r, dict) or not need <= r.keys():
            fail(f"{path}: resolutions[{i}] lacks one of {', '.join(sorted(need))}")
        if r["resolves"] and not all(k in r for k in ("floor", "closure", "pins", "size")):
            fail(f"{path}: resolutions[{i}] resolves but lacks floor, closure, pins or size")
        if not r["resolves"] and "uv_error" not in r:
            fail(f"{path}: resolutions[{i}] does not resolve but has no uv_error")
        seen = set()
        for c in r.get("closure", []):
            if c.get("name") in seen:
                fail(f"{path}: resolutions[{i}] names {c.get('name')} twice")
            seen.add(c.get("name"))
    for name, proj in truth["packages"].items():
        for v, ver in (proj.get("versions") or {}).items() if isinstance(proj, dict) else []:
            for j, f in enumerate(ver.get("files", [])):
                if not parse_filename(f.get("filename", "")):
                    fail(f"{path}: packages.{name}.versions.{v}.files[{j}]: `{f.get('filename')}` is no wheel "
                         "or sdist name")
    return truth


# ------------------------------------------------------------ compare
def run_compare(a):
    truth = load_truth(a.truth)
    cache = a.cache
    uv_bin, uv_says, _ = install_uv(cache)
    levels = truth["levels"]
    say(f"pypi_closure --compare: {os.path.relpath(a.truth, REPO) if a.truth.startswith(REPO) else a.truth} "
        f"(PyPI up to {truth['exclude_newer']}) against PyPI now, {uv_says}")
    pypi = PyPI(cache)
    moved = 0
    # 1. New versions of each engine.
    for engine in sorted({r["engine"] for r in truth["resolutions"]}):
        held = sorted({r["version"] for r in truth["resolutions"] if r["engine"] == engine}, key=vkey)
        page = pypi.page(engine) or {}
        times = {}
        for f in page.get("files", []):
            p = parse_filename(f["filename"])
            if p and p["name"] == engine:
                t = f.get("upload-time") or ""
                times[p["version"]] = min(times.get(p["version"], t), t) if times.get(p["version"]) else t
        newer = [v for v in sorted(page.get("versions", []), key=vkey) if vkey(v) > vkey(held[-1])]
        cut = [v for v in newer if times.get(v, "") >= truth["exclude_newer"][:19]]
        say(f"{engine}: the truth holds {', '.join(held)}; PyPI's newest is {max(page.get('versions', ['?']), key=vkey)}")
        if newer:
            moved += 1
            say(f"  newer than {held[-1]} on PyPI: " + ", ".join(
                f"{v}{' (pre-release)' if is_prerelease(v) else ''} {times.get(v, '')[:10]}" for v in newer))
            if cut:
                say(f"  of them uploaded after the truth's cut-off: {', '.join(cut)}")
    # 2. Every file of the truth: still listed, not yanked, same sha256.
    gone = yanked = changed = 0
    for name, proj in sorted(truth["packages"].items()):
        for version, v in proj["versions"].items():
            now = {f["filename"]: f for f in pypi.files(name, version)}
            for f in v["files"]:
                cur = now.get(f["filename"])
                if cur is None:
                    gone += 1
                    say(f"  GONE: {name} {version}: {f['filename']} is no longer on PyPI's page of {name}")
                elif cur["sha256"] != f["sha256"]:
                    changed += 1
                    say(f"  CHANGED: {f['filename']}: sha256 {f['sha256']} then, {cur['sha256']} now")
                elif cur["yanked"] and not f.get("yanked"):
                    yanked += 1
                    say(f"  YANKED: {name} {version}: {f['filename']} ({cur['yanked']})")
            new = sorted(set(now) - {f["filename"] for f in v["files"]})
            for fn in new:
                changed += 1
                say(f"  NEW FILE: {name} {version}: {fn} ({now[fn]['upload_time']})")
    say(f"files of the truth: {sum(len(v['files']) for p in truth['packages'].values() for v in p['versions'].values())}"
        f" read again: {gone} gone, {yanked} yanked, {changed} changed or added")
    moved += gone + yanked + changed
    # 3. Each resolution again, PyPI now (no cut-off), every level.
    uv = Uv(uv_bin, os.path.join(cache, "compare"), None, refresh=True)
    for r in truth["resolutions"]:
        if a.only and not re.search(a.only, f"{r['engine']} {r['version']}"):
            continue
        tag = f"{r['engine']}-{r['version']}-{r['arch']}"
        now = {lv: uv.compile(f"{tag}-{lv}", r["requirement"], r["arch"], lv) for lv in levels}
        ok = [lv for lv in levels if now[lv]["ok"]]
        was = r["floor"]["level"] if r["resolves"] else None
        if not ok:
            line = f"{tag}: does not resolve now"
            if r["resolves"]:
                moved += 1
                say(f"{line} (it did, floor {was}); uv says: " + now[levels[-1]]["error"].splitlines()[0])
            elif now[levels[-1]]["error"] != r["uv_error"]:
                moved += 1
                say(f"{line}, in other words: " + now[levels[-1]]["error"].replace("\n", "\n    "))
            else:
                say(f"{line}, as then (uv's words unchanged)")
            continue
        i = len(levels) - 1
        while i > 0 and now[levels[i - 1]]["ok"]:
            i -= 1
        floor = levels[i]
        top = now[levels[-1]]["packages"]
        pins = pins_of(top)
        diffs = []
        if not r["resolves"]:
            diffs.append(f"resolves now (it did not), floor {floor}")
        else:
            if floor != was:
                diffs.append(f"floor {was} then, {floor} now")
            then = {c["name"]: c["version"] for c in r["closure"]}
            for k in sorted(set(pins) | set(r["pins"])):
                if pins.get(k) != r["pins"].get(k):
                    diffs.append(f"{k} {r['pins'].get(k, '-')} then, {pins.get(k, '-')} now")
            others = sorted(n for n in set(then) | set(top)
                            if not PINNED.match(n) and then.get(n) != (top.get(n) or {}).get("version"))
            if others:
                diffs.append(f"{len(others)} other packages moved ({', '.join(others[:8])}"
                             f"{', …' if len(others) > 8 else ''})")
        if diffs:
            moved += 1
            say(f"{tag}: " + "; ".join(diffs))
        else:
            say(f"{tag}: unchanged (floor {floor}, {len(top)} packages)")
    say(f"pypi_closure --compare: {moved} thing(s) moved" if moved else "pypi_closure --compare: nothing moved")


# --------------------------------------------------------------- list
def marker_vars(marker):
    return sorted(set(re.findall(r"\b(python_full_version|python_version|platform_machine|sys_platform|"
                                 r"platform_system|os_name|implementation_name|platform_python_implementation|"
                                 r"implementation_version|platform_release|platform_version|extra)\b", marker)))


def run_list(a):
    """Markdown for ci/truth/CLOSURE.md: the closures at a glance, the marker
    variables their Requires-Dist use, and every package with the lines that
    brought it in and the markers of its own requirements."""
    truth = load_truth(a.truth)
    rs = truth["resolutions"]
    say("| engine | arch | requirement | resolves (builds forbidden) | floor | set by | wheels | download | unpacked | pins |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rs:
        if r["resolves"]:
            f = r["floor"]
            by = "; ".join(f"{x['name']} {x['version']} (lowest wheel: glibc {x['needs_glibc']})" for x in f["set_by"])
            pins = ", ".join(f"{k} {v}" for k, v in r["pins"].items() if k not in (r["engine"],))
            say(f"| {r['engine']} {r['version']} | {r['arch']} | `{r['requirement']}` | yes | {f['level']} "
                f"(glibc {f['glibc']}) | {by} | {r['size']['wheels']} | {mb(r['size']['download'])} | "
                f"{mb(r['size']['unpacked'])} | {pins} |")
        else:
            why = first_cause(r["uv_error"])
            rest = r.get("without_source_only") or {}
            size = (f"{rest['size']['wheels']} without {', '.join(rest['excluded'])} | {mb(rest['size']['download'])} | "
                    f"{mb(rest['size']['unpacked'])}") if rest.get("resolves") else "- | - | -"
            say(f"| {r['engine']} {r['version']} | {r['arch']} | `{r['requirement']}` | no: {why} | - | - | {size} | - |")
    # Which marker variables the closures' Requires-Dist lines use.
    used, lines_by_var = {}, {}
    seen_files = set()
    for name, proj in truth["packages"].items():
        for v, ver in proj["versions"].items():
            reqs = []
            for f in ver["files"]:
                if f.get("selected") and f["filename"] not in seen_files:
                    seen_files.add(f["filename"])
                    reqs = f.get("requires_dist", [])
                    break
            if ver.get("source_only"):
                reqs = ver.get("requires_dist", [])
            for line in reqs:
                _, _, marker = line.partition(";")
                for var in marker_vars(marker):
                    used[var] = used.get(var, 0) + 1
                    lines_by_var.setdefault(var, set()).add(marker.strip())
    say()
    say("Marker variables in the Requires-Dist of every wheel selected (and of the source-only releases), "
        "with the number of requirement lines that use each:")
    say()
    for var in sorted(used, key=lambda k: (-used[k], k)):
        ex = sorted(lines_by_var[var], key=lambda m: (len(m), m))[0]
        say(f"- `{var}`: {used[var]} lines (e.g. `{ex}`)")
    # Every package.
    say()
    say("| package | versions (closures) | brought in as (the requirement lines that hold here) | markers of its own Requires-Dist |")
    say("| --- | --- | --- | --- |")
    where, how = {}, {}
    for r in rs:
        tag = f"{r['engine']} {r['version']} {r['arch']}"
        entries = r.get("closure") or (r.get("without_source_only") or {}).get("closure") or []
        for c in entries:
            where.setdefault(c["name"], {}).setdefault(c["version"], []).append(tag)
            how.setdefault(c["name"], set()).update(c.get("required_as", []))
        for so in r.get("source_only", []):
            where.setdefault(so["name"], {}).setdefault(so["version"] + " (source only)", []).append(tag)
    for name in sorted(where):
        vs = "; ".join(f"{v} ({', '.join(sorted(set(t)))})" for v, t in sorted(where[name].items(), key=lambda x: vkey(x[0])))
        own = set()
        for v in truth["packages"].get(name, {}).get("versions", {}).values():
            for f in v["files"]:
                if f.get("selected"):
                    own.update(l.partition(";")[2].strip() for l in f.get("requires_dist", []) if ";" in l)
            if v.get("source_only"):
                own.update(l.partition(";")[2].strip() for l in v.get("requires_dist", []) if ";" in l)
        non_extra = sorted(m for m in own if set(marker_vars(m)) - {"extra"})
        only_extra = len(own) - len(non_extra)
        own_text = "; ".join(f"`{m}`" for m in non_extra[:6]) + (f" … ({len(non_extra)})" if len(non_extra) > 6 else "")
        if only_extra:
            own_text += (" · " if own_text else "") + f"{only_extra} extra-only markers"
        brought = "<br>".join(sorted(x.replace("|", "\\|") for x in how.get(name, [])))
        say(f"| {name} | {vs} | {brought or '(source only: not resolved)'} | {own_text.replace('|', chr(92) + '|') or '-'} |")


def main():
    cache_default = os.path.join(os.environ.get("LLMGW_CACHE") or os.path.expanduser("~/.cache/llmgw"), "closure")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=cache_default, help="uv, its cache and the wheels' facts (default %(default)s)")
    ap.add_argument("--out", default=os.path.join(REPO, "ci", "truth", "pypi_closure.json"))
    ap.add_argument("--truth", default=os.path.join(REPO, "ci", "truth", "pypi_closure.json"))
    ap.add_argument("--only", help="only the engine versions whose `engine version` matches this regex")
    ap.add_argument("--exclude-newer", default=EXCLUDE_NEWER, help="PyPI as it stood then (RFC 3339)")
    ap.add_argument("--compare", action="store_true", help="compare the committed truth with PyPI now")
    ap.add_argument("--list", action="store_true", help="print the closures as markdown (for ci/truth/CLOSURE.md)")
    a = ap.parse_args()
    a.cache = os.path.abspath(a.cache)
    a.out = os.path.abspath(a.out)
    a.truth = os.path.abspath(a.truth)
    if a.only:
        try:
            re.compile(a.only)
        except re.error as e:
            fail(f"--only: {e}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", a.exclude_newer):
        fail(f"--exclude-newer: `{a.exclude_newer}` is not a time like 2026-12-01T00:00:00Z")
    if a.list:
        run_list(a)
    elif a.compare:
        run_compare(a)
    else:
        run_truth(a)


if __name__ == "__main__":
    main()
