#!/usr/bin/env bash
# The GPU checks of warmscope, in one go, on a machine with an NVIDIA GPU and a CUDA torch:
# make test-gpu, a cudnn_benchmark run over three shapes and its report, the warm-up recipe
# of that run, the TUI's Usage pane in tmux, and what device time costs. Everything lands in
# OUT (default /tmp/warmscope-gpu-checks), a summary first.
#
#     tests/gpu/device_checks.sh [OUT]
#
# warmscope must import (installed, or on PYTHONPATH); tmux is used where found (TMUX_BIN).
set -u
OUT=${1:-/tmp/warmscope-gpu-checks}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
TMUX_BIN=${TMUX_BIN:-tmux}
export PYTHONUNBUFFERED=1 TERM=${TERM:-xterm-256color}
ws() { "$PY" -m warmscope.core.cli "$@"; }
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
WORK=$(mktemp -d)

say "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader)"
say "$("$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())')"

say "make test-gpu"
(cd "$HERE" && timeout 480 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/gpu) \
  >"$OUT/test-gpu.txt" 2>&1
tail -n 12 "$OUT/test-gpu.txt" | tee -a "$OUT/summary.txt"

cd "$WORK" || exit 1
say "run: sample:cnn, cudnn_benchmark=on, three shapes"
timeout 180 ws run sample:cnn --device cuda --input 1x3xSxS --dim S=64,96,128 \
  --set cudnn_benchmark=on --iters 150 --json run.json --record cnn.jsonl >"$OUT/run-cnn.txt" 2>&1
say "exit $?"
ws report cnn.jsonl >"$OUT/report-cnn.md" 2>&1

say "warmup: the same, --repeat 3"
timeout 300 ws warmup sample:cnn --device cuda --input 1x3xSxS --dim S=64,96,128 \
  --set cudnn_benchmark=on --repeat 3 --json warmup.json --emit recipe.py >"$OUT/warmup.txt" 2>&1
say "exit $?"
grep -E "^answer" "$OUT/warmup.txt" | tee -a "$OUT/summary.txt"

if command -v "$TMUX_BIN" >/dev/null 2>&1; then
  say "TUI in tmux 100x30: sample:cnn eager on cuda, tab 2 (Usage), then d (device time)"
  "$TMUX_BIN" new -d -s ws -x 100 -y 30 "$PY -m warmscope.core.cli sample:cnn --mode eager --device cuda --duration 40"
  sleep 22
  "$TMUX_BIN" send-keys -t ws 2
  sleep 3
  { echo "--- Usage pane"; "$TMUX_BIN" capture-pane -p -t ws; } >"$OUT/tui.txt"
  "$TMUX_BIN" send-keys -t ws 1 d
  sleep 3
  { echo "--- main screen, device time"; "$TMUX_BIN" capture-pane -p -t ws; } >>"$OUT/tui.txt"
  "$TMUX_BIN" send-keys -t ws q
  sleep 4
  "$TMUX_BIN" kill-server 2>/dev/null
fi

say "device time's cost"
(cd "$HERE" && timeout 150 "$PY" benchmarks/device_time_cost.py --blocks 30 --calls 300 --rounds 2) \
  >"$OUT/device-time-cost.txt" 2>&1
tail -n 3 "$OUT/device-time-cost.txt" | tee -a "$OUT/summary.txt"

records=$(ls -d ~/.local/state/warmscope/runs/warmup-* 2>/dev/null | tail -n 1)
tar czf "$OUT/records.tar.gz" run.json cnn* warmup.json recipe.py \
  ${records:+"$records"} 2>/dev/null
ls -la "$OUT" >>"$OUT/summary.txt"
