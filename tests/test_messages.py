"""Warnings print as one line each, once a process (fedpl_core.base.messages)."""

import subprocess
import sys

CODE = """
import warnings
from fedpl_core.base.messages import use_one_line_warnings
use_one_line_warnings()
for _ in range(3):
    warnings.warn("client G has 0 positives of Hernia")
    with warnings.catch_warnings():  # what every evaluation does: it resets Python's once-per-location rule
        warnings.simplefilter("ignore", UserWarning)
warnings.warn("another message")
with warnings.catch_warnings(record=True) as rec:  # a block that records still sees a repeat
    warnings.simplefilter("always")
    warnings.warn("another message")
print(len(rec))
"""


def test_a_repeated_warning_prints_once_and_a_recording_block_sees_it():
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines == [
        "fedpl: warning: UserWarning: client G has 0 positives of Hernia",
        "fedpl: warning: UserWarning: another message",
    ]
    assert r.stdout.strip() == "1"
