// An HTTP server that paces itself: every request calls throttle, which waits 5 ms on a
// timer's channel (<-time.After: the goroutine parks in a channel receive that the
// runtime's timer sends to; no thread sleeps, no lock is held) before it answers. GET /metrics answers its own account: throttle's calls and summed duration (ns)
// and its clock (ns since start, monotonic).
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

var (
	start   = time.Now()
	calls   atomic.Int64
	sleptNs atomic.Int64
)

func throttle() {
	t0 := time.Now()
	<-time.After(5 * time.Millisecond)
	sleptNs.Add(int64(time.Since(t0)))
	calls.Add(1)
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		throttle()
		fmt.Fprintln(w, "ok")
	})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]int64{"calls": calls.Load(), "ns": sleptNs.Load(), "now_ns": int64(time.Since(start))})
	})
	panic(http.Serve(l, nil))
}
