// goprof writes Go's own profiles of itself with runtime/pprof, for kiln's pprof tests:
//
//	goprof -dir DIR [-cpu 1s]
//
// writes DIR/{cpu,heap,allocs,mutex,block,goroutine,threadcreate}.pb.gz. The CPU work
// runs in distinct functions, some inlined, under pprof labels (handler=query and
// handler=put), so tests can check stacks, inlined frames and labels against
// `go tool pprof`.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var sink uint64

// mix is small enough to be inlined into its callers.
func mix(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

//go:noinline
func hashLoop(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = mix(x) ^ (x >> 17)
	}
	return x
}

//go:noinline
func query(deadline time.Time) {
	for time.Now().Before(deadline) {
		sink += hashLoop(20000)
	}
}

//go:noinline
func put(deadline time.Time) {
	for time.Now().Before(deadline) {
		sink += hashLoop(10000) + hashLoop(10000)
	}
}

var keep [][]byte

//go:noinline
func allocKept() {
	for i := 0; i < 200; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
}

//go:noinline
func allocFreed() {
	for i := 0; i < 2000; i++ {
		b := make([]byte, 32<<10)
		sink += uint64(b[i%len(b)])
	}
}

//go:noinline
func contend(mu *sync.Mutex, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < 200; i++ {
		mu.Lock()
		time.Sleep(50 * time.Microsecond)
		mu.Unlock()
	}
}

//go:noinline
func waitOnChannel(ch chan int, wg *sync.WaitGroup) {
	defer wg.Done()
	for v := range ch {
		sink += uint64(v)
	}
}

//go:noinline
func parked(ch chan struct{}) { <-ch }

func write(dir, name string, f func(*os.File) error) {
	out, err := os.Create(filepath.Join(dir, name+".pb.gz"))
	if err != nil {
		log.Fatal(err)
	}
	if err := f(out); err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}
}

func main() {
	dir := flag.String("dir", ".", "where to write the profiles")
	cpu := flag.Duration("cpu", time.Second, "CPU work under the profiler")
	flag.Parse()
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	runtime.MemProfileRate = 4096

	write(*dir, "cpu", func(f *os.File) error {
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		deadline := time.Now().Add(*cpu)
		var wg sync.WaitGroup
		wg.Add(2)
		go pprof.Do(context.Background(), pprof.Labels("handler", "query"), func(context.Context) {
			defer wg.Done()
			query(deadline)
		})
		go pprof.Do(context.Background(), pprof.Labels("handler", "put"), func(context.Context) {
			defer wg.Done()
			put(deadline)
		})
		wg.Wait()
		pprof.StopCPUProfile()
		return nil
	})

	allocKept()
	allocFreed()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go contend(&mu, &wg)
	}
	ch := make(chan int)
	wg.Add(1)
	go waitOnChannel(ch, &wg)
	for i := 0; i < 100; i++ {
		time.Sleep(100 * time.Microsecond)
		ch <- i
	}
	close(ch)
	wg.Wait()
	stop := make(chan struct{})
	for i := 0; i < 5; i++ {
		go parked(stop)
	}
	runtime.GC()
	for _, name := range []string{"heap", "allocs", "mutex", "block", "goroutine", "threadcreate"} {
		p := pprof.Lookup(name)
		write(*dir, name, func(f *os.File) error { return p.WriteTo(f, 0) })
	}
	close(stop)
}
