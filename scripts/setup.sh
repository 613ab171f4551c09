#!/usr/bin/env bash
# Installs what kiln needs (Debian 12, as root), builds it, and runs its main job end to
# end (scripts/demo.sh): a private RabbitMQ under load, profiled by `kiln run` before and
# after one configuration change, proved by `kiln compare`; outputs in ./kiln-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
cargo build --release --locked -p kiln 2>/dev/null || cargo build --release -p kiln
KILN=target/release/kiln scripts/demo.sh "${KILN_DEMO_SECONDS:-5}"
