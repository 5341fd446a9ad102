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

test: $(STAMP)
	$(VENV)/bin/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache
