#!/usr/bin/env bash
# Start a throwaway Prometheus on loopback that scrapes one target every second and loads
# Denpex's alert rules. For the integration test and for trying the exporter by hand.
#
#   scripts/prometheus-up.sh STATE_DIR TARGET_HOST:PORT [LISTEN_PORT]
#   -> prints PROMETHEUS_URL=http://127.0.0.1:LISTEN_PORT once /-/ready answers
#   scripts/prometheus-down.sh STATE_DIR        # stops it (by its recorded PID)
#
# Needs Debian's prometheus package: apt-get install -y --no-install-recommends prometheus
set -euo pipefail
STATE=${1:?usage: prometheus-up.sh STATE_DIR TARGET_HOST:PORT [LISTEN_PORT]}
TARGET=${2:?usage: prometheus-up.sh STATE_DIR TARGET_HOST:PORT [LISTEN_PORT]}
PORT=${3:-19090}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v prometheus >/dev/null || { echo "prometheus not installed" >&2; exit 2; }
mkdir -p "$STATE/tsdb"
cp "$ROOT/deploy/prometheus/denpex-rules.yml" "$STATE/denpex-rules.yml"
cat > "$STATE/prometheus.yml" <<CONF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [denpex-rules.yml]
scrape_configs:
  - job_name: denpex
    static_configs: [{targets: ["$TARGET"]}]
CONF
# Loopback only; storage in the state folder (Debian's defaults are system paths).
prometheus --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/tsdb" \
  --web.listen-address="127.0.0.1:$PORT" >"$STATE/prometheus.log" 2>&1 &
echo $! > "$STATE/prometheus.pid"
for _ in $(seq 1 120); do   # bounded: 30 s
  if ! kill -0 "$(cat "$STATE/prometheus.pid")" 2>/dev/null; then
    echo "prometheus exited:" >&2; tail -20 "$STATE/prometheus.log" >&2; exit 1
  fi
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/-/ready', timeout=1)" \
       2>/dev/null; then
    echo "PROMETHEUS_URL=http://127.0.0.1:$PORT"
    exit 0
  fi
  sleep 0.25
done
echo "prometheus not ready after 30 s" >&2
exit 1
