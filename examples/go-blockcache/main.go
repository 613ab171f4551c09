// go-blockcache is a small query server whose block cache is guarded by one mutex and
// whose miss path reads the data file while holding it. It reproduces a classic case:
// queries per second stay flat while concurrency grows and the process uses well under
// a core, because requests queue for the lock while the holder waits for the disk. A CPU
// profile shows little; an off-CPU profile shows the read inside the critical section.
// A bigger cache (-cache-mb) removes the misses and the plateau.
//
//	go build -o go-blockcache . && ./go-blockcache -addr 127.0.0.1:8080 -cache-mb 4
//	curl 'http://127.0.0.1:8080/query?city=17&days=30'
//	curl http://127.0.0.1:8080/stats
//	go tool pprof http://127.0.0.1:8080/debug/pprof/profile
//	./go-blockcache -mutex-profile-fraction 1 -block-profile-rate 1   # and then:
//	go tool pprof http://127.0.0.1:8080/debug/pprof/mutex
package main

import (
	"container/list"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // /debug/pprof/ on the default mux
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// One block holds one city's daily readings: blockSize/4 little-endian uint32 values.
type block struct {
	city   int
	values []byte
}

// blockCache is an LRU of blocks. One mutex guards the map, the list and — the point of
// this example — the read of a missing block from the data file.
type blockCache struct {
	mu       sync.Mutex
	capacity int
	blocks   map[int]*list.Element
	lru      *list.List
	file     *os.File
	bs       int
	hits     atomic.Uint64
	misses   atomic.Uint64
	reads    atomic.Uint64
}

func newBlockCache(f *os.File, bs, capacityBlocks int) *blockCache {
	if capacityBlocks < 1 {
		capacityBlocks = 1
	}
	return &blockCache{
		capacity: capacityBlocks,
		blocks:   make(map[int]*list.Element, capacityBlocks),
		lru:      list.New(),
		file:     f,
		bs:       bs,
	}
}

// get finds the block of a city, reading it from the file on a miss, and returns what
// f computes from its values. The read happens inside the critical section: every other
// request waits for the disk too. f runs under the lock as well, so an evicted block's
// buffer can be reused for the next read without racing a reader.
func (c *blockCache) get(city int, f func(values []byte)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.blocks[city]; ok {
		c.lru.MoveToFront(e)
		c.hits.Add(1)
		f(e.Value.(*block).values)
		return nil
	}
	c.misses.Add(1)
	var buf []byte
	if c.lru.Len() >= c.capacity {
		old := c.lru.Back()
		c.lru.Remove(old)
		b := old.Value.(*block)
		delete(c.blocks, b.city)
		buf = b.values
	} else {
		buf = alignedBuffer(c.bs)
	}
	if err := c.readBlock(city, buf); err != nil {
		return err
	}
	b := &block{city: city, values: buf}
	c.blocks[city] = c.lru.PushFront(b)
	f(b.values)
	return nil
}

func (c *blockCache) readBlock(city int, buf []byte) error {
	n, err := c.file.ReadAt(buf, int64(city)*int64(c.bs))
	c.reads.Add(1)
	if n != c.bs {
		if err == nil {
			err = errors.New("short read")
		}
		return fmt.Errorf("reading block %d: %w", city, err)
	}
	return nil
}

// alignedBuffer returns n bytes aligned to 4096, as O_DIRECT reads need.
func alignedBuffer(n int) []byte {
	const align = 4096
	raw := make([]byte, n+align)
	off := int(uintptr(unsafe.Pointer(&raw[0])) & (align - 1))
	if off != 0 {
		off = align - off
	}
	return raw[off : off+n]
}

// value of day d of a city: deterministic, so answers can be checked.
func value(city, d int) uint32 {
	x := uint32(city)*2654435761 ^ uint32(d)*40503
	x ^= x >> 13
	x *= 0x5bd1e995
	x ^= x >> 15
	return x % 500
}

// createData writes the data file: cities blocks of bs bytes.
func createData(path string, cities, bs int) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, bs)
	for c := 0; c < cities; c++ {
		for d := 0; d < bs/4; d++ {
			binary.LittleEndian.PutUint32(buf[4*d:], value(c, d))
		}
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type server struct {
	cache  *blockCache
	cities int
	days   int
}

// query answers `max(aqi) over the last DAYS days of CITY`, as the original benchmark's
// `select max(aqi) from city_air_quality where time >= now-30d and city = '{city}'`.
func (s *server) query(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	city, err := strconv.Atoi(q.Get("city"))
	if err != nil || city < 0 {
		http.Error(w, "city must be a number >= 0", http.StatusBadRequest)
		return
	}
	city %= s.cities
	days := s.days
	if d := q.Get("days"); d != "" {
		days, err = strconv.Atoi(d)
		if err != nil || days < 1 {
			http.Error(w, "days must be a number >= 1", http.StatusBadRequest)
			return
		}
	}
	// The block holds a city's readings, newest last: scan the last DAYS of them.
	var max, sum uint32
	err = s.cache.get(city, func(values []byte) {
		n := len(values) / 4
		if days > n {
			days = n
		}
		for d := n - days; d < n; d++ {
			v := binary.LittleEndian.Uint32(values[4*d:])
			sum += v
			if v > max {
				max = v
			}
		}
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"city\":%d,\"days\":%d,\"max\":%d,\"checksum\":%d}\n", city, days, max, sum)
}

func (s *server) stats(w http.ResponseWriter, _ *http.Request) {
	c := s.cache
	c.mu.Lock()
	resident := c.lru.Len()
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"hits":            c.hits.Load(),
		"misses":          c.misses.Load(),
		"reads":           c.reads.Load(),
		"cache_blocks":    c.capacity,
		"resident_blocks": resident,
		"cities":          s.cities,
		"block_bytes":     c.bs,
		"gomaxprocs":      runtime.GOMAXPROCS(0),
	})
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (port 0: any free port, printed on stdout)")
	cacheMB := flag.Float64("cache-mb", 4, "block cache size in MiB")
	dataMB := flag.Int("data-mb", 256, "size of the data file in MiB (one block per city)")
	blockKB := flag.Int("block-kb", 256, "block size in KiB")
	days := flag.Int("days", 30, "default days per query")
	dataPath := flag.String("data", "", "data file (default: a temporary file, removed at start)")
	direct := flag.Bool("direct", true, "read blocks with O_DIRECT, so a miss waits for the device as a cold block does")
	mutexFraction := flag.Int("mutex-profile-fraction", 0, "runtime.SetMutexProfileFraction: report 1 in N mutex contentions in /debug/pprof/mutex (0: none)")
	blockRate := flag.Int("block-profile-rate", 0, "runtime.SetBlockProfileRate: sample blocking events of at least N ns in /debug/pprof/block (0: none)")
	flag.Parse()
	runtime.SetMutexProfileFraction(*mutexFraction)
	runtime.SetBlockProfileRate(*blockRate)

	bs := *blockKB * 1024
	if bs < 4096 || bs%4096 != 0 {
		log.Fatalf("-block-kb must be a multiple of 4")
	}
	cities := *dataMB * 1024 * 1024 / bs
	if cities < 1 {
		log.Fatalf("-data-mb must hold at least one block")
	}
	path := *dataPath
	temporary := path == ""
	if temporary {
		dir, err := os.MkdirTemp("", "go-blockcache-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path = dir + "/data"
	}
	if st, err := os.Stat(path); temporary || err != nil || st.Size() != int64(cities)*int64(bs) {
		if err := createData(path, cities, bs); err != nil {
			log.Fatalf("creating %s: %v", path, err)
		}
	}
	mode := os.O_RDONLY
	if *direct {
		mode |= syscall.O_DIRECT
	}
	f, err := os.OpenFile(path, mode, 0)
	if err != nil && *direct {
		log.Printf("O_DIRECT refused on %s (%v): reading through the page cache", path, err)
		f, err = os.OpenFile(path, os.O_RDONLY, 0)
	}
	if err != nil {
		log.Fatal(err)
	}
	if temporary {
		os.RemoveAll(path[:len(path)-len("/data")])
	}
	capBlocks := int(*cacheMB * 1024 * 1024 / float64(bs))
	s := &server{cache: newBlockCache(f, bs, capBlocks), cities: cities, days: *days}
	http.HandleFunc("/query", s.query)
	http.HandleFunc("/stats", s.stats)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The first line on stdout is the address, for scripts and tests that chose port 0.
	fmt.Printf("listening on http://%s (cache %d of %d blocks of %d KiB, direct=%v, pid %d)\n",
		ln.Addr(), s.cache.capacity, cities, *blockKB, *direct, os.Getpid())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		ln.Close()
	}()
	if err := http.Serve(ln, nil); err != nil && !errors.Is(err, net.ErrClosed) {
		log.Fatal(err)
	}
}
