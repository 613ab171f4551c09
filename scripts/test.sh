#!/usr/bin/env bash
# kiln's whole test suite, as root on Debian 12: formatting, lints, unit and integration
# tests (real perf_event_open and eBPF sampling, real RabbitMQ, real Chromium), the
# viewer's tests, and a short run of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
export KILN_REQUIRE_ANCHORS=1
export CARGO_TERM_COLOR=never

step() { echo; echo "=== $* ===" >&2; }
step "web viewer: npm ci, bundle up to date, typecheck, unit tests"
# Before cargo test: the viewer's browser test drives Chromium with playwright-core.
(cd web && npm ci --no-audit --no-fund --silent && npm run --silent check-dist \
  && npm run --silent typecheck && npm test)
step "cargo fmt --check"
cargo fmt --all --check
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
step "the oldest Rust kiln builds with (rust-version), and kiln without eBPF"
cargo +1.88.0 check --workspace --all-targets --quiet
cargo check -p kiln --no-default-features --quiet
cargo check -p kiln-record --no-default-features --all-targets --quiet
step "cargo test"
cargo test --workspace --no-fail-fast
if [ "${KILN_SKIP_FUZZ:-}" != 1 ]; then
  step "fuzz targets"
  scripts/fuzz.sh "${KILN_FUZZ_SECONDS:-15}"
fi
echo "kiln: all tests passed" >&2
