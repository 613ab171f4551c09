#!/usr/bin/env bash
# Installs what kiln needs (Debian 12, as root), builds it, and runs its main job end to
# end (scripts/demo.sh): a private RabbitMQ under load, profiled by `kiln run` before and
# after one configuration change, proved by `kiln compare`; outputs in ./kiln-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
# The crates download while apt installs the build's packages; RabbitMQ and Erlang install
# while kiln builds (apt's and the network's time hidden behind the compiler's).
fetch=
if command -v cargo >/dev/null 2>&1; then
  fetch_log=$(mktemp /tmp/kiln-cargo-fetch.XXXXXX)
  cargo fetch --locked --target "$(rustc -vV | sed -n 's/^host: //p')" >"$fetch_log" 2>&1 &
  fetch=$!
fi
scripts/install-deps.sh --build
if [ -n "$fetch" ]; then
  if ! wait "$fetch"; then
    cat "$fetch_log" >&2
    echo "setup: downloading kiln's crates failed (cargo fetch, above)" >&2
    exit 1
  fi
  rm -f "$fetch_log"
fi
echo "setup: the build's packages and crates in $((SECONDS - start)) s" >&2
log=$(mktemp /tmp/kiln-install-deps.XXXXXX)
scripts/install-deps.sh >"$log" 2>&1 &
deps=$!
build=0
cargo build --release --locked -p kiln || build=$?
echo "setup: kiln built at $((SECONDS - start)) s" >&2
if ! wait "$deps"; then
  cat "$log" >&2
  echo "setup: installing RabbitMQ and Erlang failed (scripts/install-deps.sh, above)" >&2
  exit 1
fi
cat "$log" >&2
rm -f "$log"
[ "$build" = 0 ] || { echo "setup: cargo build failed (exit $build)" >&2; exit "$build"; }
KILN=target/release/kiln scripts/demo.sh "${KILN_DEMO_SECONDS:-5}"
echo "setup: done in $((SECONDS - start)) s" >&2
