// A Go HTTP server that lets 4 requests work at a time: a buffered channel is its
// semaphore, and each request holds a slot for a 10 ms wait (a stand-in for a call to a
// slow dependency). Under more connections, the rest queue on the channel.
// Prints "listening on ADDR" once listening.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"runtime"
	"time"
)

var slots = make(chan struct{}, 4)

func handle(w http.ResponseWriter, r *http.Request) {
	slots <- struct{}{}
	time.Sleep(10 * time.Millisecond)
	<-slots
	fmt.Fprintln(w, "ok")
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	runtime.SetBlockProfileRate(1)
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", handle)
	panic(http.Serve(l, nil))
}
