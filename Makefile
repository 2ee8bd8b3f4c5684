# fedpl: `make smoke` (set up + every notebook in about a minute each, to see it work; numbers mean nothing)
#        `make reproduce` (set up + run every notebook on the built-in data, cpu profile)
#        `make reproduce-gpu` (the same, gpu profile: one GPU -> figures/gpu/; its cost: docs/gpu.md)
#        `make reproduce-paper` (the papers' schedules on the small model, notebooks 01-04 -> figures/paper/)
#        `make test`      (set up + lint, type check and run the test suite)
#        `make docs`      (the documentation site, offline -> outputs/docs/html/index.html)
# On an offline GPU machine with its own PyTorch (docs/gpu.md): `make OFFLINE=1 gpu-checks` and
# `make OFFLINE=1 reproduce-gpu` install from wheelhouse/ (made by `make wheelhouse` where there is
# internet) into $(NODE_ENV), a venv that sees the machine's torch, with no package index and no pins.
PYTHON ?= python3
VENV   ?= .venv
OFFLINE ?=
NODE_ENV ?= .venv-node
ifeq ($(OFFLINE),1)
PY     := $(NODE_ENV)/bin/python
STAMP  := $(NODE_ENV)/.installed
else
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
endif
# wheelhouse: the target machine's Python (3.12) and platform; --have NAME ... for what it has
WHEELHOUSE_ARGS ?= --python-version 3.12

.PHONY: setup reproduce smoke reproduce-paper reproduce-gpu reproduce-full docs test benchmark gpu-checks checked-outputs clean wheelhouse \
        offline-rehearsal

ifeq ($(OFFLINE),1)
$(STAMP): pyproject.toml
	BASE_PYTHON=$(PYTHON) bash tools/offline_install.sh $(NODE_ENV)
	touch $(STAMP)
else
$(STAMP): requirements.txt pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -c constraints.txt
	touch $(STAMP)
endif

setup: $(STAMP)

reproduce: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile cpu --output reports

# every notebook in the smoke profile, to see it work: each cell runs, its numbers mean nothing
# (executed notebooks -> outputs/smoke/reports/, figures and results under outputs/smoke/)
smoke: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile smoke --output outputs/smoke/reports

# the documentation site, offline (Sphinx + MyST-NB; docs/ and the executed notebooks in reports/)
# -> outputs/docs/html/index.html; a warning (a broken link, say) fails it
docs: $(STAMP)
	$(PY) -m fedpl_core.report.docs --notebooks reports --out outputs/docs

# store the smoke output of the notebook cells tagged nbval-check-output (nbval compares it)
checked-outputs: $(STAMP)
	$(PY) tools/checked_outputs.py

# the paper profile (fedpl_core/studies/parameters.py): the papers' training schedules on the small
# model, seeds chosen for power, notebooks 01-04 -> reports/paper/, figures/paper/, results/paper/
# (2.5 h or less a notebook on 2 cores)
reproduce-paper: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile paper --output reports/paper

# the gpu profile (fedpl_core/studies/parameters.py): executed notebooks -> reports/gpu/, figures and
# tables -> figures/gpu/, run cache -> results/gpu/ (never the cpu run's figures/ and results/)
reproduce-gpu: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile gpu --output reports/gpu

# on a machine with a GPU, before reproduce-gpu: environment, GPU tests, step times, every notebook's
# smoke profile on the GPU, the throughput benchmarks, the grid backends; each step with its own time
# limit, logs and results in outputs/gpu-checks/ (running again continues; GPU_CHECKS_ARGS: e.g.
# --budget 560, --redo smoke; docs/gpu.md)
GPU_CHECKS_ARGS ?=
gpu-checks: $(STAMP)
	$(PY) -m fedpl_core gpu-checks --out outputs/gpu-checks $(GPU_CHECKS_ARGS)

# on a machine with internet: the wheels the offline install needs (git-ignored wheelhouse/)
wheelhouse:
	$(PYTHON) tools/wheelhouse.py --dest wheelhouse $(WHEELHOUSE_ARGS)

# the offline install rehearsed on a CPU machine over a node's Python and torch (outputs/offline-rehearsal/;
# REHEARSAL_ARGS: PYTHON TORCH TORCHVISION, default python3.12 2.11.0 0.26.0)
offline-rehearsal:
	bash tools/offline_rehearsal.sh $(REHEARSAL_ARGS)

reproduce-full: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile full

# lint and format check (ruff), the type checker on the engine and the hooks (mypy), then the suite:
# tests/ and every notebook in the smoke profile, on two workers (a notebook's cells stay on one),
# printing the slowest tests
test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15

benchmark: $(STAMP)
	$(PY) benchmarks/engine_overhead.py --model cnn --rounds 1 --repeats 3 --channels-last
	OMP_NUM_THREADS=1 $(PY) benchmarks/engine_overhead.py --model cnn --rounds 1 --repeats 3 --channels-last --threads 1
	$(PY) benchmarks/engine_overhead.py --model resnet18 --rounds 1 --per-client 128 --image-size 16 --test 256
	OMP_NUM_THREADS=1 $(PY) benchmarks/scaling.py --threads 1 --methods fedavg fedbn pfl

clean:
	rm -rf $(VENV) outputs results .pytest_cache
