package tally_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	tally "dev.tally/client"
)

// BenchmarkIncr: the client's Incr against a bare net/http request to the same route, from 1 and
// 32 goroutines, on the file: server TestMain started. What the client adds is the difference:
//
//	TALLY_GO_SKIP_REDIS=1 go test -run '^$' -bench Incr -benchmem ./
//
// The server is warmed up first (TALLY_BENCH_WARMUP, default 10s, of both kinds of request): its
// JIT makes its first seconds several times slower, which would flatter whichever runs second.
// Besides ns/op each row reports this process's CPU per request (client-cpu-ns/op: the client or
// the bare loop, with net/http and Go's runtime) and the server's (server-cpu-ns/op, from /proc;
// 10 ms ticks, so meaningful over the final runs only). Go runs each sub-benchmark -count times
// in a row, so compare bare and client within one invocation with -count 1 (run it several
// times); the paired rows alternate short turns of both and report the ratio themselves.
func BenchmarkIncr(b *testing.B) {
	url := servers[0].url
	bare := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	body := []byte(`{"delta":1}`)
	bareIncr := func() error {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/counters/bench:bare/incr", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := bare.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	c := tally.New(url)
	ctx := context.Background()
	clientIncr := func() error { _, err := c.Incr(ctx, "bench:client", 1); return err }
	warmOnce.Do(func() { warmUp(b, bareIncr, clientIncr) })
	pid := servers[0].cmds[0].Process.Pid
	for _, g := range []int{1, 32} {
		for _, run := range []struct {
			name string
			f    func() error
		}{{"bare", bareIncr}, {"client", clientIncr}} {
			run := run
			name := run.name + "/goroutines=" + strconv.Itoa(g)
			b.Run(name, func(b *testing.B) {
				b.SetParallelism((g + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				own, server := cpuSelf(), cpuOf(pid)
				b.ResetTimer()
				if g == 1 {
					for i := 0; i < b.N; i++ {
						if err := run.f(); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := run.f(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.StopTimer()
				n := float64(b.N)
				b.ReportMetric(float64((cpuSelf()-own).Nanoseconds())/n, "client-cpu-ns/op")
				b.ReportMetric(float64((cpuOf(pid)-server).Nanoseconds())/n, "server-cpu-ns/op")
			})
		}
	}
	// Paired: short turns of bare then client (200 requests per goroutine each), so that
	// what the rest of a shared machine does falls on both alike; reports the ratio of their
	// summed times, and each side's ns per request.
	for _, g := range []int{1, 32} {
		g := g
		b.Run("paired/goroutines="+strconv.Itoa(g), func(b *testing.B) {
			var spent [2]time.Duration
			each := 200 // requests per goroutine in a turn
			if g > 1 {
				each = 50
			}
			done := 0
			for pairs := 0; done < b.N || pairs < 10; pairs++ {
				for side, f := range []func() error{bareIncr, clientIncr} {
					start := time.Now()
					if err := turn(g, each, f); err != nil {
						b.Fatal(err)
					}
					spent[side] += time.Since(start)
				}
				done += 2 * each * g
			}
			n := float64(done / 2)
			b.ReportMetric(float64(spent[0].Nanoseconds())/n, "bare-ns/req")
			b.ReportMetric(float64(spent[1].Nanoseconds())/n, "client-ns/req")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "client/bare")
		})
	}
}

// turn runs f n times on each of g goroutines and waits for them all.
func turn(g, n int, f func() error) error {
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < n; j++ {
				if err := f(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

var warmOnce sync.Once

// warmUp sends both kinds of request, from 1 and from 32 goroutines, for TALLY_BENCH_WARMUP.
func warmUp(b *testing.B, fs ...func() error) {
	d := 10 * time.Second
	if s := os.Getenv("TALLY_BENCH_WARMUP"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			b.Fatalf("TALLY_BENCH_WARMUP=%q: %v", s, err)
		}
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, g := range []int{1, 32} {
			for _, f := range fs {
				if err := turn(g, 1000/g, f); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
