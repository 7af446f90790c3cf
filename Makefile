# Point-to-point, demystified: the two commands.
#   make lab    set up .venv (first time only) and open the course in JupyterLab
#   make test   set up .venv and run every test: harness, graders (vs solutions/), notebooks
#   make check  grade YOUR exercises in labs/ against real workers
# Everything installs from requirements.txt into .venv; nothing is installed system-wide
# except Debian's chromium for the browser test (see tests/browser), when apt-get can.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2

.PHONY: lab test check notebooks bench clean setup browser-deps

setup: $(STAMP)

# Rebuilt only when requirements.txt or pyproject.toml change: fast when present.
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python >= 3.10 needed, found " + sys.version.split()[0]'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@# Build matplotlib's font cache now, not in a notebook's first cell (stderr breaks nbval).
	$(BIN)/python -c "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"
	@touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --notebook-dir=. notebooks/00_welcome.ipynb

test: $(STAMP) browser-deps
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

check: $(STAMP)
	$(BIN)/python -m pytest -m grader --impl=labs tests -q --tb=no -rN

notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval notebooks -n $(JOBS) --dist loadfile

bench: $(STAMP)
	$(BIN)/python -m labs.bench

browser-deps:
	@sh tests/browser/install_chromium.sh

clean:
	rm -rf $(VENV) test-artifacts .pytest_cache
