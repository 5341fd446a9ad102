# Two commands do all the set-up: `make demo` and `make test`. Each builds .venv when it is
# missing or older than pyproject.toml, then runs.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/cardmem demo --cards cards

# Two workers (pytest-xdist): the suite waits mostly on one CPU at a time (Python, then a
# git or cardmem child), so a second worker shortens it on a 2-CPU machine (figures in
# bench/RESULTS.md). `python -m pytest` alone runs it in one process.
test: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2

# Benchmarks (not tests): each prints its figures beside a baseline run in the same go.
# Bytecode is compiled first, since start-up times are part of what they measure.
bench: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/python -m compileall -q store tools hooks $(VENV)/lib
	for b in write search hook mcp watch; do \
		env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/python bench/bench_$$b.py || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache
