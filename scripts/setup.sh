#!/usr/bin/env bash
# Installs what kiln needs (Debian 12, as root), builds it, and runs its main job end to
# end (scripts/demo.sh): a private RabbitMQ under load, profiled by `kiln run` before and
# after one configuration change, proved by `kiln compare`; outputs in ./kiln-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
# The build's packages first; RabbitMQ and Erlang install while kiln builds (apt's time
# hidden behind the compiler's).
scripts/install-deps.sh --build
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
log=$(mktemp /tmp/kiln-install-deps.XXXXXX)
scripts/install-deps.sh >"$log" 2>&1 &
deps=$!
build=0
cargo build --release --locked -p kiln || build=$?
if ! wait "$deps"; then
  cat "$log" >&2
  echo "setup: installing RabbitMQ and Erlang failed (scripts/install-deps.sh, above)" >&2
  exit 1
fi
cat "$log" >&2
rm -f "$log"
[ "$build" = 0 ] || { echo "setup: cargo build failed (exit $build)" >&2; exit "$build"; }
KILN=target/release/kiln scripts/demo.sh "${KILN_DEMO_SECONDS:-5}"
