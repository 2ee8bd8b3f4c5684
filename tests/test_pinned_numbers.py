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
* on any other platform, the method's test is **skipped**, saying on which platforms its numbers
  were recorded and how to record this platform's (``--write``, below).  A platform's numbers
  are never compared with another platform's pins, not even within a tolerance: a tolerance
  cannot tell a changed line of code from another platform's float order, and a foreign
  platform would pass by matching an older platform's pins.  (:func:`pins_here` decides; its
  own tests below check the decision.)

``python tests/test_pinned_numbers.py --write`` records this platform's pins of every
registered method (replacing its entry); ``--write NAME ...`` of the named methods only;
``--write --missing`` of the methods no platform has pinned yet (a new method: its pins are
recorded where it is made).  Any ``--write`` also drops the pins of methods no longer
registered.  Run it on a clean checkout of code whose numbers you have not changed, or for a
change that is meant to change numbers (say so in the commit).  The entry ``"earlier
machine"`` was written before platforms were recorded, by the code before the package's
restructuring: no platform's key is that, so it is never compared.
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


def same(a, b) -> bool:
    """Equal structure and equal numbers, to the last bit; NaN equals NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return fa == fb
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


def pins_here(pinned: dict, key: str, name: str) -> tuple[list | None, str]:
    """``(pins, "")``: the pins of ``name`` recorded on the platform ``key``, to compare exactly;
    or ``(None, why)`` when this platform has none of it: the test is skipped with ``why``,
    which names the platforms where they were recorded and how to record this one's.  Never
    another platform's pins."""
    if name in pinned.get(key, {}):
        return pinned[key][name], ""
    there = ", ".join(repr(p) for p in where_pinned(pinned, name)) or "no platform"
    how = f"--write {name}" if key in pinned else "--write"
    return None, (
        f"{name}: its numbers were recorded on {there}, not on this platform ({key!r}), and pins are "
        f"exact on their own platform only; record this platform's with "
        f"`python tests/test_pinned_numbers.py {how}` on unchanged code"
    )


@pytest.mark.parametrize("name", NAMES)
def test_numbers_of_a_tiny_run_are_unchanged(name):
    pins, why = pins_here(json.loads(PINNED.read_text()), platform_key(), name)
    if pins is None:
        pytest.skip(why)
    got = json.loads(json.dumps(history(name)))  # the JSON round trip the file went through
    assert same(got, pins), f"{name}: the tiny run's numbers changed (exact pins of {platform_key()})"


def test_pins_are_this_platforms_or_none():
    a, b = NAMES[0], NAMES[1]
    pinned = {"P1": {a: [1.0], b: [2.0]}, "P2": {a: [1.0 + 1e-12]}}
    assert pins_here(pinned, "P1", a) == ([1.0], "")  # exact pins of its own platform
    assert pins_here(pinned, "P2", a) == ([1.0 + 1e-12], "")  # its own, not P1's close ones
    pins, why = pins_here(pinned, "P3", a)  # a platform with no pins: skipped, never compared with P1's or P2's
    assert pins is None and "'P1', 'P2'" in why and "'P3'" in why and why.endswith("--write` on unchanged code")
    pins, why = pins_here(pinned, "P2", b)  # pins here, but not of this method: record it by name
    assert pins is None and "recorded on 'P1'" in why and f"--write {b}`" in why
    pins, why = pins_here({}, "P1", a)
    assert pins is None and "recorded on no platform" in why
    # another thread count is another platform: its numbers differ in the last bits
    one = "torch 2, x86_64 AVX2 (simd 1), 1 thread(s)"
    assert pins_here({one: {a: [1.0]}}, one.replace("1 thread", "2 thread"), a)[0] is None


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
    assert not same({"a": 1}, {"b": 1}) and not same({"a": float("nan")}, {"a": 1.0})
    assert not same({"a": [1.0, 2.0]}, {"a": [1.0]}) and not same({"a": None}, {"a": 1.0})


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
