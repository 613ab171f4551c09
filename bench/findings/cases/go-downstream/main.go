// A front server whose every request asks an "inventory service" (a local downstream that
// answers after 20 ms) before answering (callInventoryService, over keep-alive
// connections of one http.Client); the front itself does almost nothing. GET /metrics
// answers the front's own count of the downstream calls and their summed duration, as
// JSON; /debug/pprof/ serves Go's profiles.
// usage: downstream -serve-inventory        the downstream (20 ms per answer)
//        downstream DOWNSTREAM-URL          the front
// Each prints "listening on ADDR" once listening on 127.0.0.1.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"sync/atomic"
	"time"
)

var (
	downstreamURL string
	client        = &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	calls, callNs atomic.Int64
)

//go:noinline
func callInventoryService() (string, error) {
	start := time.Now()
	defer func() { calls.Add(1); callNs.Add(int64(time.Since(start))) }()
	resp, err := client.Get(downstreamURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func handle(w http.ResponseWriter, r *http.Request) {
	stock, err := callInventoryService()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fmt.Fprint(w, stock)
}

func metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{"downstream_calls": calls.Load(), "downstream_ns": callNs.Load()})
}

func inventory(w http.ResponseWriter, r *http.Request) {
	time.Sleep(20 * time.Millisecond)
	fmt.Fprint(w, "in stock\n")
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: downstream -serve-inventory | downstream DOWNSTREAM-URL")
		os.Exit(2)
	}
	mux := http.DefaultServeMux
	if os.Args[1] == "-serve-inventory" {
		mux = http.NewServeMux()
		mux.HandleFunc("/", inventory)
	} else {
		downstreamURL = os.Args[1]
		http.HandleFunc("/", handle)
		http.HandleFunc("/metrics", metrics)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	if err := http.Serve(l, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
