#!/usr/bin/env bash
# Make the paper profile's committed results again, from an empty results cache, with the code as it
# is: notebooks 01-04 in the paper profile, one after the other (02 with its real-data section on
# HAM10000), then the findings page and the README's findings block.  Each notebook's wall time goes
# to outputs/rerun_paper/<notebook>.time and the machine's load, every minute, to
# outputs/rerun_paper/load.txt: the budget is 2.5 hours a notebook on 2 cores, with nothing else
# running.  Stopped, it resumes where it stopped when run again with RESUME=1 (the cache is kept).
#
#   bash tools/rerun_paper.sh /path/to/HAM10000          # HAM10000_metadata.csv and the JPEGs below it
#   RESUME=1 bash tools/rerun_paper.sh /path/to/HAM10000 # keep results/paper/ and continue
set -euo pipefail
cd "$(dirname "$0")/.."
HAM=${1:?"give the HAM10000 folder (HAM10000_metadata.csv and its JPEGs)"}
PY=${PY:-.venv/bin/python}
LOG=outputs/rerun_paper
source tools/rerun_common.sh

if [ -z "${RESUME:-}" ]; then
  rm -rf results/paper reports/paper/RUN.json  # an empty results cache for the paper profile
  find figures/paper -maxdepth 1 -type f ! -name seed_plan.csv ! -name pilot.csv -delete 2>/dev/null || true
fi
for nb in 01 03 04; do
  step "$nb" "$PY" -m fedpl_core reproduce --profile paper --output reports/paper --notebooks "$nb"
done
step 02 "$PY" -m fedpl_core reproduce --profile paper --output reports/paper --notebooks 02 \
  -p data_roots '{"Task 2": data/HAM10000}'
step findings "$PY" -m fedpl_core.report.findings
echo "done: reports/paper/, figures/paper/, docs/findings.md, README.md; logs and times in $LOG/"
