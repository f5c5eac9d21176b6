# The two entry points of the README. Both install what a fresh machine lacks
# first: GMP (built from source by the exact backend's `rug`) needs `m4`.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test prerequisites

demo: prerequisites
	cargo run --release -p spantree-cli -- demo

test: prerequisites
	cargo test --workspace

prerequisites:
	@command -v m4 >/dev/null || { \
	  echo "installing m4 (needed to build GMP for the exact backend)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq m4; }
