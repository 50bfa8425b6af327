package tally_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime"
	"testing"

	tally "dev.tally/client"
)

// BenchmarkIncr: the client's Incr against a bare net/http request to the same route, from 1 and
// 32 goroutines, on the file: server TestMain started. What the client adds is the difference:
//
//	go test -run '^$' -bench Incr -count 4 ./
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
	for _, g := range []int{1, 32} {
		for _, run := range []struct {
			name string
			f    func() error
		}{{"bare", bareIncr}, {"client", clientIncr}} {
			run := run
			b.Run(run.name+"/goroutines="+itoa(g), func(b *testing.B) {
				b.SetParallelism((g + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				if g == 1 {
					for i := 0; i < b.N; i++ {
						if err := run.f(); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := run.f(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
