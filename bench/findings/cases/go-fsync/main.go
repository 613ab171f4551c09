// An order log that makes every request durable on its own: appendOrder writes a
// 512-byte record to the server's one log file (O_APPEND) and calls f.Sync() (fsync(2))
// before the handler answers.
// usage: fsyncserver LOG-DIR  (prints "listening on ADDR" once listening on 127.0.0.1)
package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
)

var (
	orderLog *os.File
	seq      atomic.Int64
)

//go:noinline
func appendOrder(n int64) error {
	rec := bytes.Repeat([]byte{' '}, 512)
	copy(rec, fmt.Sprintf("order %d", n))
	rec[511] = '\n'
	if _, err := orderLog.Write(rec); err != nil {
		return err
	}
	return orderLog.Sync()
}

func handle(w http.ResponseWriter, r *http.Request) {
	if err := appendOrder(seq.Add(1)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, "stored\n")
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fsyncserver LOG-DIR")
		os.Exit(2)
	}
	var err error
	orderLog, err = os.OpenFile(filepath.Join(os.Args[1], "orders.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", handle)
	if err := http.Serve(l, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
