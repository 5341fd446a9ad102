# Two commands do all the set-up: `make demo` and `make test`. Each builds .venv when it is
# missing or older than pyproject.toml, then runs.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test bench mutate clean

$(STAMP): pyproject.toml
	@echo "make: building $(VENV) (once, about a minute: cardmem and its dependencies)"
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/cardmem demo --cards cards

# Four workers (pytest-xdist), on 2 CPUs too: the tests wait on git and cardmem children,
# sleeps and sockets more than they compute, so workers beyond the CPUs still shorten it
# (bench/RESULTS.md: one process, -n 2 and -n 4 side by side). `python -m pytest` alone
# runs it in one process.
test: $(STAMP)
	$(VENV)/bin/python -m pytest -n 4

# Benchmarks (not tests): each prints its figures beside a baseline run in the same go.
# Bytecode is compiled first, since start-up times are part of what they measure.
bench: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/python -m compileall -q store tools hosts hooks $(VENV)/lib
	for b in write search hook mcp watch; do \
		env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/python bench/bench_$$b.py || exit 1; done

# Mutation testing (not part of `make test`): tests/mutate.py holds the modules and the test
# files each one's mutants run against. MUTATE_BUDGET_S bounds each group (default 300 s),
# MUTATE_SEED replays an order; `make mutate GROUPS="redact memory"` runs some groups.
mutate: $(STAMP)
	$(VENV)/bin/python -c 'import cosmic_ray' 2>/dev/null || $(VENV)/bin/python -m pip install -q -e '.[mutate]'
	$(VENV)/bin/python tests/mutate.py $(GROUPS)

clean:
	rm -rf $(VENV) .pytest_cache .mutate
