from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from toy import one_class_partition, toy_dataset  # noqa: F401 (tests/ is on sys.path)

torch.set_num_threads(1)  # tiny models: thread start-up and contention cost more than they gain


@pytest.fixture
def toy():
    ds = toy_dataset()
    return ds.subset(np.arange(300)), ds.subset(np.arange(300, 400))


@pytest.fixture
def toy_partition(toy):
    return one_class_partition(toy[0])


@pytest.fixture
def main(capsys, tmp_path, monkeypatch):
    """``main(*args)`` runs the CLI in this process: ``.returncode``, ``.stdout``, ``.stderr``."""
    from fedpl_core.apps.cli import main as cli_main

    monkeypatch.setenv("FEDPL_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)

    def call(*args):
        capsys.readouterr()
        try:
            rc = cli_main([str(a) for a in args])
        except SystemExit as e:  # argparse
            rc = e.code
        out = capsys.readouterr()
        return SimpleNamespace(returncode=rc, stdout=out.out, stderr=out.err)

    return call


@pytest.fixture
def tiny_docs(tmp_path):
    """The site's configuration with a one-line front page: a fast build (the site builder's
    tests)."""
    import shutil

    root = Path(__file__).resolve().parent.parent
    d = tmp_path / "docs"
    d.mkdir()
    shutil.copy(root / "docs" / "conf.py", d)
    shutil.copy(root / "docs" / "docutils.conf", d)
    (d / "index.md").write_text("# Front\n\n```{toctree}\nfindings\nnotebooks/index\n```\n")
    return d
