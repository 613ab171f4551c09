// A Go HTTP server whose every request waits 3 ms on a timer's channel (<-time.After)
// before it answers: the goroutine parks in a channel receive that the runtime's timer
// sends to — no lock, no other goroutine, no thread asleep. GET /metrics answers the
// server's own account: the nanoseconds its requests spent in that wait, in all.
// Prints "listening on ADDR" once listening on 127.0.0.1.
package main

import (
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

var waitedNs atomic.Int64

func throttle() {
	t0 := time.Now()
	<-time.After(3 * time.Millisecond)
	waitedNs.Add(int64(time.Since(t0)))
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		throttle()
		fmt.Fprintln(w, "ok")
	})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "waited_ns %d\n", waitedNs.Load())
	})
	fmt.Printf("listening on %s\n", l.Addr())
	panic(http.Serve(l, nil))
}
