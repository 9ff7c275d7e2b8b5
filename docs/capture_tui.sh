#!/usr/bin/env bash
# Capture the terminal UI as a new user sees it: a real terminal (tmux), real keys,
# plain-text screens written to docs/tui-*.txt for the README.
# Usage: docs/capture_tui.sh [path/to/gpuready]   (default: .venv-tui/bin/gpuready)
set -euo pipefail
cd "$(dirname "$0")/.."
GPUREADY=${1:-.venv-tui/bin/gpuready}
MACHINES=tests/fixtures/machines
SESSION=gpuready-capture

# capture NAME WIDTH HEIGHT "ARGS" KEYS...: start the UI, wait until its tabs are on screen
# (a fixed sleep lost the first keys on a loaded machine), send each key (KEY_GAP s apart, 0.6 by
# default, so ESC is never read as Alt), and save the screen.
KEY_GAP=${KEY_GAP:-0.6}
wait_for_ui() {
    for _ in $(seq 1 120); do
        if tmux capture-pane -p -t "$SESSION" | grep -q "1 Overview"; then
            sleep 0.5
            return 0
        fi
        sleep 0.25
    done
    echo "capture_tui.sh: the UI did not start within 30 s" >&2
}
capture() {
    local name=$1 width=$2 height=$3 args=$4
    shift 4
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    tmux new-session -d -s "$SESSION" -x "$width" -y "$height" "$GPUREADY $args; sleep 60"
    wait_for_ui
    for key in "$@"; do
        tmux send-keys -t "$SESSION" "$key"
        sleep "$KEY_GAP"
    done
    sleep 4.5  # let notifications time out
    tmux capture-pane -p -t "$SESSION" > "docs/$name.txt"
    tmux send-keys -t "$SESSION" q
    sleep 0.5
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    echo "docs/$name.txt"
}

DESKTOP="--machine $MACHINES/linux-desktop-ryzen-7950x"
capture tui-main-120x40 120 40 "$DESKTOP"
capture tui-main-80x24 80 24 "$DESKTOP"
capture tui-text-120x40 120 40 "$DESKTOP" 2
capture tui-whatif-rtx4090-120x40 120 40 "$DESKTOP" w 4090 Enter 2
capture tui-details-120x40 120 40 "$DESKTOP" w 4090 Enter 2 Down Enter
capture tui-context-32k-80x24 80 24 "--machine $MACHINES/mac-m2-air-16gb" c 32768 Enter 2
capture tui-problems-120x40 120 40 "--machine $MACHINES/linux-garbled-proc"
capture tui-help-80x24 80 24 "$DESKTOP" '?'
capture tui-live-120x40 120 40 ""
