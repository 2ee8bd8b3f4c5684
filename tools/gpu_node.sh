#!/usr/bin/env bash
# fedpl on an offline GPU node, one command from the checkout's root (docs/gpu.md):
#     bash tools/gpu_node.sh                     the checks (python -m fedpl_core gpu-checks)
#     bash tools/gpu_node.sh notebook 01         one notebook in the gpu profile
# First the offline install (tools/offline_install.sh: wheelhouse/ -> .venv-node, over the node's
# torch; once, then reused).  The work is done in the checkout, where a later run continues it:
#   checks:   outputs/gpu-checks/ (summary.md and <nn>-<step>/; its finished steps are not run
#             again), and on CUDA figures/gpu/step_times.json and figures/bench_gpu_throughput_cuda.*;
#   notebook: reports/gpu/<notebook>.ipynb, figures/gpu/, results/gpu/ (the run cache: finished
#             runs are reused).
# What it hands back goes to $OUT (default: outputs/gpu-node) as three flat files, so that a
# service that brings back only a few files, not folders, loses nothing:
#   summary.md       the checks' table (or the notebook's exit status), the install's line;
#   log.txt          everything the command printed;
#   results.tar.gz   every file the work wrote or continued, under its path in the checkout:
#                    `tar -xzf results.tar.gz` at the checkout's root puts each where it belongs.
# The three are written however the command ends (a failed install, a step stopped at the budget,
# SIGTERM).  To continue in the next allocation, unpack the archive at the checkout's root and
# carry outputs/gpu-checks/ (or results/gpu/) in again.  CHECKS (default outputs/gpu-checks, a
# folder inside the checkout) is where the checks work.
# BUDGET (default 560) bounds the seconds of the whole command, the install and the packing included.
# Further arguments go to gpu-checks (e.g. --redo smoke, --steps grids).
set -uo pipefail
START=$(date +%s)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
OUT=${OUT:-outputs/gpu-node}
BUDGET=${BUDGET:-560}
ENV=${NODE_ENV:-.venv-node}
CHECKS=${CHECKS:-outputs/gpu-checks}
PACK_S=20 # seconds kept back from BUDGET for writing the three files
export MPLBACKEND=Agg PYTHONUNBUFFERED=1
case ${1:-} in checks | notebook) mode=$1 && shift ;; *) mode=checks ;; esac
[[ $BUDGET =~ ^[0-9]+$ ]] || { echo "gpu_node: error: BUDGET must be whole seconds, got '$BUDGET'" >&2; exit 2; }
if [[ $mode == notebook ]]; then
  nb=${1:-}
  [[ $nb =~ ^[0-9][0-9]$ ]] || { echo "gpu_node: error: usage: bash tools/gpu_node.sh notebook NN (00 to 05)" >&2; exit 2; }
fi
mkdir -p "$OUT" || exit 2
[[ -d $OUT && ! -L $OUT ]] || { echo "gpu_node: error: OUT=$OUT is not a folder" >&2; exit 2; }
[[ $(realpath -m "$CHECKS") == "$PWD"/* ]] || { echo "gpu_node: error: CHECKS=$CHECKS is not a folder inside the checkout" >&2; exit 2; }
CHECKS=$(realpath -m --relative-to=. "$CHECKS")
[[ $(realpath "$OUT") != $(realpath -m "$CHECKS") ]] || { echo "gpu_node: error: OUT must not be CHECKS ($CHECKS), where the checks work" >&2; exit 2; }
exec > >(tee "$OUT/log.txt") 2>&1
teepid=$!

stamp=$(mktemp) && touch -d "@$START" "$stamp" || exit 2
status="not started"
install="install: not done"
rc=2
pack() {  # the three files of $OUT, whatever happened
  trap - EXIT TERM INT
  local list tmp
  list=$(mktemp) && tmp=$(mktemp -p "$OUT" .results.XXXXXX) || exit 2
  if [[ $mode == checks ]]; then
    [[ -d $CHECKS ]] && find "$CHECKS" -type f >>"$list"
    [[ -d figures ]] && find figures -type f -newer "$stamp" >>"$list"  # written by the steps on CUDA
    if [[ -f $CHECKS/summary.md ]]; then cp "$CHECKS/summary.md" "$OUT/summary.md"; else : >"$OUT/summary.md"; fi
  else
    find "reports/gpu" -maxdepth 1 -type f -name "${nb}_*" 2>/dev/null >>"$list"
    for d in figures/gpu results/gpu; do [[ -d $d ]] && find "$d" -type f >>"$list"; done
    printf '# fedpl gpu_node.sh notebook %s\n\n%s\n' "$nb" "$status" >"$OUT/summary.md"
  fi
  sort -u -o "$list" "$list"
  tar -czf "$tmp" --no-recursion -T "$list" && mv -f "$tmp" "$OUT/results.tar.gz" || rm -f "$tmp"
  printf '\n%s; %s files in results.tar.gz (%s KiB); %s s in all\n' "$install" "$(wc -l <"$list")" \
    "$(($(stat -c %s "$OUT/results.tar.gz" 2>/dev/null || echo 0) / 1024))" "$(($(date +%s) - START))" \
    | tee -a "$OUT/summary.md"
  rm -f "$list" "$stamp"
  exec >&- 2>&-
  wait "$teepid" 2>/dev/null  # log.txt complete before the command ends
  exit "$rc"
}
child=
trap pack EXIT
trap '[[ -n $child ]] && kill -TERM "$child" 2>/dev/null && wait "$child"; rc=143; status="stopped (SIGTERM)"; exit 143' TERM INT

echo "== offline install ($(date -u +%T))"
install="install: done earlier ($ENV)"
if ! [[ -f $ENV/.installed && $ENV/.installed -nt pyproject.toml ]]; then
  bash tools/offline_install.sh "$ENV" && touch "$ENV/.installed" \
    || { install="install: FAILED (log.txt says why)"; status=$install; exit 2; }
  install="install: done ($ENV)"
fi
left=$((BUDGET - PACK_S - $(date +%s) + START))
echo "== $mode ($(date -u +%T), ${left} s of the budget left)"
((left >= 30)) || { echo "gpu_node: error: ${left} s of BUDGET=${BUDGET} left after the install; run again" >&2; exit 2; }

case $mode in
  checks)
    "$ENV/bin/python" -m fedpl_core gpu-checks --out "$CHECKS" --budget "$left" "$@" &
    child=$!
    wait "$child"
    rc=$? ;;
  notebook)
    mkdir -p results/gpu figures/gpu reports/gpu
    FEDPL_RESULTS=results/gpu FEDPL_FIGURES=figures/gpu \
      timeout -k 5 $((left - 5)) "$ENV/bin/python" -m fedpl_core reproduce --profile gpu --notebooks "$nb" \
      --output reports/gpu &
    child=$!
    wait "$child"
    rc=$?
    status="exit status $rc"
    ((rc == 124)) && status="stopped at the budget: the finished runs are in results/gpu/ of results.tar.gz; unpack it, carry results/gpu/ in and run again"
    echo "$status" ;;
esac
exit "$rc"
