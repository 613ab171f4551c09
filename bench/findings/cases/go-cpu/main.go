// A receipt server whose handler signs each receipt with 300 rounds of SHA-256 over a
// 4 KiB sheet (signReceipt, ~0.7 ms of CPU), every CPU the machine has (GOMAXPROCS as Go
// sets it): the server is CPU-bound. /debug/pprof/ serves its profiles; GET /gomaxprocs the
// runtime's setting.
package main

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"runtime"
)

func signReceipt(seed byte) []byte {
	sheet := make([]byte, 4096)
	sheet[0] = seed
	h := sha256.New()
	var sum []byte
	for round := 0; round < 300; round++ {
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
		fmt.Fprintf(w, "%x\n", signReceipt(byte(len(r.URL.Path)))[:4])
	})
	http.HandleFunc("/gomaxprocs", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d\n", runtime.GOMAXPROCS(0))
	})
	panic(http.Serve(l, nil))
}
