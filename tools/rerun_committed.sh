#!/usr/bin/env bash
# Make every committed result again, from an empty results cache, with the code as it is:
#   1. the benchmarks whose tables the notebooks and the documentation quote: the 40-round
#      HAM10000 run, whether TDMA helps FedAvg there, FedMLP's tags over 100 rounds (first, as
#      notebook 02 reads the HAM10000 tables);
#   2. the six notebooks in the cpu profile (make reproduce) -> reports/, figures/, reports/RUN.json;
#   3. notebook 02 again with its real-data section on HAM10000 (the built-in sections come from
#      step 2's cache; the record keeps both invocations);
#   4. the README's findings block, from the notebooks' headline tables.
# The machine's load is logged every minute to outputs/rerun/load.txt, each step's output and
# wall time to outputs/rerun/.
#
#   bash tools/rerun_committed.sh /path/to/HAM10000     # HAM10000_metadata.csv and the JPEGs below it
#   SKIP_BENCHMARKS=1 bash tools/rerun_committed.sh ...  # steps 2, 3 and 4 only (the benchmarks' tables kept)
set -euo pipefail
cd "$(dirname "$0")/.."
HAM=${1:?"give the HAM10000 folder (HAM10000_metadata.csv and its JPEGs)"}
PY=${PY:-.venv/bin/python}
LOG=outputs/rerun
mkdir -p "$LOG"
rm -f "$LOG"/*.time "$LOG/load.txt"  # this run's times and load only
source tools/rerun_common.sh

rm -rf results reports/RUN.json                                        # an empty results cache
find figures -maxdepth 1 -type f ! -name 'bench_*' ! -name '*_long.md' ! -name README.md ! -name .gitkeep -delete  # each notebook figure anew (the benchmarks' own outputs are kept)
if [ -z "${SKIP_BENCHMARKS:-}" ]; then
step ham_long "$PY" benchmarks/fedlsm_ham10000.py --data-root data/HAM10000 --rounds 40 --local-iters 30 \
  --methods FedAvg-PL "FedAvg*" FedLSM --out 02_real_ham10000_long.md
step ham_tdma "$PY" benchmarks/fedlsm_ham_tdma.py --data-root data/HAM10000
step fedmlp_tagging "$PY" benchmarks/fedmlp_tagging.py
fi
step reproduce make reproduce
step real_data "$PY" -m fedpl_core reproduce --profile cpu --output reports --notebooks 02 \
  -p data_roots '{"Task 2": data/HAM10000}'
step findings "$PY" -m fedpl_core.report.findings
echo "done: reports/, figures/, README.md's findings; logs and times in $LOG/"
