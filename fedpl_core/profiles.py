"""Run profiles shared by every notebook: ``smoke``, ``cpu`` and ``full``.

One parameter, ``profile``, decides how big a notebook's runs are:

========  ================================================================  ======================
profile   what it is for                                                    budget
========  ================================================================  ======================
smoke     the test suite: every cell runs, the numbers mean nothing         90 s or less a notebook
cpu       the default: converged runs with 3 seeds on 2 CPU cores           15 min or less
full      the papers' settings (models, image sizes, schedules): a GPU      hours
========  ================================================================  ======================

Each study maps a profile to its settings (``studies.fedpsl.settings(profile)``,
``studies.surgical.make_settings(profile)``, ``studies.benchmark.settings(profile)``; the
introduction notebook picks its few values with :func:`pick`);
any single notebook parameter can still be overridden with papermill
(``papermill nb.ipynb out.ipynb -p profile cpu -p seeds "[0, 1]"``).

>>> pick("cpu", smoke=1, cpu=3, full=5)
3
>>> check_profile("gpu")
Traceback (most recent call last):
...
ValueError: unknown profile 'gpu': choose one of smoke, cpu, full
"""
from __future__ import annotations

from typing import Literal, TypeVar

PROFILES = ("smoke", "cpu", "full")
Profile = Literal["smoke", "cpu", "full"]
T = TypeVar("T")


def check_profile(profile: str) -> str:
    """``profile`` itself, or a ``ValueError`` naming the profiles there are."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    return profile


def pick(profile: str, *, smoke: T, cpu: T, full: T) -> T:
    """The value of ``profile`` among three."""
    return {"smoke": smoke, "cpu": cpu, "full": full}[check_profile(profile)]


def engine_options(profile: str) -> dict:
    """Engine settings a profile adds to every run: the ``cpu`` profile trains and
    evaluates in ``channels_last`` layout (NHWC), 1.24x faster for the small CNN on one
    thread (16 rounds of FedAvg on 1,000 images at 32 px: 8.8 s -> 7.1 s on this project's
    machine).  The numbers differ from the default layout by float rounding only (final
    AUROC within about 3e-4), not in kind; ``smoke`` and ``full`` keep the default layout.

    >>> engine_options("cpu"), engine_options("full")
    ({'channels_last': True}, {})
    """
    return {"channels_last": True} if check_profile(profile) == "cpu" else {}


def default_workers(profile: str, device: str = "auto") -> int:
    """Worker processes for ``run_many``: one per CPU core in the cpu profile on a CPU
    (each run single-threaded), else 1 (smoke: starting workers costs more than it
    saves; a GPU: one device)."""
    import os

    import torch

    check_profile(profile)
    on_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
    return max(1, os.cpu_count() or 1) if profile == "cpu" and on_cpu else 1


def prepare(profile: str, device: str = "auto") -> str:
    """Check ``profile`` and set up torch for it; returns the profile.

    On a CPU the small-CNN profiles (smoke, cpu) run with one torch thread: their
    convolutions gain little from two, and two threads waiting on each other on a busy
    2-core machine can make a run many times slower.
    """
    import torch

    check_profile(profile)
    on_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
    if profile != "full" and on_cpu:
        torch.set_num_threads(1)
    return profile
