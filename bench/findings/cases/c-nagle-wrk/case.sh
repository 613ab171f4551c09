#!/bin/bash
# Planted: Nagle's algorithm against delayed ACK (c-nagle's server), driven by wrk through
# `kiln run … exec --`: the latency is wrk's own summary's, not kiln's load's.
NAGLE_BY_WRK=1 . "$(dirname "$0")/../c-nagle/case.sh"
