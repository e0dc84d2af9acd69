#!/usr/bin/env bash
# Stop the Prometheus that scripts/prometheus-up.sh started in STATE_DIR (only that PID).
set -euo pipefail
STATE=${1:?usage: prometheus-down.sh STATE_DIR}
PIDFILE="$STATE/prometheus.pid"
[ -s "$PIDFILE" ] || exit 0
PID=$(cat "$PIDFILE")
if kill -0 "$PID" 2>/dev/null; then
  kill "$PID"
  for _ in $(seq 1 40); do kill -0 "$PID" 2>/dev/null || break; sleep 0.25; done
  kill -0 "$PID" 2>/dev/null && kill -9 "$PID"
fi
rm -f "$PIDFILE"
