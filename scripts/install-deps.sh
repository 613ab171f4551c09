#!/usr/bin/env bash
# Installs what kiln needs on Debian 12, as root. Idempotent and quick when everything is
# present. Rust (cargo) is expected from rustup.
#   scripts/install-deps.sh --build  what kiln's build needs: the eBPF programs' compiler and
#                                    headers, Debian's SQLite and zstd to link
#   scripts/install-deps.sh          that and what kiln's main job adds (scripts/setup.sh):
#                                    RabbitMQ and Erlang for the demo
#   scripts/install-deps.sh --tests  that and what the test suite and benchmarks add
#                                    (scripts/test.sh): the other servers, the anchor tools,
#                                    Chromium, Go, Node, a JDK, Python's headers and py-spy, the
#                                    oldest Rust, nightly's cargo-fuzz, an OpenTelemetry Collector
set -euo pipefail
level=main
case "${1:-}" in
  --build) level=build ;;
  --tests) level=tests ;;
  "") ;;
  *) echo "install-deps: unknown argument '$1' (--build, --tests or nothing)" >&2; exit 2 ;;
esac

need_apt=()
# kiln's build: eBPF programs compiled with clang against libbpf, linked with Debian's
# SQLite and zstd.
pkgs=(build-essential pkg-config curl clang libbpf-dev libelf-dev zlib1g-dev linux-libc-dev
      libsqlite3-dev libzstd-dev)
if [ "$level" != build ]; then
  # kiln's main job: a private RabbitMQ under load (scripts/demo.sh). Debian's python3 is
  # stripped: python3-dbg's symbols (found by build id) name the interpreter's own frames
  # in kiln's profiles of Python servers (its collector, its GIL), as perf's need them.
  pkgs+=(rabbitmq-server erlang-nox python3 python3-dbg)
fi
if [ "$level" = tests ]; then
  # The tests' servers and oracles, the benchmarks' anchors.
  pkgs+=(linux-perf bpftool chromium mosquitto mosquitto-clients hyperfine time make binutils
         util-linux nginx wrk debuginfod postgresql bpftrace
         openssh-server openssh-client iproute2 openjdk-17-jdk-headless python3-dev python3-venv)
fi
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
if [ "$level" = tests ]; then
  # Node and Go may come from elsewhere than Debian (nodesource, go.dev): only install
  # Debian's when the commands are missing.
  command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || need_apt+=(golang-go)
  command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
  command -v npm >/dev/null 2>&1 || need_apt+=(npm)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "install-deps: installing ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # One update a day is enough: a fresh machine's lists are empty, so it runs there.
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
    apt-get update -qq
  fi
  apt_install() { apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null; }
  apt_install || { apt-get update -qq && apt_install; }
fi
# The Debian packages start services we do not use: the tests start private brokers (and
# private sshds in network namespaces for kiln run --agent).
for svc in rabbitmq-server mosquitto nginx postgresql ssh; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "install-deps: cargo not found; install Rust with rustup (https://rustup.rs)" >&2
    exit 1
  fi
fi
[ "$level" = tests ] || exit 0

# Everything below is for the test suite and the benchmarks only.
# The oracles' bpftrace and perf's tracepoints need tracefs, which a machine just booted
# may not have mounted yet (kiln mounts it itself when it records a tracepoint; the
# tests' oracles may run first).
if [ ! -d /sys/kernel/tracing/events ] && [ -d /sys/kernel/tracing ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
    echo "install-deps: could not mount tracefs on /sys/kernel/tracing: bpftrace's tracepoints will not be found" >&2
fi
# The oldest Rust the workspace builds with (rust-version in Cargo.toml), for the check
# `cargo +1.88.0 check --workspace --all-targets`.
if command -v rustup >/dev/null 2>&1 && ! rustup run 1.88.0 rustfmt --version >/dev/null 2>&1; then
  echo "install-deps: installing Rust 1.88.0 (the minimum supported)" >&2
  rustup toolchain install 1.88.0 --profile minimal -c rustfmt >/dev/null
fi
# Anchor tools the comparison tests and benchmarks run against.
if ! command -v inferno-collapse-perf >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/inferno-collapse-perf" ]; then
  echo "install-deps: installing inferno 0.12.3 from crates.io" >&2
  cargo install --locked --quiet inferno --version 0.12.3
fi
# py-spy, the oracle of the Python frames test, from PyPI into a virtual environment of its
# own (Debian's pip installs nothing system-wide). KILN_PY_SPY points the test elsewhere.
if [ ! -x /opt/kiln-py-spy/bin/py-spy ]; then
  echo "install-deps: installing py-spy 0.4.3 from PyPI into /opt/kiln-py-spy" >&2
  { /usr/bin/python3 -m venv /opt/kiln-py-spy && /opt/kiln-py-spy/bin/pip install -q py-spy==0.4.3; } || \
    echo "install-deps: py-spy could not be installed; the Python frames test will fail" >&2
fi
# vegeta, the constant-rate HTTP anchor of bench/http, from the Go module proxy.
if ! command -v vegeta >/dev/null 2>&1 && [ ! -x "$HOME/go/bin/vegeta" ]; then
  gobin=$(command -v go || echo /usr/local/go/bin/go)
  if [ -x "$gobin" ] || command -v go >/dev/null 2>&1; then
    echo "install-deps: installing vegeta v12.13.0 with go install" >&2
    GOTOOLCHAIN=local "$gobin" install github.com/tsenart/vegeta/v12@v12.13.0 || \
      echo "install-deps: vegeta could not be installed; bench/http will skip it" >&2
  fi
fi
# OpenTelemetry's Go bindings of the profiles signal (opentelemetry-proto v1.8.0), which
# the OTLP export's test decodes kiln's files with (tests build offline, GOPROXY=off).
if command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ]; then
  gobin=$(command -v go || echo /usr/local/go/bin/go)
  (cd "$(dirname "$0")/../crates/formats/tests/otlpdecode" && GOTOOLCHAIN=local "$gobin" mod download) || \
    echo "install-deps: the OTLP decoder's Go modules could not be downloaded; its test will fail" >&2
  # Go's protobuf runtime, the strict proto3 decoder the pprof output's test reads it with.
  (cd "$(dirname "$0")/../crates/formats/tests/pprofstrict" && GOTOOLCHAIN=local "$gobin" mod download) || \
    echo "install-deps: the strict pprof decoder's Go module could not be downloaded; its test will fail" >&2
fi
# google/pprof's module, for its test profiles (profile/testdata: gobench.heap has a sample
# without a stack), which the pprof tests read with go tool pprof as the oracle.
if command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ]; then
  gobin=$(command -v go || echo /usr/local/go/bin/go)
  pprof_mod=github.com/google/pprof@v0.0.0-20261105003125-4bf881d7fb0b
  [ -d "$("$gobin" env GOMODCACHE)/$pprof_mod" ] || (cd /tmp && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$gobin" mod download "$pprof_mod") || \
    echo "install-deps: $pprof_mod could not be downloaded; a pprof test will fail" >&2
fi
# An OpenTelemetry Collector (its OTLP receiver and debug exporter, v0.136.0: the first on
# opentelemetry-proto v1.8.0), built with the Collector's own builder, for the test that
# sends kiln's OTLP profiles to a real collector.
otelcol_dest=${KILN_OTELCOL:-$HOME/go/bin/otelcol-kiln}
if [ ! -x "$otelcol_dest" ] && { command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ]; }; then
  gobin=$(command -v go || echo /usr/local/go/bin/go)
  ocb=$(mktemp -d)
  printf '%s\n' \
    'dist:' \
    '  name: otelcol-kiln' \
    "  description: OpenTelemetry Collector receiving kiln's OTLP profiles in its tests" \
    "  output_path: $ocb/dist" \
    'receivers:' \
    '  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v0.136.0' \
    'exporters:' \
    '  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v0.136.0' \
    > "$ocb/manifest.yaml"
  echo "install-deps: building an OpenTelemetry Collector v0.136.0 (a few minutes)" >&2
  if GOTOOLCHAIN=local GOBIN="$ocb" "$gobin" install go.opentelemetry.io/collector/cmd/builder@v0.136.0 &&
    (cd "$ocb" && PATH="$(dirname "$gobin"):$PATH" GOTOOLCHAIN=local ./builder --config manifest.yaml >/dev/null 2>&1); then
    mkdir -p "$(dirname "$otelcol_dest")" && cp "$ocb/dist/otelcol-kiln" "$otelcol_dest"
  else
    echo "install-deps: the OpenTelemetry Collector could not be built; the OTLP collector test will fail" >&2
  fi
  rm -rf "$ocb"
fi
if [ "${KILN_SKIP_FUZZ:-}" != 1 ] && ! cargo fuzz --version >/dev/null 2>&1; then
  echo "install-deps: installing cargo-fuzz from crates.io" >&2
  cargo install --locked --quiet cargo-fuzz
fi
