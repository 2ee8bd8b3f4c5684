# fedpl: `make reproduce` (set up + run every notebook on the built-in data, cpu profile)
#        `make reproduce-gpu` (the same, gpu profile: one H100, about 45 min on paper; figures/gpu/)
#        `make test`      (set up + run the test suite)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup reproduce reproduce-gpu reproduce-full report test benchmark gpu-checks checked-outputs clean

$(STAMP): requirements.txt pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -c constraints.txt
	touch $(STAMP)

setup: $(STAMP)

reproduce: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile cpu --output reports

# the static site of the executed notebooks in reports/ -> outputs/site/index.html
report: $(STAMP)
	$(PY) -m fedpl_core.report.site --notebooks reports --out outputs/site

# store the smoke output of the notebook cells marked "# NBVAL_CHECK_OUTPUT" (nbval compares it)
checked-outputs: $(STAMP)
	$(PY) tools/checked_outputs.py

# the gpu profile (fedpl_core/profiles.py): executed notebooks -> reports/gpu/, figures and
# tables -> figures/gpu/, run cache -> results/gpu/ (never the cpu run's figures/ and results/)
reproduce-gpu: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile gpu --output reports/gpu

# on a machine with a GPU, before reproduce-gpu: the GPU tests, every notebook's smoke profile on
# the GPU (outputs/gpu-checks/), and the throughput benchmarks (figures/bench_gpu_throughput_cuda.*)
gpu-checks: $(STAMP)
	$(PY) -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'gpu-checks: torch sees no CUDA GPU')"
	$(PY) -m pytest -q -rs tests/test_gpu.py
	$(PY) -m fedpl_core reproduce --profile smoke --output outputs/gpu-checks
	$(PY) benchmarks/gpu_throughput.py --clients 8 32 128 --models cnn resnet18 --device cuda
	$(PY) benchmarks/grid_throughput.py --device cuda --backends serial spawn threads --workers 4

reproduce-full: $(STAMP)
	$(PY) -m fedpl_core reproduce --profile full

test: $(STAMP)
	$(PY) -m pytest -q

benchmark: $(STAMP)
	$(PY) benchmarks/engine_overhead.py --model cnn --rounds 1 --repeats 3 --channels-last
	OMP_NUM_THREADS=1 $(PY) benchmarks/engine_overhead.py --model cnn --rounds 1 --repeats 3 --channels-last --threads 1
	$(PY) benchmarks/engine_overhead.py --model resnet18 --rounds 1 --per-client 128 --image-size 16 --test 256
	OMP_NUM_THREADS=1 $(PY) benchmarks/scaling.py --threads 1 --methods fedavg fedbn pfl

clean:
	rm -rf $(VENV) outputs results .pytest_cache
