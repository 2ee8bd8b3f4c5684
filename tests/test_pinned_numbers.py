"""Every registered method's numbers on a tiny run are pinned, **exactly**: a change of the
package that moves one bit of one method's numbers fails here, and must say so (and re-run
the committed results, which 40 rounds of training can move far more than a bit).

The tiny run is the reliability tests' setting (3 classes, 28 px, 240 images, width-8 CNN,
2 rounds; single-label methods on the synthetic skin data) with a client validation split,
half the clients a round, the engine's augmentation and kept optimizer state, so that
sampling, views, selection and optimizer state are all on the path.  Every number of the
per-round history but the timings is compared, after the JSON round trip the file went
through.

The last bits of a float computation depend on the numeric platform as well as on the code:
torch's CPU kernels and the CPU's vector instructions pick different summation orders
(:func:`fedpl_core.runs.provenance.numeric_platform`; one torch thread, as ``tests/conftest.py``
sets).  So ``tests/fixtures/pinned_numbers.json`` holds pins per platform, each recorded on
that platform, never copied from another:

* every registered method is pinned on at least one platform (the platform where it was
  made); pins of a method that is no longer registered fail too;
* on a platform that has pins of a method, its numbers must be **equal** (NaN equals NaN);
* on a platform that has pins, but not of this method, the method's test is skipped: "not
  recorded here (recorded on <platform>)";
* on a platform with no pins at all, the numbers are compared at a relative 1e-6 with the
  pins of each platform that has them (the same code elsewhere agrees to about 1e-7 after 2
  rounds), and a warning says how to add this platform's exact pins.

``python tests/test_pinned_numbers.py --write`` records this platform's pins of every
registered method (replacing its entry); ``--write NAME ...`` of the named methods only;
``--write --missing`` of the methods no platform has pinned yet (a new method: its pins are
recorded where it is made).  Any ``--write`` also drops the pins of methods no longer
registered.  Run it on a clean checkout of code whose numbers you have not changed, or for a
change that is meant to change numbers (say so in the commit).  The entry ``"earlier
machine"`` was written before platforms were recorded, by the code before the package's
restructuring.
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

from fedpl_core.runs.provenance import numeric_platform  # noqa: E402
from fedpl_core.runs.runner import run  # noqa: E402

PINNED = Path(__file__).with_name("fixtures") / "pinned_numbers.json"


def history(name: str) -> list[dict]:
    cfg = config(name, client_val_fraction=0.2, client_fraction=0.5, augment="flip_shift", optimizer_state="keep")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run(cfg)
    return [{k: v for k, v in h.items() if k not in TIME_KEYS} for h in res.history]


def same(a, b, rel: float = 0.0) -> bool:
    """Equal structure; floats equal (``rel`` = 0) or within a relative ``rel``; NaN equals NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return fa == fb if rel == 0 else math.isclose(fa, fb, rel_tol=rel, abs_tol=1e-9)
    return a == b


def platform_key() -> str:
    import torch

    assert torch.get_num_threads() == 1, "tests/conftest.py sets one torch thread"
    return numeric_platform()["key"]


def where_pinned(pinned: dict, name: str) -> list[str]:
    """The platforms whose entry has pins of ``name``."""
    return [plat for plat, pins in pinned.items() if name in pins]


def test_every_registered_method_is_pinned_somewhere():
    pinned = json.loads(PINNED.read_text())
    missing = [n for n in NAMES if not where_pinned(pinned, n)]
    assert not missing, (
        f"not pinned on any platform: {missing}; record them here with "
        "`python tests/test_pinned_numbers.py --write --missing` (module docstring)"
    )
    gone = sorted({n for pins in pinned.values() for n in pins} - set(NAMES))
    assert not gone, (
        f"pins of methods no longer registered: {gone}; "
        "drop them with `python tests/test_pinned_numbers.py --write --missing`"
    )


@pytest.mark.parametrize("name", NAMES)
def test_numbers_of_a_tiny_run_are_unchanged(name):
    pinned = json.loads(PINNED.read_text())
    key = platform_key()
    there = where_pinned(pinned, name)
    if key in pinned and name not in pinned[key]:
        pytest.skip(f"not recorded here (recorded on {' and '.join(repr(p) for p in there) or 'no platform'})")
    got = json.loads(json.dumps(history(name)))  # the JSON round trip the file went through
    if key in pinned:
        assert same(got, pinned[key][name]), f"{name}: the tiny run's numbers changed (exact pins of {key})"
        return
    assert there, f"{name}: pinned on no platform (module docstring)"
    close = [plat for plat in there if same(got, pinned[plat][name], rel=1e-6)]
    assert close, f"{name}: the tiny run's numbers changed (beyond 1e-6 of the pins of every platform)"
    warnings.warn(
        f"no exact pins for this platform ({key}); compared at 1e-6 with {close[0]!r}: "
        "add them with `python tests/test_pinned_numbers.py --write` on unchanged code"
    )


def write(pins: dict, key: str, names: list[str], record) -> dict:
    """``pins`` with this platform's (``key``) pins of ``names`` recorded (``record(name)``),
    the other platforms' left as they are, and every platform's pins of unregistered methods
    dropped (an entry left empty is removed)."""
    pins = {plat: dict(p) for plat, p in pins.items()}
    if names:
        pins.setdefault(key, {}).update({n: record(n) for n in names})
    for plat in list(pins):
        pins[plat] = {n: v for n, v in pins[plat].items() if n in NAMES}
        if not pins[plat]:
            del pins[plat]
    return pins


def test_write_records_this_platform_only_and_never_copies():
    pins = {"A": {NAMES[0]: [1], "gone": [2]}, "B": {NAMES[0]: [3], NAMES[1]: [4]}}
    got = write(pins, "C", [NAMES[1]], lambda n: ["new"])
    assert got == {"A": {NAMES[0]: [1]}, "B": {NAMES[0]: [3], NAMES[1]: [4]}, "C": {NAMES[1]: ["new"]}}
    assert write({"A": {"gone": [2]}}, "C", [], lambda n: 1 / 0) == {}


def test_same_tells_a_changed_number():
    assert same({"a": [1.0, float("nan")]}, {"a": [1.0, float("nan")]})
    assert not same({"a": [1.0]}, {"a": [1.0 + 2**-52]})  # the last bit
    assert same({"a": [1.0]}, {"a": [1.0 + 1e-9]}, rel=1e-6) and not same({"a": [1.0]}, {"a": [1.0001]}, rel=1e-6)
    assert not same({"a": 1}, {"b": 1}) and not same({"a": float("nan")}, {"a": 1.0}, rel=1e-6)


if __name__ == "__main__" and "--write" in sys.argv:
    # python tests/test_pinned_numbers.py --write [--missing | NAME ...]
    import torch

    torch.set_num_threads(1)  # as tests/conftest.py sets it: the thread count changes float sums
    args = [a for a in sys.argv[1:] if a != "--write"]
    PINNED.parent.mkdir(exist_ok=True)
    pins = json.loads(PINNED.read_text()) if PINNED.exists() else {}
    if args == ["--missing"]:
        names = [n for n in NAMES if not where_pinned(pins, n)]
    elif args:
        unknown = sorted(set(args) - set(NAMES))
        if unknown:
            sys.exit(f"not registered: {', '.join(unknown)}")
        names = list(args)
    else:
        names = list(NAMES)
    key = platform_key()
    pins = write(pins, key, names, history)
    PINNED.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    print(f"pinned {len(names)} method(s) for {key} -> {PINNED}" + (f": {', '.join(names)}" if names else ""))
