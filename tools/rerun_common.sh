# Shared by tools/rerun_committed.sh and tools/rerun_paper.sh (sourced, not run): with HAM (the
# HAM10000 folder), PY and LOG set, link data/HAM10000, log the machine's load every minute to
# $LOG/load.txt (appended) and define `step NAME COMMAND...`, which runs COMMAND with its output to
# $LOG/NAME.log and appends its wall time in seconds to $LOG/NAME.time.
mkdir -p "$LOG" data
[ -e data/HAM10000 ] || ln -s "$(realpath "$HAM")" data/HAM10000  # a relative path in the executed notebook
(while true; do echo "$(date -u +%FT%TZ) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 60; done) >> "$LOG/load.txt" &
LOGGER=$!
trap 'kill $LOGGER 2>/dev/null' EXIT

step() {  # step NAME COMMAND...: run it, its output and wall time to $LOG/NAME.{log,time}
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name: $*"
  "$@" > "$LOG/$name.log" 2>&1
  echo "$((SECONDS - t0))" >> "$LOG/$name.time"
  echo "   $((SECONDS - t0)) s"
}
