# The README's two commands: `make demo` and `make test`. Both create .venv if it is missing.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,jaxdecomp]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m solvers run navier-stokes --ic taylor-green --n 64 --re 1600 --t-end 20 --checkpoint-every 200 --out runs/tgv --overwrite

# Two workers for the single-process tests (compiles and runs overlap on the 2-core CI machine), then the
# multi-process and cluster tests alone, so that their deadlines see an otherwise idle machine.
test: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not serial"
	$(PY) -m pytest -q -m serial

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) benchmarks/fft.py

clean:
	rm -rf $(VENV) .pytest_cache
