// A quote server whose handler hashes for about a millisecond (priceQuote), run with
// GOMAXPROCS=1: the runtime runs Go code on one thread at a time, whatever the machine
// has. GET /metrics answers the runtime's own accounts (runtime/metrics) as JSON, and
// /debug/pprof/ its profiles.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"runtime/metrics"
)

func priceQuote(seed byte) [32]byte {
	buf := make([]byte, 4096)
	buf[0] = seed
	sum := sha256.Sum256(buf)
	for i := 0; i < 400; i++ {
		copy(buf, sum[:])
		sum = sha256.Sum256(buf)
	}
	return sum
}

var names = []string{
	"/sched/gomaxprocs:threads",
	"/cpu/classes/user:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
}

func metricsHandler(w http.ResponseWriter, _ *http.Request) {
	samples := make([]metrics.Sample, len(names))
	for i, name := range names {
		samples[i].Name = name
	}
	metrics.Read(samples)
	out := map[string]float64{}
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindFloat64:
			out[s.Name] = s.Value.Float64()
		case metrics.KindUint64:
			out[s.Name] = float64(s.Value.Uint64())
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sum := priceQuote(byte(len(r.URL.Path)))
		fmt.Fprintf(w, "%x\n", sum[:4])
	})
	http.HandleFunc("/metrics", metricsHandler)
	panic(http.Serve(l, nil))
}
