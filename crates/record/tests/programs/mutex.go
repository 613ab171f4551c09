// Goroutines hold a sync.Mutex across a blocking system call (a 2 ms nanosleep) in
// holdAcrossSyscall(), called from worker(). Usage: mutex SECONDS
package main

import (
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

var mu sync.Mutex

//go:noinline
func holdAcrossSyscall() {
	mu.Lock()
	ts := syscall.Timespec{Nsec: 2_000_000}
	_ = syscall.Nanosleep(&ts, nil)
	mu.Unlock()
}

//go:noinline
func worker(deadline time.Time, wg *sync.WaitGroup) {
	for time.Now().Before(deadline) {
		holdAcrossSyscall()
	}
	wg.Done()
}

func main() {
	secs := 1.0
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go worker(deadline, &wg)
	}
	wg.Wait()
}
