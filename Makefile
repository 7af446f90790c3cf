# Point-to-point, demystified: the two commands.
#   make lab    set up .venv (first time only) and open the course in JupyterLab
#   make test   set up .venv and run the tests a reader needs (about 15 minutes on 2 cores):
#               harness, lessons, claims ledger, every notebook, the graders vs solutions/
#               at their fast world sizes, the doctor (one script per rule), one notebook
#               in real JupyterLab
#   make test-all  (maintainers, CI: .ci/run) make test plus the tests marked all_lane:
#               the graders' catalogue of learner bodies, every grader at every world size,
#               the doctor's whole catalogue, every notebook in JupyterLab, the
#               graders-fail-on-the-stubs proof
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
# pytest's workers (xdist) in make test, test-all, test-fast: one per core this process may use,
# plus one, so that a core whose worker waits (a hang held until it is called stuck, a deadline,
# JupyterLab) has other work. More do not help: the lanes keep the cores busy. Measured on 2
# cores, make test's pytest: 854 s with 3 workers, 846 s with 4, and 1,646 CPU-seconds of the
# machine busy (/proc/stat) in those 846 s. (time's user+sys, 975 s, leaves out the fork servers
# and their workers: no process waits for them, so their CPU is counted nowhere.)
# `make test JOBS=2` chooses.
JOBS   ?= $(shell $(PYTHON) -c 'import os; print(1 + (len(os.sched_getaffinity(0)) \
  if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))')
LOCK   := requirements.lock

.PHONY: lab reset test test-all test-fast check notebooks bench clean setup torch-install \
	browser-deps lock mutants lint

setup: $(STAMP)

# Rebuilt only when the lock or pyproject.toml change: fast when present. --no-deps installs
# exactly the lock's lines (it is complete); pip check then fails loudly if a torch other than
# the CPU build came in (it would want nvidia-* packages the lock does not have).
$(STAMP): $(LOCK) pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python >= 3.10 needed, found " + sys.version.split()[0]'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@$(MAKE) --no-print-directory torch-install
	$(BIN)/python -m pip install --quiet --no-deps -r $(LOCK)
	$(BIN)/python -m pip check
	@# The lock has setuptools (torch needs it): no isolated build env to fetch it into.
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@# Build matplotlib's font cache now, not in a notebook's first cell (stderr breaks nbval).
	$(BIN)/python -c "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"
	@touch $(STAMP)

# torch first, alone. PyPI's Linux wheel of torch is the CUDA build (gigabytes of nvidia-*
# libraries the course never loads), so on Linux the lock pins the CPU build, torch==2.13.0+cpu,
# which PyTorch's CPU wheel index serves: pip looks there as well as PyPI, for torch only (the
# rest of the lock comes from PyPI). macOS's line is PyPI's torch==2.13.0, CPU-only there.
# When the +cpu wheel is found nowhere, pip stops before downloading anything (no other build
# satisfies the pin) and make says what to do in one sentence. Your PIP_EXTRA_INDEX_URL (a
# mirror of that index) and pip's other settings still apply; TORCH_INDEX=... replaces the URL.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_NOT_FOUND := torch==2.13.0+cpu (torch's CPU build, the lock's Linux pin) was found neither \
  on PyPI nor at $(TORCH_INDEX): connect this machine to that index, or set TORCH_INDEX or \
  PIP_EXTRA_INDEX_URL to a mirror of it, and run make again (PyPI's own Linux torch is the CUDA \
  build, gigabytes the course cannot use, so make does not fall back to it).

torch-install:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@grep -E '^torch ?[=;]' $(LOCK) > $(VENV)/torch-lock.txt
	@$(BIN)/python -m pip install --quiet --no-deps --only-binary=:all: \
	  --extra-index-url $(TORCH_INDEX) -r $(VENV)/torch-lock.txt \
	  || { echo; echo "make: $(TORCH_NOT_FOUND)"; exit 1; }

# You work in your own copies (notebooks/yours/, ignored by git): the committed notebooks keep
# showing the reference results. No news or update toasts (JupyterLab settings override).
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings
# The page JupyterLab opens and the URLs it prints (with the token): your copy of lesson 00,
# so an SSH, WSL or container user, whose browser make cannot open, can paste one line.
FIRST_LESSON := notebooks/yours/00_welcome.ipynb

lab: $(STAMP)
	@$(BIN)/python -m labs.harness.commands.copies
	@mkdir -p $(LAB_SETTINGS) && printf '%s\n' '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $(LAB_SETTINGS)/overrides.json
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --notebook-dir=. \
	  --LabApp.default_url=/lab/tree/$(FIRST_LESSON)

# A fresh copy of one lesson, e.g. `make reset LESSON=05` (your old copy is backed up).
reset: $(STAMP)
	@test -n "$(LESSON)" || { echo "usage: make reset LESSON=05"; exit 2; }
	$(BIN)/python -m labs.harness.commands.copies --reset $(LESSON)

# The two lanes (conftest.py's --lane; the tests each leaves out are marked all_lane, next to
# each test, pytest.ini). make test: what a reader needs to know that the course works on their
# machine, about 15 minutes on 2 cores from a fresh clone, set-up included (goal: 10): the set-up checks,
# lint, the harness and lesson tests, the claims ledger, every notebook under strict nbval and
# as a learner has it (unsolved), every grader against solutions/ at its fast world sizes (the
# smallest and 5), the doctor with one script per rule (a hazard and its fixed twin for each kind
# of problem it reports, one real-code script: the tests marked rule), the installer, one
# notebook with widgets in real JupyterLab.
test: $(STAMP) browser-deps lint
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --durations=25 --lane=test

# make test-all (maintainers; CI: .ci/run): make test plus everything marked all_lane: the
# graders' catalogue of learner bodies (tests/harness/test_graders.py, lessons' wrong bodies),
# every grader at every world size (1-8), the rest of the doctor's catalogue (second examples,
# other real-code scripts, world-size sweeps), every browser test, the graders-fail-on-the-stubs
# proof. 45-85 minutes on 2 cores, as measured.
test-all: $(STAMP) browser-deps lint
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --durations=25 --lane=all

# The linter (settings in pyproject.toml); `make test` runs it first.
lint: $(STAMP)
	$(BIN)/ruff check .

# The maintainers' fast lane: what a change to the harness or a solution can break, first.
# make test's lane (each grader at its smallest world size and at 5 ranks; no catalogue, no
# stubs proof) over tests/harness and tests/graders only, without the tests marked slow
# (torchrun jobs, a spawned benchmark, venvs made by the installer's test) nor the graders'
# own unit tests (tests/harness/test_graders.py, whose import loads the whole catalogue).
# No nbval (it runs no notebook, and loading it costs each process 4 s).
test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -m "not slow" tests/harness tests/graders \
	  --lane=test --ignore=tests/harness/test_graders.py \
	  -p no:nbval -o addopts="-p no:cacheprovider"

# The grade sheet (tests/check.py) replaces pytest's own summary: one line per lesson while it
# grades, then one per exercise. Grades are remembered in $(GRADES): a grader runs again only
# when what it grades changed (your code, the code it uses, the grader, the course's machinery).
#   make check             every lesson          make check LESSON=05   one, with every problem
#   make check FRESH=1     forget what was remembered and grade everything again
# Exit status 0 while the only failures are exercises not started yet; when one you wrote fails,
# pytest exits 1 and make says so ("*** [Makefile:...: check] Error 1", make's own status 2).
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
# ([tool.uv] in pyproject.toml), so nothing CUDA is locked. Linux's torch==2.13.0+cpu is listed
# on PyTorch's CPU index only: uv reads that index's torch page (--find-links), for torch alone.
UV_VERSION := 0.13.8
UV_VENV    ?= /tmp/p2p-demystified-uv
LOCK_CMD   := uv pip compile requirements.txt --universal --python-version 3.10 --no-header --quiet \
  --find-links $(TORCH_INDEX)/torch/

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
	  '# Linux pins that build, torch==2.13.0+cpu, from the PyTorch CPU index (make adds it, for torch).' \
	  '# Install: pip install --no-deps -r requirements.lock --extra-index-url $(TORCH_INDEX)'; \
	  $(UV_VENV)/bin/$(LOCK_CMD); } > $(LOCK).new || { rm -f $(LOCK).new; exit 1; }
	mv $(LOCK).new $(LOCK)

clean:
	rm -rf $(VENV) test-artifacts .pytest_cache
