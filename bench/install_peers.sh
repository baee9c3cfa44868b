#!/usr/bin/env bash
# Installs the peers ToolRelay is measured against, all into bench/.scratch (nginx from Debian).
# Idempotent: what is already installed at the pinned version is left alone.
#
#   bench/install_peers.sh [litellm] [portkey] [nginx]     (no argument: all three)
set -euo pipefail
cd "$(dirname "$0")"
SCRATCH="$PWD/.scratch"
mkdir -p "$SCRATCH"

# LiteLLM: pinned exactly. NEVER 1.107.0: that release was compromised.
LITELLM_VERSION=1.106.2
PORTKEY_VERSION=1.15.2
# Portkey 1.15.2 declares "@hono/node-server": "^1.3.3", so npm picks the newest 1.x, whose
# responses have immutable headers: every stream then fails with `TypeError: immutable`
# (Portkey issue #1389). The gateway's own lockfile pins 1.13.5 and patches it with
# patch-package (patches/@hono+node-server+1.13.5.patch), but neither reaches npm users.
HONO_NODE_SERVER_VERSION=1.13.5

log() { echo "install_peers: $*" >&2; }

install_litellm() {
    local venv="$SCRATCH/litellm-venv"
    if [ -x "$venv/bin/litellm" ] && [ "$("$venv/bin/python" -c \
        'import importlib.metadata as m; print(m.version("litellm"))')" = "$LITELLM_VERSION" ]; then
        return
    fi
    log "LiteLLM $LITELLM_VERSION into $venv (a few minutes)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "litellm[proxy]==$LITELLM_VERSION"
}

install_portkey() {
    local dir="$SCRATCH/portkey"
    local hono="$dir/node_modules/@hono/node-server/dist/index.mjs"
    local gateway="$dir/node_modules/@portkey-ai/gateway/build/start-server.js"
    if [ ! -f "$gateway" ] || ! grep -q "\"version\": \"$PORTKEY_VERSION\"" \
        "$dir/node_modules/@portkey-ai/gateway/package.json"; then
        log "Portkey gateway $PORTKEY_VERSION with @hono/node-server $HONO_NODE_SERVER_VERSION"
        mkdir -p "$dir"
        cat > "$dir/package.json" <<EOF
{
  "name": "toolrelay-bench-portkey",
  "private": true,
  "dependencies": {"@portkey-ai/gateway": "$PORTKEY_VERSION"},
  "overrides": {"@hono/node-server": "$HONO_NODE_SERVER_VERSION"}
}
EOF
        # --ignore-scripts: the gateway's postinstall (patch-package) finds no patches here.
        (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error)
    fi
    # 1. The gateway's one-line patch for @hono/node-server 1.13.5: await the response so
    #    its errors are caught (without it streams still fail with `TypeError: immutable`).
    if ! grep -q "return await responseViaResponseObject(res, outgoing, options);" "$hono"; then
        sed -i 's/return responseViaResponseObject(res, outgoing, options);/return await responseViaResponseObject(res, outgoing, options);/' "$hono"
        grep -q "return await responseViaResponseObject(res, outgoing, options);" "$hono" \
            || { log "could not patch $hono"; exit 1; }
    fi
    # 2. The gateway listens on every interface and has no option for it; the benchmark only
    #    runs servers on 127.0.0.1, so add hostname to its serve() call.
    if ! grep -q 'port:[A-Za-z_$]*,hostname:"127.0.0.1"}' "$gateway"; then
        sed -i -E 's/(fetch:[A-Za-z_$]+\.fetch,port:[A-Za-z_$]+)\}/\1,hostname:"127.0.0.1"}/' "$gateway"
        grep -q 'port:[A-Za-z_$]*,hostname:"127.0.0.1"}' "$gateway" \
            || { log "could not bind $gateway to 127.0.0.1"; exit 1; }
    fi
}

install_nginx() {
    if command -v nginx > /dev/null; then
        return
    fi
    log "nginx from Debian"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx > /dev/null
}

peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(litellm portkey nginx)
for peer in "${peers[@]}"; do
    case "$peer" in
        litellm) install_litellm ;;
        portkey) install_portkey ;;
        nginx) install_nginx ;;
        toolrelay) ;;  # runs from the repo's own .venv
        *) log "unknown peer: $peer"; exit 2 ;;
    esac
done
