// A small Go HTTP service for bench/overhead: each request to /item?id=N builds a
// record (a few strings, a slice of numbers), encodes it as JSON and answers it; /count
// says how many /item requests were answered so far, so the benchmark can divide the
// server's CPU time by the requests of the same seconds.
//
//	goserver -addr 127.0.0.1:0    prints "listening on http://ADDR" once it accepts
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
)

type item struct {
	ID     int       `json:"id"`
	Name   string    `json:"name"`
	Tags   []string  `json:"tags"`
	Prices []float64 `json:"prices"`
}

var answered atomic.Uint64

func itemHandler(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.URL.Query().Get("id"))
	if err != nil {
		http.Error(w, "id: not a number", http.StatusBadRequest)
		return
	}
	it := item{ID: id, Name: "item-" + strconv.Itoa(id), Tags: []string{"a", "b", "c"}}
	for i := 0; i < 32; i++ {
		it.Prices = append(it.Prices, float64((id*31+i)%1000)/10)
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&it); err != nil {
		return
	}
	answered.Add(1)
}

func countHandler(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintf(w, "%d\n", answered.Load())
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/item", itemHandler)
	http.HandleFunc("/count", countHandler)
	fmt.Fprintf(os.Stdout, "listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}
