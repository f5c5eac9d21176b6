# The two entry points of the README. Both install what a fresh machine lacks
# first: GMP (built from source by the exact backend's `rug`) needs `m4`.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test python-test prerequisites

# The Python package is built into and tested from a virtual environment in
# the repository (git-ignored); `make test` creates it and installs what it
# lacks from PyPI (crates/python/requirements-test.txt).
VENV := .venv
PY := $(VENV)/bin/python
WHEELS := $(VENV)/wheels

demo: prerequisites
	cargo run --release -p spantree-cli -- demo

# Every test target and doctest of the workspace. Examples are not built here
# (`cargo test` alone would build all 18 of them, about a seventh of a cold
# test build, and run none): `cargo clippy --all-targets` (CI) checks that
# they compile. The Python tests then reuse the command's binary that the
# command's integration tests just built. The doctests run on the whole
# workspace, although the extension has none: `--exclude spantree-python`
# changes the features cargo unifies over the workspace and so rebuilt every
# library and dependency (312 s of a cold run, against 31 s for building the
# extension once more).
test: prerequisites
	cargo test --workspace --lib --bins --tests
	cargo test --workspace --doc
	$(MAKE) python-test SPANTREE_BIN=$${CARGO_TARGET_DIR:-target}/debug/spantree

$(VENV)/installed: crates/python/requirements-test.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r crates/python/requirements-test.txt
	@touch $@

# Builds the abi3 wheel, installs it, runs pytest. Exit status 5 (no test
# collected) is not a failure.
python-test: $(VENV)/installed
	rm -rf $(WHEELS)
	cd crates/python && ../../$(VENV)/bin/maturin build --quiet -o ../../$(WHEELS)
	$(PY) -m pip install -q --force-reinstall --no-deps $(WHEELS)/spantree-*.whl
	@[ -n "$(SPANTREE_BIN)" ] || cargo build --quiet -p spantree-cli
	SPANTREE_BIN=$${SPANTREE_BIN:-$${CARGO_TARGET_DIR:-target}/debug/spantree} $(PY) -m pytest -q crates/python/tests; \
	  status=$$?; [ $$status -eq 0 ] || [ $$status -eq 5 ]

prerequisites:
	@command -v m4 >/dev/null || { \
	  echo "installing m4 (needed to build GMP for the exact backend)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq m4; }
