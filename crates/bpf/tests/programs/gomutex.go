// Goroutines hold a sync.Mutex across a blocking syscall (nanosleep).
//
// Usage: gomutex GOROUTINES ITERATIONS HOLD_US
// Prints "ready", waits for a line on stdin, runs, prints "done elapsed_ns N", waits for
// another line before exiting.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

var mu sync.Mutex

//go:noinline
func holdLocked(holdUs int64) {
	mu.Lock()
	ts := syscall.NsecToTimespec(holdUs * 1000)
	// A real blocking syscall: the thread (M) running this goroutine sleeps in the kernel.
	for syscall.Nanosleep(&ts, &ts) != nil {
	}
	mu.Unlock()
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: gomutex GOROUTINES ITERATIONS HOLD_US")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[1])
	iters, _ := strconv.Atoi(os.Args[2])
	holdUs, _ := strconv.ParseInt(os.Args[3], 10, 64)
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(1)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				holdLocked(holdUs)
			}
		}()
	}
	wg.Wait()
	fmt.Println("done elapsed_ns", time.Since(start).Nanoseconds())
	in.ReadString('\n')
}
