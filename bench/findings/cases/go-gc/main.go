// A catalogue server whose handler builds each answer from thousands of small,
// short-lived objects (buildCatalogue), run with a low GOGC: the collector runs all the
// time. GET /metrics answers the runtime's own CPU accounting (runtime/metrics) as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
)

type item struct {
	name  string
	tags  []string
	price float64
	next  *item
}

// live keeps a modest heap alive, so that each cycle has something to mark.
var live [][]*item

func buildCatalogue(seed int) float64 {
	var head *item
	for i := 0; i < 5000; i++ {
		it := &item{name: "item-" + strconv.Itoa(seed+i), tags: make([]string, 2), price: float64(i % 97), next: head}
		it.tags[0] = it.name[:4]
		head = it
	}
	total := 0.0
	for it := head; it != nil; it = it.next {
		total += it.price
	}
	return total
}

var cpuMetrics = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/cpu/classes/user:cpu-seconds",
	"/gc/cycles/total:gc-cycles",
}

func metricsHandler(w http.ResponseWriter, _ *http.Request) {
	samples := make([]metrics.Sample, len(cpuMetrics))
	for i, name := range cpuMetrics {
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
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	for i := 0; i < 40; i++ {
		live = append(live, make([]*item, 4096))
	}
	var seq atomic.Int64
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%.0f\n", buildCatalogue(int(seq.Add(1))))
	})
	http.HandleFunc("/metrics", metricsHandler)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
