"""Every registered method's numbers on a tiny run are pinned: a restructuring of the
package (issue 26) must leave them identical.

The tiny run is the reliability tests' setting (3 classes, 28 px, 240 images, width-8 CNN,
2 rounds; single-label methods on the synthetic skin data) with a client validation split,
half the clients a round, the engine's augmentation and kept optimizer state, so that
sampling, views, selection and optimizer state are all on the path.  Every number of the
per-round history but the timings is compared to ``tests/fixtures/pinned_numbers.json``
at a relative tolerance of 1e-6 (the same code on this project's machines, with one torch
thread as ``tests/conftest.py`` sets, gives the same bits; a changed computation moves them
far more).

The file was written by the code before the restructuring, with
``python tests/test_pinned_numbers.py --write``; rewrite it only for a change that is meant
to change numbers, and say so in the commit.
"""
import json
import math
import os
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability_methods import NAMES, TIME_KEYS, config  # noqa: E402

from fedpl_core import experiments as E  # noqa: E402

PINNED = Path(__file__).with_name("fixtures") / "pinned_numbers.json"


def history(name: str) -> list[dict]:
    cfg = config(name, client_val_fraction=0.2, client_fraction=0.5, augment="flip_shift", optimizer_state="keep")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = E.run(cfg)
    return [{k: v for k, v in h.items() if k not in TIME_KEYS} for h in res.history]


def same(a, b) -> bool:
    """Equal structure; floats equal at a relative 1e-6 (NaN equals NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        fa, fb = float(a), float(b)
        return (math.isnan(fa) and math.isnan(fb)) or math.isclose(fa, fb, rel_tol=1e-6, abs_tol=1e-9)
    return a == b


def test_every_registered_method_is_pinned():
    pinned = json.loads(PINNED.read_text())
    assert sorted(pinned) == sorted(NAMES), "a method was added or removed: pin it (see the module docstring)"


@pytest.mark.parametrize("name", NAMES)
def test_numbers_of_a_tiny_run_are_unchanged(name):
    pinned = json.loads(PINNED.read_text())
    got = json.loads(json.dumps(history(name)))  # the JSON round trip the file went through
    assert same(got, pinned[name]), f"{name}: the tiny run's numbers changed"


def test_same_tells_a_changed_number():
    assert same({"a": [1.0, float("nan")]}, {"a": [1.0 + 1e-9, float("nan")]})
    assert not same({"a": [1.0]}, {"a": [1.0001]}) and not same({"a": 1}, {"b": 1})


if __name__ == "__main__" and "--write" in sys.argv:
    import torch

    torch.set_num_threads(1)  # as tests/conftest.py sets it: the thread count changes float sums
    PINNED.parent.mkdir(exist_ok=True)
    PINNED.write_text(json.dumps({n: history(n) for n in NAMES}, indent=1, sort_keys=True) + "\n")
    print(f"pinned {len(NAMES)} methods -> {PINNED}")
