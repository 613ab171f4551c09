#!/bin/sh
# A private nginx for the HTTP benchmarks, as the tests start it (crates/testkit/src/nginx.rs):
# one worker, keep-alive, a small static file, bound to 127.0.0.1, no access log; /status is
# nginx's stub_status (its third line counts the requests answered).
#
#   bench/http/nginx.sh start DIR PORT [BODY_BYTES]   prints the worker's PID
#   bench/http/nginx.sh stop DIR                       stops it by the master's PID
set -eu
cmd=$1 dir=$2
case "$cmd" in
start)
  port=$3 body=${4:-612}
  mkdir -p "$dir/html" "$dir/tmp"
  head -c "$body" /dev/zero | tr '\0' 'k' > "$dir/html/index.html"
  user=""
  [ "$(id -u)" = 0 ] && user="user root;"
  cat > "$dir/nginx.conf" <<CONF
$user
daemon on;
master_process on;
worker_processes 1;
worker_rlimit_nofile 20000;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 16384; multi_accept on; }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    default_type text/html;
    server { listen 127.0.0.1:$port backlog=4096; root $dir/html; location = /status { stub_status; } }
}
CONF
  /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  i=0
  while [ ! -s "$dir/nginx.pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  master=$(cat "$dir/nginx.pid")
  i=0
  while [ -z "$(cat /proc/"$master"/task/*/children 2>/dev/null)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  cat /proc/"$master"/task/*/children | tr -s ' ' '\n' | grep -m1 .
  ;;
stop)
  [ -s "$dir/nginx.pid" ] || exit 0
  master=$(cat "$dir/nginx.pid")
  workers=$(cat /proc/"$master"/task/*/children 2>/dev/null || true)
  kill -TERM "$master" 2>/dev/null || true
  i=0
  while kill -0 "$master" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  for p in $master $workers; do kill -KILL "$p" 2>/dev/null || true; done
  ;;
*) echo "usage: $0 start DIR PORT [BODY_BYTES] | stop DIR" >&2; exit 2 ;;
esac
