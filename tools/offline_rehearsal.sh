#!/usr/bin/env bash
# The offline install rehearsed on a CPU machine, as the user of an offline GPU node meets it
# (docs/gpu.md quotes its numbers).  From the checkout's root:
#     bash tools/offline_rehearsal.sh [PYTHON [TORCH [TORCHVISION]]]
# PYTHON: the node's Python (default python3.12; or $PYTHON), TORCH and TORCHVISION the node's
# PyTorch (default 2.11.0 and its torchvision 0.26.0; or $TORCH, $TORCHVISION): a GPU node's, not
# the CPU lock's.
#   1. the wheelhouse for that Python (tools/wheelhouse.py, its defaults; the package index is used);
#   2. a "node Python": a venv of PYTHON with torch $TORCH and torchvision $TORCHVISION from the
#      package index (CUDA builds, as a GPU node has; they run on a CPU too.  A CPU build of torch
#      cannot stand in: torchvision's wheel on the index is built against the CUDA one, and over the
#      CPU build `import torchvision` fails: "operator torchvision::nms does not exist");
#   3. the offline install over it (tools/offline_install.sh, its defaults: a fresh venv that sees the
#      node Python's packages, pip --no-index from the wheelhouse), with every index and proxy cut off;
#   4. the backbones build in it: ResNet-18 and DenseNet-121 (torchvision), EfficientNet-Lite0 with
#      its ImageNet weights (the pretrained extra);
#   5. pytest tests/test_gpu.py (skips without CUDA);
#   6. one notebook (00) in the smoke profile through papermill;
#   7. bash tools/gpu_node.sh --device cpu --steps environment gpu-tests: the checks as a node runs
#      them, and the three files it hands back;
#   8. pytest again with nbval removed, with a notebook: the notebook skips with the reason.
# Everything goes under outputs/offline-rehearsal/ (git-ignored), made afresh; the summary of times
# and sizes is printed and kept in outputs/offline-rehearsal/summary.txt.  No GPU is involved.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
PYTHON=${1:-${PYTHON:-python3.12}}
TORCH=${2:-${TORCH:-2.11.0}}
TORCHVISION=${3:-${TORCHVISION:-0.26.0}}
"$PYTHON" -c 'import sys' 2>/dev/null \
  || { echo "offline_rehearsal: error: no Python '$PYTHON': give the node's Python as the first argument" >&2; exit 2; }
R=outputs/offline-rehearsal
rm -rf "$R" && mkdir -p "$R" || exit 2
SUM=$R/summary.txt
pyver=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
now() { date +%s.%N; }
note() { printf '%-44s %s\n' "$1" "$2" | tee -a "$SUM"; }
secs() { "$PYTHON" -c "print(f'{$2 - $1:.1f} s')"; }
offline() {  # no index, no find-links, no configuration, and no network through a proxy
  env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 \
    http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    HTTPS_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY= "$@"; }
echo "offline rehearsal, $(date -u +%FT%TZ), $(nproc) CPU cores, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$SUM"

t=$(now)
"$PYTHON" tools/wheelhouse.py --python-version "$pyver" --dest "$R/wheelhouse" | tee "$R/wheelhouse.txt"
((PIPESTATUS[0] == 0)) || exit 1
note "1. wheelhouse (Python $pyver)" "$(secs "$t" "$(now)"): $(tail -n 1 "$R/wheelhouse.txt" | cut -d'(' -f1)"

t=$(now)
"$PYTHON" -m venv "$R/node-python" && env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null \
  "$R/node-python/bin/python" -m pip install -q "torch==$TORCH" "torchvision==$TORCHVISION" || exit 1
node_torch=$("$R/node-python/bin/python" -c 'import torch, torchvision; print(torch.__version__, torchvision.__version__)')
note "2. node Python: torch, torchvision" "$node_torch ($(secs "$t" "$(now)"), index)"

t=$(now)
offline env BASE_PYTHON="$R/node-python/bin/python" WHEELHOUSE="$R/wheelhouse" \
  bash tools/offline_install.sh "$R/env" 2>&1 | tee "$R/install.txt"
rc=${PIPESTATUS[0]}
note "3. offline install (no index, no network)" "exit status $rc, $(secs "$t" "$(now)"): $(tail -n 1 "$R/install.txt" | cut -c1-120)"
((rc == 0)) || exit 1
PY=$R/env/bin/python
note "   torch the environment sees" "$("$PY" -c 'import torch; print(torch.__version__, "from", torch.__file__.split("/lib/")[0])')"
note "   packages installed into it" "$(ls -d "$R"/env/lib/python*/site-packages/*.dist-info | wc -l) (the wheelhouse has $(ls "$R"/wheelhouse/*.whl | wc -l))"

t=$(now)
offline "$PY" - > "$R/backbones.txt" 2>&1 <<'PY'
import torch
from fedpl_core.nn.models import build_model
x = torch.zeros(2, 1, 64, 64)
for name, kw in (("resnet18", {}), ("densenet121", {}), ("efficientnet_lite0", {"pretrained": True})):
    print(name, tuple(build_model(name, num_classes=3, in_channels=1, image_size=64, **kw)(x).shape))
PY
note "4. backbones build and run" "exit status $?, $(secs "$t" "$(now)"): $(tr '\n' ' ' < "$R/backbones.txt" | cut -c1-120)"

t=$(now)
offline "$PY" -m pytest -p no:cacheprovider -q -rs tests/test_gpu.py > "$R/test_gpu.txt" 2>&1
note "5. pytest tests/test_gpu.py" "exit status $?, $(secs "$t" "$(now)"): $(tail -n 1 "$R/test_gpu.txt")"

t=$(now)
offline "$PY" -m fedpl_core reproduce --profile smoke --notebooks 00 --output "$R/notebooks" > "$R/smoke.txt" 2>&1
note "6. notebook 00, smoke profile (papermill)" "exit status $?, $(secs "$t" "$(now)"): $(grep -E '^00_' "$R/smoke.txt" | tr -s ' ')"

t=$(now)
offline env BASE_PYTHON="$R/node-python/bin/python" WHEELHOUSE="$R/wheelhouse" NODE_ENV="$R/env" \
  OUT="$R/gpu-node" CHECKS="$R/gpu-checks" BUDGET=400 \
  bash tools/gpu_node.sh --device cpu --steps environment gpu-tests > "$R/gpu-node.txt" 2>&1
note "7. gpu_node.sh --device cpu (2 steps)" "exit status $?, $(secs "$t" "$(now)"); hands back: $(cd "$R/gpu-node" && find . -mindepth 1 | sed 's|^./||' | sort | tr '\n' ' ')"
note "   files in its results.tar.gz" "$(tar -tzf "$R/gpu-node/results.tar.gz" | wc -l)"
grep -E '^\| (environment|gpu-tests) ' "$R/gpu-node/summary.md" | tee -a "$SUM"

offline "$PY" -m pip uninstall -q -y nbval
offline "$PY" -m pytest -p no:cacheprovider -q -rs tests/test_gpu.py notebooks/00_introduction.ipynb \
  > "$R/test_without_nbval.txt" 2>&1
note "8. pytest + a notebook, nbval removed" "exit status $?: $(tail -n 1 "$R/test_without_nbval.txt")"
note "   the notebook's skip reason" "$(grep -o 'nbval is not installed[^)]*)' "$R/test_without_nbval.txt" | head -1)"
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg); logs in $R/" | tee -a "$SUM"
