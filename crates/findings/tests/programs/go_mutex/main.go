// A Go HTTP server whose every request takes one sync.Mutex and holds it over a 2 ms
// wait (a stand-in for a slow call made under a lock): the requests queue on the mutex.
// Goroutines waiting for it park in Go's scheduler without blocking a thread. The server
// keeps Go's block profile (every blocking event) at /debug/pprof/block for the test's
// oracle. Prints "listening on ADDR" once listening on 127.0.0.1.
package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"runtime"
	"sync"
	"time"
)

var (
	mu      sync.Mutex
	updates int
)

func updateInventory() {
	mu.Lock()
	time.Sleep(2 * time.Millisecond)
	updates++
	mu.Unlock()
}

func handle(w http.ResponseWriter, r *http.Request) {
	updateInventory()
	fmt.Fprintln(w, "ok")
}

func main() {
	runtime.SetBlockProfileRate(1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", handle)
	panic(http.Serve(l, nil))
}
