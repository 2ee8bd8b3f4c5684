#!/usr/bin/env bash
# fedpl on an offline GPU node, one command from the checkout's root (docs/gpu.md):
#     bash tools/gpu_node.sh                     the checks (python -m fedpl_core gpu-checks)
#     bash tools/gpu_node.sh notebook 01         one notebook in the gpu profile
# First the offline install (tools/offline_install.sh: wheelhouse/ -> .venv-node, over the node's
# torch; once, then reused).  Everything it writes goes to $OUT (default: outputs/gpu-node), so
# that what came out survives an allocation that ends mid-step:
#   checks:   $OUT/summary.md and $OUT/<nn>-<step>/; an earlier run's folder carried in as
#             outputs/gpu-checks/ is continued (its finished steps are not run again);
#   notebook: $OUT/reports/gpu/<notebook>.ipynb, $OUT/figures/gpu/, $OUT/results/gpu/<notebook>/
#             (the run cache; results/gpu/ carried in is continued: finished runs are reused).
# BUDGET (default 560) bounds the seconds of the whole command, the install included.
# Further arguments go to gpu-checks (e.g. --redo smoke, --steps grids).
set -uo pipefail
START=$(date +%s)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
OUT=${OUT:-outputs/gpu-node}
BUDGET=${BUDGET:-560}
ENV=${NODE_ENV:-.venv-node}
export MPLBACKEND=Agg PYTHONUNBUFFERED=1
mkdir -p "$OUT" || exit 2
case ${1:-} in checks|notebook) mode=$1; shift ;; *) mode=checks ;; esac

echo "== offline install ($(date -u +%T))"
[[ -f $ENV/.installed && $ENV/.installed -nt pyproject.toml ]] \
  || { bash tools/offline_install.sh "$ENV" && touch "$ENV/.installed"; } || exit 2
left=$((BUDGET - $(date +%s) + START))
echo "== $mode ($(date -u +%T), ${left} s of the budget left)"
((left >= 30)) || { echo "gpu_node: error: ${left} s of BUDGET=${BUDGET} left after the install; run again" >&2; exit 2; }

case $mode in
  checks)
    [[ -d outputs/gpu-checks && $(realpath "$OUT") != $(realpath outputs/gpu-checks) ]] \
      && cp -an outputs/gpu-checks/. "$OUT"/
    exec "$ENV/bin/python" -m fedpl_core gpu-checks --out "$OUT" --budget "$left" "$@" ;;
  notebook)
    nb=${1:?"usage: bash tools/gpu_node.sh notebook NN (00 to 05)"}
    mkdir -p "$OUT/results/gpu" "$OUT/figures/gpu" "$OUT/reports/gpu"
    [[ -d results/gpu ]] && cp -an results/gpu/. "$OUT/results/gpu/"
    FEDPL_RESULTS=$OUT/results/gpu FEDPL_FIGURES=$OUT/figures/gpu \
      timeout -k 5 $((left - 5)) "$ENV/bin/python" -m fedpl_core reproduce --profile gpu --notebooks "$nb" \
      --output "$OUT/reports/gpu"
    rc=$?
    ((rc == 124)) && echo "stopped at the budget: the finished runs are in $OUT/results/gpu/; carry them in as results/gpu/ and run again"
    exit $rc ;;
  *) echo "gpu_node: error: unknown mode '$mode' (checks or notebook NN)" >&2; exit 2 ;;
esac
