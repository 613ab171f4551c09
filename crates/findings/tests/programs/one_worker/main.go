// A Go HTTP server whose every request hands its work to one worker goroutine (a job on
// a channel, the answer on another): the worker's CPU is the limit, whatever GOMAXPROCS
// is, and no thread is busier than the others, for the worker goroutine runs on whichever
// thread the scheduler gives it. Prints "listening on ADDR" once listening on 127.0.0.1.
package main

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
)

type job struct {
	seed  byte
	reply chan [32]byte
}

var jobs = make(chan job)

// digest is the work: about a millisecond of hashing.
func digest(seed byte) [32]byte {
	buf := make([]byte, 4096)
	buf[0] = seed
	sum := sha256.Sum256(buf)
	for i := 0; i < 400; i++ {
		copy(buf, sum[:])
		sum = sha256.Sum256(buf)
	}
	return sum
}

func worker() {
	for j := range jobs {
		j.reply <- digest(j.seed)
	}
}

func handle(w http.ResponseWriter, r *http.Request) {
	j := job{seed: byte(len(r.URL.Path)), reply: make(chan [32]byte, 1)}
	jobs <- j
	sum := <-j.reply
	fmt.Fprintf(w, "%x\n", sum[:4])
}

func main() {
	go worker()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", handle)
	panic(http.Serve(l, nil))
}
