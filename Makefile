# Point-to-point, demystified: the two commands.
#   make lab    set up .venv (first time only) and open the course in JupyterLab
#   make test   set up .venv and run every test: harness, graders (vs solutions/), notebooks
#   make test-fast  (maintainers) the harness and the graders vs solutions/: no notebooks, no
#               browser, no torchrun jobs (tests marked slow)
#   make check  grade YOUR exercises in labs/ against real workers (LESSON=05: one lesson)
#   make reset LESSON=05   a fresh copy of lesson 05 in notebooks/yours/ (yours is backed up)
#   make lock   (maintainers) recompile requirements.lock after editing requirements.txt
# Everything installs from requirements.lock (exact versions) into .venv; nothing is installed
# system-wide except Debian's chromium for the browser test (see tests/browser), when apt-get can.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2
LOCK   := requirements.lock

.PHONY: lab reset test test-fast check notebooks bench clean setup browser-deps lock mutants lint

setup: $(STAMP)

# Rebuilt only when the lock or pyproject.toml change: fast when present. --no-deps installs
# exactly the lock's lines (it is complete); pip check then fails loudly if a torch other than
# the CPU build came in (it would want nvidia-* packages the lock does not have).
$(STAMP): $(LOCK) pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python >= 3.10 needed, found " + sys.version.split()[0]'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-deps -r $(LOCK)
	$(BIN)/python -m pip check
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@# Build matplotlib's font cache now, not in a notebook's first cell (stderr breaks nbval).
	$(BIN)/python -c "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"
	@touch $(STAMP)

# You work in your own copies (notebooks/yours/, ignored by git): the committed notebooks keep
# showing the reference results. No news or update toasts (JupyterLab settings override).
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings

lab: $(STAMP)
	@$(BIN)/python -m labs.harness.commands.copies
	@mkdir -p $(LAB_SETTINGS) && printf '%s\n' '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $(LAB_SETTINGS)/overrides.json
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --notebook-dir=. notebooks/yours/00_welcome.ipynb

# A fresh copy of one lesson, e.g. `make reset LESSON=05` (your old copy is backed up).
reset: $(STAMP)
	@test -n "$(LESSON)" || { echo "usage: make reset LESSON=05"; exit 2; }
	$(BIN)/python -m labs.harness.commands.copies --reset $(LESSON)

test: $(STAMP) browser-deps lint
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --durations=25

# The linter (settings in pyproject.toml); `make test` runs it first.
lint: $(STAMP)
	$(BIN)/ruff check .

# The maintainers' fast lane: what a change to the harness or a solution can break, first.
# Each grader at its smallest world size and at 5 ranks (make test: all of them). Leaves to
# `make test`: tests marked slow (torchrun jobs, a spawned benchmark), the catalogue of wrong
# and right learner bodies (tests/harness/test_graders.py) and the proof that every grader
# fails on the stubs. No nbval (it runs no notebook, and loading it costs each process 4 s).
test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -m "not slow" tests/harness tests/graders \
	  --world-sizes=fast --ignore=tests/harness/test_graders.py \
	  --deselect tests/harness/test_exercise_contract.py::test_graders_fail_on_the_stubs \
	  -p no:nbval -o addopts="-p no:cacheprovider"

# The grade sheet (tests/check.py) replaces pytest's own summary: one line per lesson while it
# grades, then one per exercise. Grades are remembered in $(GRADES): a grader runs again only
# when what it grades changed (your code, the code it uses, the grader, the course's machinery).
#   make check             every lesson          make check LESSON=05   one, with every problem
#   make check FRESH=1     forget what was remembered and grade everything again
# Exit status 0 while the only failures are exercises not started yet; 1 if one you wrote fails.
# No nbval (pytest.ini's addopts): the graders need no notebooks, and it takes seconds to load.
GRADES := $(VENV)/p2p-grades.json

check: $(STAMP)
	@$(if $(FRESH),rm -f $(GRADES))
	@echo "Grading your exercises in labs/ on real workers$(if $(LESSON), (lesson $(LESSON)))..."
	@$(BIN)/python -m pytest tests/graders --impl=labs --remember=$(GRADES) \
	  $(if $(LESSON),--lesson=$(LESSON)) -qq --tb=no -rN --continue-on-collection-errors \
	  -o console_output_style=classic -p no:nbval -o addopts="-p no:cacheprovider"

notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval notebooks -n $(JOBS) --dist loadfile

# Wrong bodies generated from each reference solution, graded by its grader: per exercise,
# mutants killed / survived (`make mutants EXERCISE=ring.ring_all_reduce LIMIT=30`).
LIMIT ?= 10
mutants: $(STAMP)
	$(BIN)/python -m tests.mutation --limit $(LIMIT) $(EXERCISE)

bench: $(STAMP)
	$(BIN)/python -m labs.bench

browser-deps:
	@sh tests/browser/install_chromium.sh

# requirements.txt (ranges, edited by hand) -> requirements.lock (exact, generated; commit both).
# uv runs from its own throwaway venv so .venv holds exactly the lock. --universal with 3.10 as
# the floor: one file for Python >= 3.10 on every OS. torch's dependencies are its CPU wheel's
# ([tool.uv] in pyproject.toml), so nothing CUDA is locked.
UV_VERSION := 0.13.8
UV_VENV    ?= /tmp/p2p-demystified-uv
LOCK_CMD   := uv pip compile requirements.txt --universal --python-version 3.10 --no-header --quiet

lock:
	@test -x $(UV_VENV)/bin/uv && $(UV_VENV)/bin/uv --version | grep -q ' $(UV_VERSION)' \
	  || { $(PYTHON) -m venv $(UV_VENV) && $(UV_VENV)/bin/pip install --quiet uv==$(UV_VERSION); }
	@echo '$(LOCK_CMD) > $(LOCK)'
	@{ printf '%s\n' \
	  '# Exact versions of every dependency, compiled from requirements.txt. Generated: do not edit.' \
	  '# Regenerate with `make lock`, which runs (uv $(UV_VERSION), in the repository root):' \
	  '#   $(LOCK_CMD)' \
	  '# Compiled for Python >= 3.10 on any OS (universal: markers pick the lines for yours);' \
	  '# installed and tested on Linux x86_64, CPython 3.11. torch 2.13.0 is resolved with the' \
	  '# dependencies of its CPU build ([tool.uv] in pyproject.toml): no nvidia-* or triton.' \
	  '# Install: pip install --no-deps -r requirements.lock (make does; see the README for laptops).'; \
	  $(UV_VENV)/bin/$(LOCK_CMD); } > $(LOCK).new || { rm -f $(LOCK).new; exit 1; }
	mv $(LOCK).new $(LOCK)

clean:
	rm -rf $(VENV) test-artifacts .pytest_cache
