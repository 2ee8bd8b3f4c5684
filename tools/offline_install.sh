#!/usr/bin/env bash
# fedpl's offline install over the machine's own PyTorch, from the checkout's root:
#     bash tools/offline_install.sh [ENV]          (default ENV: .venv-node)
# ENV: a virtual environment that sees the packages of $BASE_PYTHON (default: python3, the Python
# that has torch), made with `venv --system-site-packages` unless it exists; the package goes in
# with what the GPU checks need from $WHEELHOUSE (default: wheelhouse/, made on a machine with
# internet by tools/wheelhouse.py) and nothing else: no package index, no pins (constraints.txt
# is the lock of the CPU machines; the machine's torch and packages are kept where they satisfy
# pyproject.toml's bounds).  What it installs: the core and the extras $EXTRAS (default
# test,pretrained), an extra that names the package itself followed as tools/wheelhouse.py
# follows it, but not the extras in $WITHOUT (default docs: the test extra's documentation
# tools; the GPU checks do not build the documentation).  The defaults match the wheelhouse's.
# Only wheels listed in $WHEELHOUSE/SHA256SUMS, with their hashes, are used: any other wheel or
# source archive in the folder is refused (pip would take every one it finds there); a file pip
# does not read (a script, a requirements file carried beside the wheels) is left alone.
# Exit status 2 with one line 'offline_install: error: ...' when it cannot.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ENV=${1:-.venv-node}
BASE_PYTHON=${BASE_PYTHON:-python3}
WHEELHOUSE=${WHEELHOUSE:-wheelhouse}
EXTRAS=${EXTRAS:-test,pretrained}
WITHOUT=${WITHOUT-docs}
fail() { echo "offline_install: error: $*" >&2; exit 2; }

[[ -d $WHEELHOUSE && ! -L $WHEELHOUSE ]] || fail "no folder $WHEELHOUSE/: make the wheelhouse with tools/wheelhouse.py where there is internet and carry it here"
[[ -f $WHEELHOUSE/SHA256SUMS ]] || fail "no $WHEELHOUSE/SHA256SUMS: make the wheelhouse with tools/wheelhouse.py where there is internet and carry it here"
# every file pip could take from the folder (a wheel or a source archive, by pip's own list of
# archive suffixes) must be one SHA256SUMS lists (and checks below)
listed=$(sed -E 's/^[0-9a-fA-F]{64} [ *]//' "$WHEELHOUSE/SHA256SUMS") || fail "cannot read $WHEELHOUSE/SHA256SUMS"
shopt -s nocasematch
archive='\.(whl|zip|tar|tar\.gz|tgz|tar\.bz2|tbz|tar\.xz|txz|tlz|tar\.lz|tar\.lzma)$'
while IFS= read -r -d '' f; do
  name=${f##*/}
  [[ $name =~ $archive ]] || continue
  grep -qxF -- "$name" <<<"$listed" && [[ -f $f ]] \
    || fail "$WHEELHOUSE/$(printf '%q' "$name") is not listed in SHA256SUMS: remove it, or make the wheelhouse again (only the listed wheels are installed)"
done < <(find "$WHEELHOUSE" -mindepth 1 -maxdepth 1 -print0)
shopt -u nocasematch
(cd "$WHEELHOUSE" && sha256sum --quiet -c SHA256SUMS) >/dev/null 2>&1 \
  || fail "a wheel in $WHEELHOUSE/ is missing or damaged (sha256sum -c SHA256SUMS there says which)"
"$BASE_PYTHON" -c 'import torch' 2>/dev/null || fail "$BASE_PYTHON has no torch: point BASE_PYTHON at the Python that has the machine's PyTorch"

if [[ ! -x $ENV/bin/python ]]; then
  "$BASE_PYTHON" -m venv --system-site-packages "$ENV" || fail "could not make the virtual environment $ENV"
  # A base Python that is itself a virtual environment (an HPC module, a conda-less venv): venv's
  # system site packages are those of the interpreter underneath, so the base's own site-packages
  # are added with a .pth file.
  "$BASE_PYTHON" - "$ENV" <<'PY' || fail "could not link $BASE_PYTHON's packages into $1"
import site, subprocess, sys
if sys.prefix != sys.base_prefix:
    env = sys.argv[1]
    target = subprocess.run([f"{env}/bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    with open(f"{target}/_fedpl_base_env.pth", "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
PY
fi
# what to install: the core and the extras, as tools/wheelhouse.py made the wheelhouse for them
reqs=$(mktemp) || fail "no temporary file"
trap 'rm -f "$reqs"' EXIT
"$ENV/bin/python" tools/wheelhouse.py --print-requirements --extras "$EXTRAS" --without "$WITHOUT" >"$reqs" \
  || fail "EXTRAS=$EXTRAS or WITHOUT=$WITHOUT: not extras of pyproject.toml (above: which)"
# only the wheelhouse: no configuration file, index or find-links of this machine
env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 \
  PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$ENV/bin/python" -m pip install -q --no-index --find-links "$WHEELHOUSE" -e . -r "$reqs" \
  || fail "pip could not install from $WHEELHOUSE/ (above: the package it lacks or that is too old; make the wheelhouse again, without --have for that package)"
"$ENV/bin/python" - <<'PY' || fail "the environment does not import fedpl_core with torch"
import torch, fedpl_core
print(f"fedpl {fedpl_core.__version__} from {fedpl_core.__file__.rsplit('/', 2)[0]}; torch {torch.__version__} "
      f"from {torch.__file__.rsplit('/', 2)[0]}; CUDA {'yes: ' + torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no'}")
PY
