// An HTTP server that paces itself: every request calls throttle, which sleeps 5 ms
// (time.Sleep: the goroutine parks on the runtime's timer; no thread sleeps) before it
// answers; with -after, it waits 5 ms on a timer's channel instead (<-time.After: the
// goroutine parks in a channel receive the runtime's timer sends to; no lock is held). GET /metrics answers its own account: throttle's calls and summed duration (ns)
// and its clock (ns since start, monotonic).
package main

import (
	"encoding/json"
	"flag"
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
	after   = flag.Bool("after", false, "wait on <-time.After, not in time.Sleep")
)

func throttle() {
	t0 := time.Now()
	if *after {
		<-time.After(5 * time.Millisecond)
	} else {
		time.Sleep(5 * time.Millisecond)
	}
	sleptNs.Add(int64(time.Since(t0)))
	calls.Add(1)
}

func main() {
	flag.Parse()
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
