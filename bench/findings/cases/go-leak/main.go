// An HTTP server that remembers every request's session: rememberSession allocates 8 KiB,
// fills it and keeps it in a map nothing ever deletes from. GET /metrics answers the
// runtime's own account (runtime.ReadMemStats: the live heap and the sessions kept).
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
)

var (
	mu       sync.Mutex
	sessions = map[int][]byte{}
	next     int
)

func rememberSession() int {
	b := make([]byte, 8192)
	for i := range b {
		b[i] = byte(i)
	}
	mu.Lock()
	defer mu.Unlock()
	next++
	sessions[next] = b
	return next
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, rememberSession())
	})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		n := len(sessions)
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]uint64{"heap_alloc": m.HeapAlloc, "sessions": uint64(n)})
	})
	panic(http.Serve(l, nil))
}
