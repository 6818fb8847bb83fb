# The README's commands: `make demo`, `make test`, `make docs`. Each creates .venv if it is missing.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO   := $(VENV)/.installed-demo
SITE   := docs/_build/html

.PHONY: demo test test-notebooks lint docs docs-check bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# the test suite's and the docs' environment: every extra
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,jaxdecomp]"
	touch $(STAMP) $(DEMO)

# the demo's: the package and its own dependencies only
$(DEMO): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[demo]"
	touch $(DEMO)

demo: $(DEMO)
	$(PY) -m solvers run navier-stokes --ic taylor-green --n 64 --re 1600 --t-end 20 --checkpoint-every 200 --out runs/tgv --overwrite

# Two workers for the single-process tests (compiles and runs overlap on the 2-core CI machine), then the
# multi-process and cluster tests after them, two test files at a time (--dist loadfile: a file's tests run one
# after another on one worker, so the Slurm cluster and the fault scenarios never overlap themselves). Those tests
# wait on heartbeats, deadlines and daemons for about half their time; their deadlines have a margin of at least
# twice what they measure with another such file running beside them. The tutorials' notebooks are executed, and
# their closing checks run, by `make docs` (docs/_ext/tutorials.py; a notebook that fails or shows no figure fails
# the build): CI runs both. `make test-notebooks` executes them as tests, two at a time, and leaves them where
# `make docs` then takes them without executing them again.
test: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not serial and not notebooks"
	$(PY) -m pytest -q -n 2 --dist loadfile -m serial

test-notebooks: $(STAMP)
	XFFT_NOTEBOOK_OUTPUTS=$(CURDIR)/docs/_build/notebooks $(PY) -m pytest -q -n 2 -m notebooks tests/notebooks

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# The site, offline and strict: every warning (a broken reference, a public name without a docstring, a notebook
# that raises, shows no figure or shows a figure as text) fails. -E: every page is read again, so no warning hides
# in an unchanged page. A notebook is executed only when no executed copy of its source is found, in
# docs/_build/notebooks (where `make test-notebooks` leaves the notebooks it executed, and a previous build its
# own), two at a time (docs/_ext/tutorials.py).
docs: $(STAMP)
	$(PY) -m sphinx -b html -n -W --keep-going -E -q docs $(SITE)

# Every page of the built site in headless Chromium (apt-get install chromium): console errors, math, every image
# loaded, a figure on every tutorial, no inherited boilerplate and whole-sentence summaries on the API pages; every
# link of the whole tree (_modules/ included) on disk. Screenshots in docs/_build/screenshots.
docs-check: $(STAMP)
	$(PY) tests/docs/browser_check.py $(SITE) --out docs/_build/screenshots

bench: $(STAMP)
	$(PY) benchmarks/fft.py

clean:
	rm -rf $(VENV) .pytest_cache docs/_build
