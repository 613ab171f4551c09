// A quote server whose handler hashes for about a millisecond (priceQuote), run with
// GOMAXPROCS=1: the runtime runs Go code on one thread at a time, whatever the machine
// has. GET /gomaxprocs answers the runtime's own setting; /debug/pprof/ its profiles.
package main

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"runtime"
)

// priceQuote is the work: 400 rounds of SHA-256 over a 4 KiB quote sheet.
func priceQuote(seed byte) []byte {
	sheet := make([]byte, 4096)
	sheet[0] = seed
	h := sha256.New()
	var sum []byte
	for round := 0; round <= 400; round++ {
		h.Reset()
		h.Write(sum)
		h.Write(sheet)
		sum = h.Sum(sum[:0])
	}
	return sum
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%x\n", priceQuote(byte(len(r.URL.Path)))[:4])
	})
	http.HandleFunc("/gomaxprocs", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d\n", runtime.GOMAXPROCS(0))
	})
	panic(http.Serve(l, nil))
}
