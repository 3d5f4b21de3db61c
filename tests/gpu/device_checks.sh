#!/usr/bin/env bash
# The GPU checks of warmscope, in one go, on a machine with an NVIDIA GPU and a CUDA torch: a
# cudnn_benchmark run over three shapes and its report, the TUI's Usage pane and device-time
# chart in tmux, what device time costs, then make test-gpu (its warm-up recipe test keeps
# what warmup printed). Everything lands in OUT (default /tmp/warmscope-gpu-checks).
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
export PYTHONUNBUFFERED=1 TERM=${TERM:-xterm-256color} WARMSCOPE_GPU_OUT="$OUT"
ws() { "$PY" -m warmscope.cli "$@"; }
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
WORK=$(mktemp -d)
cd "$WORK" || exit 1

say "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader)"
say "$("$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())')"

say "run: sample:cnn, cudnn_benchmark=on, three shapes"
timeout 120 "$PY" -m warmscope.cli run sample:cnn --device cuda --input 1x3xSxS --dim S=64,96,128 \
  --set cudnn_benchmark=on --iters 150 --json run.json --record cnn.jsonl >"$OUT/run-cnn.txt" 2>&1
say "exit $?"
ws report cnn.jsonl >"$OUT/report-cnn.md" 2>&1

if command -v "$TMUX_BIN" >/dev/null 2>&1; then
  say "TUI in tmux 100x30: sample:cnn eager on cuda; 2 (Usage), then 1 and d (device time)"
  "$TMUX_BIN" new -d -s ws -x 100 -y 30 "$PY -m warmscope.cli sample:cnn --mode eager --device cuda --duration 30"
  sleep 18
  "$TMUX_BIN" send-keys -t ws 2
  sleep 3
  { echo "--- Usage pane"; "$TMUX_BIN" capture-pane -p -t ws; } >"$OUT/tui.txt"
  "$TMUX_BIN" send-keys -t ws 1 d
  sleep 3
  { echo "--- main screen, device time"; "$TMUX_BIN" capture-pane -p -t ws; } >>"$OUT/tui.txt"
  "$TMUX_BIN" send-keys -t ws q
  sleep 3
  "$TMUX_BIN" kill-server 2>/dev/null
fi

say "device time's cost"
(cd "$HERE" && timeout 100 "$PY" benchmarks/device_time_cost.py --blocks 30 --calls 300 --rounds 1) \
  >"$OUT/device-time-cost.txt" 2>&1
tail -n 3 "$OUT/device-time-cost.txt" | tee -a "$OUT/summary.txt"

tar czf "$OUT/records.tar.gz" run.json cnn* 2>/dev/null

say "make test-gpu"
(cd "$HERE" && timeout "${TEST_GPU_TIMEOUT:-330}" "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/gpu) \
  >"$OUT/test-gpu.txt" 2>&1
tail -n 14 "$OUT/test-gpu.txt" | tee -a "$OUT/summary.txt"
grep -E "^answer" "$OUT/warmup.txt" 2>/dev/null | tee -a "$OUT/summary.txt"
