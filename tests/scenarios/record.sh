#!/usr/bin/env bash
# Re-records the transcripts docs/scenarios.md shows: each recipe's scenario run with the real
# binaries (xdsloop-server --scenario --record, xdsloop-client) over a temp copy of
# fixtures/demo. Run from the repository root after `make bins`:
#   tests/scenarios/record.sh [RECIPE...]
# The recordings land in examples/scenarios/recorded/; the docs test prints them.
set -euo pipefail
BIN=${BIN_DIR:-target/debug}
OUT=examples/scenarios/recorded
PORT=${PORT:-18641}
ADDR=127.0.0.1:$PORT

# run RECIPE "CLIENT ARGS" [EDIT] [SECONDS] [SCENARIO]: serve with the recipe's scenario (or
# SCENARIO's, when two recipes share one), run the client until it exits (or SECONDS, default
# 8), optionally edit clusters.yaml once the client is up.
# The client's output (stdout and log) is kept next to the recording (RECIPE.client.txt).
run() {
    local recipe=$1 client_args=$2 edit=${3:-} seconds=${4:-8} scenario=${5:-$1}
    local tmp
    tmp=$(mktemp -d)
    cp -r fixtures/demo "$tmp/fixtures"
    "$BIN/xdsloop-server" --fixtures "$tmp/fixtures" --listen "$ADDR" --admin off \
        --scenario "examples/scenarios/$scenario.yaml" --record "$OUT/$recipe.jsonl" \
        >"$tmp/server.out" 2>"$tmp/server.err" &
    local server=$!
    until grep -q listening "$tmp/server.out" 2>/dev/null; do sleep 0.1; done
    # shellcheck disable=SC2086
    timeout "$seconds" "$BIN/xdsloop-client" --server "$ADDR" --node-id edge-1 $client_args \
        >"$OUT/$recipe.client.txt" 2>&1 &
    local client=$!
    if [ -n "$edit" ]; then
        sleep 1
        sed -i "$edit" "$tmp/fixtures/clusters.yaml"
    fi
    wait "$client" || true
    kill -TERM "$server"
    wait "$server" || true
    echo "== $recipe: $(wc -l <"$OUT/$recipe.jsonl") lines"
    rm -rf "$tmp"
}

recipes=("$@")
[ ${#recipes[@]} -gt 0 ] || recipes=(nack-bad-cluster reset-and-reconnect close-and-resubscribe not-found push-storm oversize flap flap-delta)
for recipe in "${recipes[@]}"; do
    case $recipe in
        nack-bad-cluster) run "$recipe" "--exit-after 5" 's/0.25s/0.5s/' ;;
        reset-and-reconnect) run "$recipe" "--exit-after 9" 's/0.25s/0.5s/' ;;
        close-and-resubscribe) run "$recipe" "--delta --exit-after 8" ;;
        not-found) run "$recipe" "--not-found-timeout 1s" "" 3 ;;
        push-storm) run "$recipe" "--types cds --exit-after 21" ;;
        oversize) run "$recipe" "--types cds --max-message-bytes 65536 --exit-after 1" ;;
        flap) run "$recipe" "--types cds --exit-after 5" ;;
        flap-delta) run "$recipe" "--delta --types cds --exit-after 5" "" 8 flap ;;
        *) echo "unknown recipe $recipe" >&2; exit 2 ;;
    esac
done
