#!/usr/bin/env bash
# Does each popular agent framework run a tool loop through ToolRelay when only its base URL
# changes? Makes scratch venvs (.cache/frameworks-venv*), installs pinned framework versions,
# starts the proxy on 127.0.0.1 with the shipped config.yaml (offline `demo` model) and runs
# scripts/try_frameworks.py, which prints one line per framework.
#
#   scripts/try_frameworks.sh [--log-level debug] [-- try_frameworks.py args...]
#
# Env: PORT (default: a free port), PROXY_LOG (default .cache/frameworks-proxy.log).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log_level=info
if [[ "${1:-}" == "--log-level" ]]; then
    log_level="$2"
    shift 2
fi
[[ "${1:-}" == "--" ]] && shift

proxy_python="$root/.venv/bin/python"
proxy_log="${PROXY_LOG:-$root/.cache/frameworks-proxy.log}"

# Pinned: the current release of each on 2026-11-25 (`pip index versions NAME`); the slim
# pydantic-ai (OpenAI extra only), as the full one pulls every provider SDK. Three venvs, as
# their current releases cannot share one: llama-index-llms-openai (under OpenAILike) needs
# openai<3, instructor 1.17.0 needs jiter<0.15 while openai 3.57.0 needs jiter>=0.16. Those two
# get the newest openai that fits, as a plain `pip install` of them does.
venv_main="$root/.cache/frameworks-venv"
venv_llama="$root/.cache/frameworks-venv-llama-index"
venv_instructor="$root/.cache/frameworks-venv-instructor"
packages_main=(
    "pydantic-ai-slim[openai]==2.66.0"
    "langchain-openai==1.7.4"
    "langgraph==1.2.24"
    "smolagents[openai]==1.26.0"
    "anthropic==2.14.0"
    "openai-agents==0.24.0"
    "openai==3.57.0"
)
packages_llama=("llama-index-llms-openai-like==0.8.1" "llama-index-core==0.14.25")
packages_instructor=("instructor==1.17.0")

export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
mkdir -p "$root/.cache"
install() {  # install VENV PACKAGE...: (re)makes VENV unless it already has exactly these
    local dir="$1"
    shift
    local want
    want="$(printf '%s\n' "$@")"
    if [[ ! -f "$dir/.installed" || "$(cat "$dir/.installed")" != "$want" ]]; then
        echo "== installing into $dir: $*" >&2
        python3 -m venv "$dir"
        # (pip's notes on this machine's extra indexes are left out; its status is kept)
        if ! "$dir/bin/pip" install --quiet --disable-pip-version-check "$@" 2>"$dir.log"; then
            grep -v "^WARNING: Location" "$dir.log" >&2
            exit 2
        fi
        printf '%s\n' "$want" >"$dir/.installed"
    fi
}
install "$venv_main" "${packages_main[@]}"
install "$venv_llama" "${packages_llama[@]}"
install "$venv_instructor" "${packages_instructor[@]}"

port="${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
echo "== proxy on 127.0.0.1:$port (log: $proxy_log)" >&2
"$proxy_python" -m app --config config.yaml --host 127.0.0.1 --port "$port" \
    --log-level "$log_level" >"$proxy_log" 2>&1 &
proxy_pid=$!
trap 'kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true' EXIT

for _ in $(seq 100); do
    if python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/v1/models', timeout=1)" 2>/dev/null; then
        break
    fi
    if ! kill -0 "$proxy_pid" 2>/dev/null; then
        echo "proxy exited; its log:" >&2
        cat "$proxy_log" >&2
        exit 2
    fi
    sleep 0.1
done
python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/v1/models', timeout=1)" \
    || { echo "proxy did not answer on 127.0.0.1:$port; log: $proxy_log" >&2; exit 2; }

# No key or proxy from the environment may send traffic anywhere but 127.0.0.1.
run() {
    env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_BASE_URL \
        -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy -u ALL_PROXY -u all_proxy \
        OPENAI_AGENTS_DISABLE_TRACING=1 HF_HUB_OFFLINE=1 \
        "$1" "$root/scripts/try_frameworks.py" --base "http://127.0.0.1:$port" "${@:2}"
}
started=$SECONDS
status=0
run "$venv_main/bin/python" --venv main "$@" || status=1
run "$venv_llama/bin/python" --venv llama-index "$@" || status=1
run "$venv_instructor/bin/python" --venv instructor "$@" || status=1
echo "== $((SECONDS - started))s for the runs; proxy log: $proxy_log" >&2
exit "$status"
