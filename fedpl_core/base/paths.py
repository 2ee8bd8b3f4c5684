"""Where figures, tables and cached results go, whatever the working directory.

One rule for the notebooks, the command line and the library:

1. ``$FEDPL_FIGURES`` (figures and tables) and ``$FEDPL_RESULTS`` (a folder per notebook's
   run cache) when set;
2. else, in the ``smoke`` profile, ``outputs/smoke/figures`` and ``outputs/smoke/results``
   under the checkout (git-ignored), or under a temporary folder when the package does not
   run from a checkout: a smoke run never writes into the committed ``figures/``;
3. else the checkout's ``figures/`` and ``results/`` when the package runs from a checkout
   (the folder above ``fedpl_core/`` has ``pyproject.toml`` and ``notebooks/``);
4. else ``figures/`` and ``results/`` under the working directory (an installed package).

The ``gpu`` and ``paper`` profiles write into a folder of their own under those of rules 3
and 4, ``figures/gpu/`` and ``results/gpu/`` (committed after a GPU session), ``figures/paper/``
and ``results/paper/``, so that neither overwrites the cpu run's committed ``figures/`` and
cached ``results/``.

A notebook picks its profile with :func:`notebook_outputs` (its setup cell), which also
prints where the outputs go; :func:`figures_dir` then follows that profile for every
``savefig`` and ``save_table`` of the kernel.  So ``papermill`` run from the repository
root and a JupyterLab kernel started in ``notebooks/`` write to the same folders.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The folder above the package: a checkout when :func:`checkout` says so.
#:
#: :meta hide-value:
PACKAGE_PARENT = Path(__file__).resolve().parents[2]

_profile: str | None = None  # the profile set by use_profile / notebook_outputs (None: not a smoke run)
#: Profiles whose figures and results go to a folder of their own inside ``figures/`` and
#: ``results/`` (rules 3 and 4 of the module docstring).
OWN_FOLDER = {"gpu": "gpu", "paper": "paper"}


def checkout() -> Path | None:
    """The repository the package runs from (its ``pyproject.toml`` and ``notebooks/``
    beside ``fedpl_core/``), or None for an installed package."""
    root = PACKAGE_PARENT
    if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir() and (root / "fedpl_core").is_dir():
        return root
    return None


def use_profile(profile: str | None) -> None:
    """Set the profile that :func:`figures_dir` and :func:`results_dir` follow in this
    process (None: no profile, as for the library)."""
    global _profile
    if profile is not None:
        from .validation import check_profile

        check_profile(profile)
    _profile = profile


def current_profile() -> str | None:
    """The profile set by :func:`use_profile`, or None."""
    return _profile


def _base(profile: str | None) -> Path:
    """The folder that holds ``figures/`` and ``results/`` for ``profile``."""
    root = checkout()
    if (profile if profile is not None else _profile) == "smoke":
        return (root / "outputs" if root else Path(tempfile.gettempdir()) / "fedpl-outputs") / "smoke"
    return root if root else Path.cwd()


def _own(profile: str | None) -> str:
    """The sub-folder of ``profile`` (None: the one set by :func:`use_profile`): ``"gpu"`` for
    the gpu profile, ``"paper"`` for the paper profile, else ``""``."""
    return OWN_FOLDER.get(profile if profile is not None else _profile, "")


def figures_dir(profile: str | None = None) -> Path:
    """Where figures and tables go (absolute): ``$FEDPL_FIGURES``, else
    ``outputs/smoke/figures`` in the smoke profile, else the checkout's ``figures/``
    (``figures/gpu/`` in the gpu profile), else ``./figures`` (``./figures/gpu``).
    ``profile`` None: the one set by :func:`use_profile`."""
    env = os.environ.get("FEDPL_FIGURES")
    if env:
        return Path(env).expanduser().resolve()
    return _base(profile) / "figures" / _own(profile)


def results_dir(name: str | None = None, profile: str | None = None) -> Path:
    """Where run results are cached (absolute), ``<...>/results/<name>``: ``$FEDPL_RESULTS``
    (then ``$FEDPL_RESULTS/<name>``), else ``outputs/smoke/results`` in the smoke profile,
    else the checkout's ``results/`` (``results/gpu/`` in the gpu profile), else
    ``./results`` (``./results/gpu``)."""
    env = os.environ.get("FEDPL_RESULTS")
    base = Path(env).expanduser().resolve() if env else _base(profile) / "results" / _own(profile)
    return base / name if name else base


def shown(path: str | Path, env: str | None = None) -> str:
    """``path`` as a notebook shows it, without the machine's folders: under ``$<env>`` (when
    that variable is set and holds it) as ``$<env>/...``, inside the checkout relative to it,
    under the home folder as ``~/...``; any other path as it is (a folder the user named)."""
    p = Path(path).expanduser()
    absolute = p.resolve() if p.is_absolute() else None
    candidates = []
    if env and os.environ.get(env):
        candidates.append((Path(os.environ[env]).expanduser().resolve(), f"${env}"))
    if checkout() is not None:
        candidates.append((checkout(), ""))
    candidates.append((Path.home().resolve(), "~"))
    for base, label in candidates:
        target = absolute if absolute is not None else p.resolve()
        if target == base or target.is_relative_to(base):
            rel = target.relative_to(base).as_posix()
            if not label:
                return rel if rel != "." else "the checkout"
            return label if rel == "." else f"{label}/{rel}"
    return str(path)


def describe(results: str | Path | None = None) -> str:
    """One line: ``figures -> <folder>, results -> <folder>``, each as :func:`shown` writes it
    (no machine path: the checkout's ``figures/`` shows as ``figures``)."""
    res = results_dir() if results is None else Path(results).expanduser().resolve()
    return f"figures -> {shown(figures_dir(), 'FEDPL_FIGURES')}, results -> {shown(res, 'FEDPL_RESULTS')}"


def notebook_outputs(profile: str, name: str, results: str | Path | None = None) -> str:
    """A notebook's setup: follow ``profile`` from now on in this kernel, print where the
    figures and results go, and return the results folder as text: ``results`` as given
    when the user passed one, else :func:`results_dir` ``(name)``."""
    use_profile(profile)
    res = str(results) if results is not None else str(results_dir(name))
    print(describe(res))
    return res
