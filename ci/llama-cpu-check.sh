#!/usr/bin/env bash
# Proves that assets/tiny-llama.gguf loads and generates in a real llama.cpp,
# on the CPU: no GPU is needed. It
#   1. downloads the llama-cpp-python source distribution (pinned, sha256
#      checked), whose vendor/llama.cpp is llama.cpp's own source tree;
#   2. unpacks that tree into the cache and builds llama-completion and
#      llama-bench with cmake (Release, GGML_NATIVE=OFF, no curl/openssl, no
#      tests or examples);
#   3. prints `llama-completion --version` and `--list-devices`;
#   4. generates 8 tokens from the tiny model with llama-completion,
#      deterministically, under a time limit, and fails unless 8 tokens were
#      generated;
#   5. runs llama-bench -v on it (pp8 and tg8, JSON lines) and fails unless
#      both tests report a rate, then runs it with exactly the arguments of
#      llmgw's compute check on a CPU build (-dev none) and fails unless it
#      generated;
#   6. runs a corrupted, a truncated and a data-corrupted copy of the model
#      through both programs and prints what llama.cpp says about each: the
#      first two must fail to load (llama-bench must say "failed to load
#      model"); the third loads and runs (GGUF has no checksum: only a sha256
#      catches it).
#
# Usage: ci/llama-cpu-check.sh [MODEL]    (default: assets/tiny-llama.gguf)
# Cache: ${LLMGW_CACHE:-$HOME/.cache/llmgw}/llama-cpu (sdist, source, build,
#        logs of each run); a second run reuses the build.
# Needs: python3 with venv, a C/C++ compiler, make and cmake >= 3.14; as root
#        with apt-get it installs what is missing (cmake g++ make
#        python3-venv); without, a missing cmake comes from PyPI's wheel.
#
# llama-completion and llama-bench are in the official Linux release archives
# (release.yml builds every tool with LLAMA_BUILD_TOOLS=ON and packs build/bin
# whole); llama-cli of these builds is chat-only and refuses -no-cnv.
#
# Why -t 1 for llama-completion: its text and its perf lines go through
# common/log.cpp's logger, whose worker thread prints them; since
# ggml-org/llama.cpp#22273 the logger is never destroyed, so what the worker
# has not printed when main() returns is lost, exit status 0. On this 2-core
# machine with -t 2, 7 runs in 10 printed the prompt and nothing after it;
# with -t 1 (a core left for the worker) 10 in 10 printed everything; a bad
# model's error lines went missing in 3 runs of 6 even with -t 1. A run that
# exits 0 without its perf lines, or fails without an error line, is tried
# again (3 tries). llama-bench -v prints its results with fprintf and its log
# with llama.cpp's own callback, line by line: no such race.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
# sha256 of llama_cpp_python-0.3.36.tar.gz as PyPI serves it.
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
# The llama.cpp commit it vendors (its CHANGELOG: "update llama.cpp to
# ggml-org/llama.cpp@0c1e57098") is release tag b11312. The sdist carries a
# one-commit .git, so cmake would count build 1: say the real number.
LLAMA_BUILD_NUMBER=11312
LLAMA_BUILD_COMMIT=0c1e570
SCIKIT_BUILD_CORE_VERSION=1.1.2    # pip download prepares the sdist's metadata with it
CMAKE_PIP_VERSION=3.31.10          # only where cmake is missing and apt-get cannot install it
TIME_LIMIT=${LLAMA_CHECK_TIMEOUT:-120}
PROMPT="hello world"

cd "$(dirname "$0")/.."
model=${1:-assets/tiny-llama.gguf}
[ -f "$model" ] || { echo "no model at $model (make it: python3 ci/tiny-model/make_tiny_gguf.py)" >&2; exit 2; }
model=$(realpath "$model")

cache=${LLMGW_CACHE:-$HOME/.cache/llmgw}/llama-cpu
mkdir -p "$cache"
cache=$(realpath "$cache")
echo "== cache: $cache"
echo "   (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist, its vendored llama.cpp b$LLAMA_BUILD_NUMBER, the build, the logs)"

echo "== tools"
if ! command -v cmake >/dev/null && ! { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }; then
    # No cmake and no apt-get as root: cmake's wheel from PyPI, in the cache's venv.
    [ -x "$cache/venv/bin/pip" ] || python3 -m venv "$cache/venv"
    "$cache/venv/bin/pip" install -q "cmake==$CMAKE_PIP_VERSION"
    export PATH="$cache/venv/bin:$PATH"
fi
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v c++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
python3 -m venv --help >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing ${need[*]} with apt-get"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "missing: ${need[*]}; install them and run again" >&2
        exit 2
    fi
fi
echo "cmake: $(cmake --version | head -1); c++: $(c++ --version | head -1)"

echo "== source: llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
sdist=$cache/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
if [ ! -f "$sdist" ] || ! echo "$SDIST_SHA256  $sdist" | sha256sum -c --status; then
    rm -f "$sdist"
    # pip prepares a downloaded sdist's metadata; without build isolation it
    # does so with the scikit-build-core of this venv and the cmake on PATH,
    # instead of building cmake from source as --no-binary :all: would.
    [ -x "$cache/venv/bin/pip" ] || python3 -m venv "$cache/venv"
    "$cache/venv/bin/pip" install -q "scikit-build-core==$SCIKIT_BUILD_CORE_VERSION"
    "$cache/venv/bin/pip" download -q --no-deps --no-binary :all: --no-build-isolation \
        -d "$cache/dl" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    echo "$SDIST_SHA256  $sdist" | sha256sum -c --status || {
        echo "sha256 of $sdist is $(sha256sum "$sdist" | cut -d' ' -f1), want $SDIST_SHA256" >&2; exit 1; }
fi
echo "sdist: $sdist (sha256 $SDIST_SHA256)"
src=$cache/src-$LLAMA_CPP_PYTHON_VERSION
if [ ! -f "$src/.unpacked" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    tar -xzf "$sdist" -C "$src" --strip-components=3 "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    touch "$src/.unpacked"
fi
echo "llama.cpp source: $src"

echo "== build: llama-completion llama-bench"
build=$cache/build-$LLAMA_CPP_PYTHON_VERSION
start=$(date +%s)
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_NUMBER=$LLAMA_BUILD_NUMBER -DLLAMA_BUILD_COMMIT=$LLAMA_BUILD_COMMIT \
    > "$cache/configure.log" 2>&1 || { tail -30 "$cache/configure.log"; exit 1; }
grep -E "llama.cpp version|ggml version|ggml commit|CPU backend variant" "$cache/configure.log" || true
cmake --build "$build" -j2 --target llama-completion llama-bench > "$cache/build.log" 2>&1 || { tail -30 "$cache/build.log"; exit 1; }
bin=$build/bin/llama-completion
bench=$build/bin/llama-bench
echo "built $bin and $bench in $(( $(date +%s) - start )) s"

echo "== $bin --version"
"$bin" --version 2>&1
echo "== $bin --list-devices"
"$bin" --list-devices 2>&1

runs=$cache/runs
mkdir -p "$runs"
# stderr lines worth printing: errors, the model's shape, where the weights
# went, the sampler, the timings.
MATTERS="error|Error|ERROR|warning|failed|unable|invalid|exception|gguf_init|llama_model_load:|llama_model_load_from_file|print_info: (file type|n_vocab|n_embd |n_layer |n_ctx_train|n_head)|load_tensors|offload|model buffer|KV buffer|compute buffer|sampler seed|generate:|perf_print|llama_perf|system_info"
# The "eval" runs of a llama-completion run: 8 tokens are 7 runs (the first
# token comes from the prompt's decode). Perf lines are common_perf_print's in
# this build, llama_perf_context_print's in older ones.
eval_runs() {
    sed -nE 's/.*(common_perf_print|llama_perf_context_print): +eval time = .* \/ +([0-9]+) runs.*/\2/p' "$1" | tail -1
}
# One llama-completion run, tried again (3 tries) while the logger lost its
# tail (see -t 1 above): exit status 0 without the perf lines, or non-zero
# without an error line. stdout and stderr apart; prints stdout whole and
# stderr's lines that matter; leaves the exit status in $rc.
run() {
    local name=$1 file=$2 try
    local out=$runs/$name.stdout err=$runs/$name.stderr
    local cmd=(timeout "$TIME_LIMIT" "$bin" -m "$file" -p "$PROMPT" -n 8 --seed 42 --temp 0
               -no-cnv -ngl 99 -c 128 -t 1 --no-warmup -lv 4)
    echo "\$ $(printf '%q ' "${cmd[@]}")"
    for try in 1 2 3; do
        rc=0
        "${cmd[@]}" > "$out" 2> "$err" < /dev/null || rc=$?
        if [ "$rc" = 0 ] && [ -n "$(eval_runs "$err")" ]; then break; fi
        if [ "$rc" != 0 ] && grep -q " E " "$err"; then break; fi
        if [ "$rc" = 0 ]; then
            echo "-- try $try: exit status 0 but no perf lines: the logger lost its tail"
        else
            echo "-- try $try: exit status $rc but no error line: the logger lost its tail"
        fi
    done
    echo "-- exit status $rc; stdout:"
    cat "$out"; echo
    echo "-- stderr (the lines that matter; all of it in $err):"
    grep -E "$MATTERS" "$err" || true
}
# One llama-bench run (-v: llama.cpp's own log callback, which writes each line
# as it comes, so nothing is lost): prints stdout whole and stderr's lines
# that matter; leaves the exit status in $rc.
bench_run() {
    local name=$1 file=$2
    local out=$runs/$name.bench.stdout err=$runs/$name.bench.stderr
    local cmd=(timeout "$TIME_LIMIT" "$bench" -m "$file" -ngl 99 -p 8 -n 8 -r 1 --no-warmup -t 2 -o jsonl -v)
    echo "\$ $(printf '%q ' "${cmd[@]}")"
    rc=0
    "${cmd[@]}" > "$out" 2> "$err" < /dev/null || rc=$?
    echo "-- exit status $rc; stdout:"
    cat "$out"
    echo "-- stderr (the lines that matter; all of it in $err):"
    grep -E "$MATTERS" "$err" || true
}

echo "== generate: the tiny model ($(sha256sum "$model" | cut -d' ' -f1), $(stat -c %s "$model") bytes)"
run tiny "$model"
n_eval=$(eval_runs "$runs/tiny.stderr")
if [ "$rc" != 0 ] || [ "${n_eval:-0}" -lt 7 ]; then
    echo "FAIL: no generation (exit status $rc, eval runs ${n_eval:-none})"
    exit 1
fi
echo "OK: 8 tokens generated (eval runs: $n_eval)"

echo "== llama-bench: the tiny model, pp8 and tg8"
bench_run tiny "$model"
rates=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(" ".join(("pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]) + "=%.1f" % r["avg_ts"] for r in rows if r["avg_ts"] > 0))
' "$runs/tiny.bench.stdout" 2>/dev/null || true)
if [ "$rc" != 0 ] || [ "$(echo "$rates" | wc -w)" != 2 ]; then
    echo "FAIL: llama-bench (exit status $rc, rates: ${rates:-none})"
    exit 1
fi
echo "OK: llama-bench t/s: $rates"

echo "== the compute check's own command: llama-bench as llmgw runs it on a CPU build"
# crates/llmgw-core/src/recipe/llama_cpp.rs, bench(): these arguments, the device `none` (the
# CPU) for a CPU build, CUDA<n>/Vulkan<n> for each GPU a GPU build lists.
check=(timeout "$TIME_LIMIT" "$bench" -m "$model" -dev none -ngl 99 -p 8 -n 8 -r 1 --no-warmup -o jsonl -v)
echo "\$ $(printf '%q ' "${check[@]}")"
rc=0
"${check[@]}" > "$runs/check.stdout" 2> "$runs/check.stderr" < /dev/null || rc=$?
echo "-- exit status $rc; stdout:"
cat "$runs/check.stdout"
rates=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
print(" ".join("tg%d=%.1f" % (r["n_gen"], r["avg_ts"]) for r in rows if r["n_gen"] > 0 and r["avg_ts"] > 0))
' "$runs/check.stdout" 2>/dev/null || true)
if [ "$rc" != 0 ] || [ -z "$rates" ]; then
    echo "FAIL: the compute check's command (exit status $rc, no generation row)"
    exit 1
fi
echo "OK: the compute check's command generated: $rates"

echo "== negative cases: what llama.cpp says about a bad model file"
size=$(stat -c %s "$model")
bad=$cache/bad
mkdir -p "$bad"
# The magic: "GGUF" becomes "GGUX".
cp "$model" "$bad/corrupted-magic.gguf"
printf 'X' | dd of="$bad/corrupted-magic.gguf" bs=1 seek=3 conv=notrunc status=none
# Half of the file: the tensor data runs past its end.
head -c $(( size / 2 )) "$model" > "$bad/truncated.gguf"
# 4 KiB of the last tensor's data (output.weight) overwritten with 0xFF:
# f16 NaNs; the header is intact.
cp "$model" "$bad/corrupted-data.gguf"
head -c 4096 /dev/zero | tr '\0' '\377' | dd of="$bad/corrupted-data.gguf" bs=1 seek=$(( size - 8192 )) conv=notrunc status=none
failed_as_expected=1
for name in corrupted-magic truncated; do
    echo "-- $name.gguf with llama-bench -v (lines written as they come: always there)"
    bench_run "$name" "$bad/$name.gguf"
    if [ "$rc" = 0 ] || ! grep -q "failed to load model" "$runs/$name.bench.stderr"; then
        echo "UNEXPECTED: llama-bench loaded $name.gguf or said nothing"; failed_as_expected=0
    fi
    echo "-- $name.gguf with llama-completion (lines go through the logger's worker: may be missing)"
    run "$name" "$bad/$name.gguf"
    if [ "$rc" = 0 ]; then echo "UNEXPECTED: llama-completion loaded $name.gguf"; failed_as_expected=0; fi
done
echo "-- corrupted-data.gguf (loads and runs: nothing in GGUF checks the tensor data)"
bench_run corrupted-data "$bad/corrupted-data.gguf"
run corrupted-data "$bad/corrupted-data.gguf"
[ "$failed_as_expected" = 1 ] || exit 1
echo "== done: the tiny model generates on llama.cpp b$LLAMA_BUILD_NUMBER (CPU); bad files fail as printed above"
