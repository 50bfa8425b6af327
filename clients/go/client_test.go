package tally_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tally "dev.tally/client"
	"dev.tally/client/leakybucket"
)

const childEnv = "TALLY_GO_CHILD"

// child is one OS process of TestProcessesShareExactly: it counts or takes, then prints.
func child() int {
	c := tally.New(os.Getenv("TALLY_URL"))
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv("TALLY_GO_N"))
	granted := 0
	for i := 0; i < n; i++ {
		if _, err := c.Incr(ctx, os.Getenv("TALLY_GO_KEY"), 1); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		d, err := c.Limiter(os.Getenv("TALLY_GO_KEY")+":lim", tally.TokenBucket(100, time.Hour)).Try(ctx, 1)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if d.Allowed {
			granted++
		}
	}
	fmt.Print(granted)
	return 0
}

// each runs f on every server: file: and Redis.
func each(t *testing.T, f func(t *testing.T, url string, c *tally.Client, key func(string) string)) {
	for _, s := range servers {
		s := s
		t.Run(s.name, func(t *testing.T) {
			prefix := t.Name() + ":"
			f(t, s.url, tally.New(s.url), func(k string) string { return prefix + k })
		})
	}
}

func TestCounters(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		k := key("views")
		mustEqual(t, must(c.Incr(ctx, k, 1)), int64(1))
		mustEqual(t, must(c.Incr(ctx, k, 5)), int64(6))
		mustEqual(t, must(c.Decr(ctx, k, 2)), int64(4))
		mustEqual(t, must(c.Get(ctx, k)), int64(4))
		mustEqual(t, must(c.Incr(ctx, key("d"), 1, tally.Default(10))), int64(11))
		if err := c.Put(ctx, k, 40, tally.TTL(time.Hour)); err != nil {
			t.Fatal(err)
		}
		mustEqual(t, must(c.Add(ctx, k, 1)), false)
		mustEqual(t, must(c.Pop(ctx, k)), int64(40))
		if _, err := c.Get(ctx, k); !errors.Is(err, tally.ErrNotFound) {
			t.Fatalf("want ErrNotFound, got %v", err)
		}
		mustEqual(t, must(c.IncrFloat(ctx, key("f"), 0.5)), 0.5)
		var e *tally.Error
		if _, err := c.Incr(ctx, key("f"), 1); !errors.As(err, &e) || e.Code != "floating" || !errors.Is(err, tally.ErrConflict) {
			t.Fatalf("an integer incr of a floating counter: want the floating conflict, got %v", err)
		}
		mustEqual(t, must(c.GetFloat(ctx, key("f"))), 1.5) // it applied; only the answer is not an integer
		quoted := key(`q"value":7}`)
		mustEqual(t, must(c.Incr(ctx, quoted, 41)), int64(41))
		mustEqual(t, must(c.Decr(ctx, quoted, 50)), int64(-9))
		if err := c.Put(ctx, key("big"), 1<<62); err != nil {
			t.Fatal(err)
		}
		mustEqual(t, must(c.Incr(ctx, key("big"), 1)), int64(1<<62+1))
		if _, err := c.Incr(ctx, key("big"), 1<<62); !errors.Is(err, tally.ErrConflict) {
			t.Fatalf("past 64 bits: want ErrConflict, got %v", err)
		}
		slash := key("req:path:/a b%?#")
		mustEqual(t, must(c.Incr(ctx, slash, 41)), int64(41))
		mustEqual(t, must(c.Get(ctx, slash)), int64(41))
		keys, truncated, err := c.Keys(ctx, key("req:"), 10)
		if err != nil || truncated || len(keys) != 1 || keys[0] != slash {
			t.Fatalf("keys %v %v %v", keys, truncated, err)
		}
		mustEqual(t, must(c.Delete(ctx, slash)), true)
		mustEqual(t, must(c.Delete(ctx, slash)), false)
	})
}

func TestErrorsAreTyped(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		if _, err := c.Incr(ctx, key("absent"), 1, tally.MustExist()); !errors.Is(err, tally.ErrNotFound) {
			t.Fatalf("want ErrNotFound, got %v", err)
		}
		if _, err := c.Limiter(key("lim"), tally.TokenBucket(5, time.Minute)).Try(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Incr(ctx, key("lim"), 1); !errors.Is(err, tally.ErrConflict) {
			t.Fatalf("want ErrConflict, got %v", err)
		}
		if _, err := c.Incr(ctx, key("paid"), 5, tally.IdempotencyKey(key("order-1"))); err != nil {
			t.Fatal(err)
		}
		mustEqual(t, must(c.Incr(ctx, key("paid"), 5, tally.IdempotencyKey(key("order-1")))), int64(5))
		if _, err := c.Incr(ctx, key("paid"), 6, tally.IdempotencyKey(key("order-1"))); !errors.Is(err, tally.ErrBadRequest) {
			t.Fatalf("a reused key on another operation: want ErrBadRequest (422), got %v", err)
		}
		var e *tally.Error
		if _, err := c.Get(ctx, key("absent")); !errors.As(err, &e) || e.Status != 404 || e.MaybeApplied() {
			t.Fatalf("want a 404 *Error, got %v", err)
		}
		down := tally.New("http://127.0.0.1:1")
		if _, err := down.Incr(ctx, "x", 1); !errors.Is(err, tally.ErrUnavailable) {
			t.Fatalf("want ErrUnavailable, got %v", err)
		}
	})
}

func TestTransaction(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		r, err := c.Transaction(context.Background(), tally.IncrOp(key("a"), 2),
			tally.DeleteOp(key("a")), tally.GetOp(key("a")))
		if err != nil {
			t.Fatal(err)
		}
		if len(r) != 3 || r[0].Value.String() != "2" || !*r[1].Deleted || r[2].Value != nil {
			t.Fatalf("results %+v", r)
		}
	})
}

func TestLimiter(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		l := c.Limiter(key("api"), tally.TokenBucket(3, time.Minute))
		for i, want := range []bool{true, true, true, false} {
			d, err := l.Try(ctx, 1)
			if err != nil || d.Allowed != want {
				t.Fatalf("try %d: %+v %v", i, d, err)
			}
		}
		_, err := l.Acquire(ctx, 1, 0)
		var denied *tally.DeniedError
		if !errors.As(err, &denied) || !errors.Is(err, tally.ErrDenied) || denied.Decision.RetryAfter <= 0 {
			t.Fatalf("want a DeniedError with a retry-after, got %v", err)
		}
		mustEqual(t, must(l.Refund(ctx, 2)).Remaining, int64(2))
		mustEqual(t, must(l.Reset(ctx)).Remaining, int64(3))
	})
}

func TestConcurrencyLeases(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		exports := c.Concurrency(key("exports"), 2)
		first := must(exports.Acquire(ctx, 2, time.Minute, 0))
		mustEqual(t, first.Weight, int64(2))
		mustEqual(t, must(exports.InUse(ctx)), int64(2))
		if _, err := exports.Acquire(ctx, 1, time.Minute, 50*time.Millisecond); !errors.Is(err, tally.ErrDenied) {
			t.Fatalf("want ErrDenied, got %v", err)
		}
		if renewed := must(exports.Renew(ctx, first.ID, time.Hour)); renewed.ExpiresInMillis <= 60000 {
			t.Fatalf("renewed for an hour, but %+v", renewed)
		}
		mustEqual(t, must(exports.Release(ctx, first.ID)), true)
		mustEqual(t, must(exports.Release(ctx, first.ID)), false) // twice: harmless
		mustEqual(t, must(exports.InUse(ctx)), int64(0))
		if _, err := exports.Renew(ctx, first.ID, time.Minute); !errors.Is(err, tally.ErrLeaseGone) {
			t.Fatalf("want ErrLeaseGone, got %v", err)
		}
		second := must(exports.Acquire(ctx, 1, time.Minute, 0))
		if second.FencingToken <= first.FencingToken {
			t.Fatalf("fencing tokens must increase: %d then %d", first.FencingToken, second.FencingToken)
		}
		if _, err := exports.Acquire(ctx, 3, time.Minute, 0); !errors.Is(err, tally.ErrBadRequest) {
			t.Fatalf("want ErrBadRequest for weight > maxPermits, got %v", err)
		}
	})
}

func TestReservationSettlesAtTheRealCost(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		tokens := c.Limiter(key("tokens"), tally.TokenBucket(10, time.Hour))
		below := must(tokens.Reserve(ctx, 6, 5*time.Minute))
		if !below.Granted() || below.ID == "" || below.Estimate != 6 || below.Decision.Remaining != 4 {
			t.Fatalf("reserve 6 of 10: %+v", below)
		}
		mustEqual(t, must(below.Settle(ctx, 2)).Remaining, int64(8)) // the surplus of 4 given back
		mustEqual(t, must(tokens.Peek(ctx)).Remaining, int64(8))
		above := must(tokens.Reserve(ctx, 8, 5*time.Minute))
		settled := must(above.Settle(ctx, 12)) // 4 beyond the estimate: into debt, 4 tokens below empty
		if !settled.Allowed || settled.Remaining != 0 || !near(settled.ResetAfter, 14*6*time.Minute) {
			t.Fatalf("settled 4 beyond the estimate: %+v", settled)
		}
		later := must(tokens.Try(ctx, 1))
		if later.Allowed || !near(later.RetryAfter, 5*6*time.Minute) { // the debt, then one token
			t.Fatalf("after the debt: %+v", later)
		}
	})
}

func TestReservationClosesOnce(t *testing.T) {
	each(t, func(t *testing.T, url string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		tokens := c.Limiter(key("tokens"), tally.TokenBucket(10, time.Hour))
		r := must(tokens.Reserve(ctx, 5, 5*time.Minute))
		mustEqual(t, must(r.Settle(ctx, 3)).Remaining, int64(7))
		must(tokens.Try(ctx, 2))                                 // another caller moves the limiter on
		mustEqual(t, must(r.Settle(ctx, 3)).Remaining, int64(7)) // a retry: the first answer, applied once
		mustEqual(t, must(tokens.Peek(ctx)).Remaining, int64(5))
		var e *tally.Error
		if _, err := r.Settle(ctx, 4); !errors.Is(err, tally.ErrReservationGone) || !errors.As(err, &e) || e.Status != 410 {
			t.Fatalf("settled again at another amount: want ErrReservationGone (410), got %v", err)
		}
		if _, err := r.Cancel(ctx); !errors.Is(err, tally.ErrReservationGone) {
			t.Fatalf("cancelled after a settlement: want ErrReservationGone, got %v", err)
		}
		mustEqual(t, must(tokens.Peek(ctx)).Remaining, int64(5)) // nothing changed

		cancelled := must(tokens.Reserve(ctx, 4, 5*time.Minute))
		mustEqual(t, must(cancelled.Cancel(ctx)).Remaining, int64(5))
		if _, err := tokens.Reservation(cancelled.ID).Settle(ctx, 4); !errors.Is(err, tally.ErrReservationGone) {
			t.Fatalf("settled after a cancellation: want ErrReservationGone, got %v", err)
		}
		held := must(tokens.Reserve(ctx, 4, 5*time.Minute))
		// a process that has only the id, retrying as it is configured
		other := tally.New(url, tally.WithRetries(2, 10*time.Millisecond))
		handle := other.Limiter(key("tokens"), tally.TokenBucket(10, time.Hour)).Reservation(held.ID)
		mustEqual(t, must(handle.Settle(ctx, 1)).Remaining, int64(4))
		mustEqual(t, must(tokens.Peek(ctx)).Remaining, int64(4))
	})
}

func TestReservationNotSettledInItsTTLIsSettledAtItsEstimate(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		tokens := c.Limiter(key("tokens"), tally.TokenBucket(10, time.Hour))
		r := must(tokens.Reserve(ctx, 3, 200*time.Millisecond))
		time.Sleep(500 * time.Millisecond) // the server's clock: nothing to inject over HTTP
		if _, err := r.Settle(ctx, 1); !errors.Is(err, tally.ErrReservationGone) {
			t.Fatalf("settled after its ttl: want ErrReservationGone, got %v", err)
		}
		mustEqual(t, must(tokens.Peek(ctx)).Remaining, int64(7)) // the estimate stays taken
	})
}

func TestRefusedReservationHoldsNothing(t *testing.T) {
	each(t, func(t *testing.T, _ string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		tokens := c.Limiter(key("tokens"), tally.TokenBucket(10, time.Hour))
		must(tokens.Try(ctx, 8))
		r := must(tokens.Reserve(ctx, 5, 5*time.Minute))
		if r.Granted() || r.ID != "" || r.Decision.Remaining != 2 || r.Decision.RetryAfter <= 0 {
			t.Fatalf("reserve 5 of 2 left: want a refusal saying when, got %+v", r)
		}
		if _, err := r.Settle(ctx, 1); !errors.Is(err, tally.ErrBadRequest) {
			t.Fatalf("settling a refused reservation: want ErrBadRequest, got %v", err)
		}
		mustEqual(t, must(tokens.Peek(ctx)).Remaining, int64(2))
	})
}

func TestReserveRetriedWithItsIDTakesOnce(t *testing.T) {
	each(t, func(t *testing.T, url string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		tokens := c.Limiter(key("tokens"), tally.TokenBucket(10, time.Hour))
		id := strings.NewReplacer("/", "-").Replace("req-" + t.Name())
		first := must(tokens.Reserve(ctx, 4, 5*time.Minute, tally.ReservationID(id)))
		retry := must(tokens.Reserve(ctx, 4, 5*time.Minute, tally.ReservationID(id)))
		if first.ID != id || retry.ID != id || first.Decision.Remaining != 6 || retry.Decision.Remaining != 6 {
			t.Fatalf("reserved twice with id %s: %+v then %+v", id, first, retry)
		}
		mustEqual(t, must(tokens.Peek(ctx)).Remaining, int64(6))
		retrying := tally.New(url, tally.WithRetries(2, 10*time.Millisecond)) // its own key for each reserve: the id
		drawn := must(retrying.Limiter(key("tokens"), tally.TokenBucket(10, time.Hour)).Reserve(ctx, 1, time.Minute))
		mustEqual(t, len(drawn.ID), 32)
		mustEqual(t, must(retry.Settle(ctx, 2)).Remaining, int64(7))
	})
}

// near says whether d is within 5 s under want: what passed since the server decided.
func near(d, want time.Duration) bool { return d <= want && d > want-5*time.Second }

func TestLeakyBucketHasCleverMethodSet(t *testing.T) {
	each(t, func(t *testing.T, url string, _ *tally.Client, key func(string) string) {
		var storage leakybucket.Storage = leakybucket.New(url)
		b, err := storage.Create(key("bucket"), 10, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, b.Capacity(), uint(10))
		mustEqual(t, b.Remaining(), uint(10))
		state, err := b.Add(7)
		if err != nil || state.Remaining != 3 {
			t.Fatalf("add 7: %+v %v", state, err)
		}
		state, err = b.Add(4)
		if err != leakybucket.ErrorFull || state.Remaining != 3 {
			t.Fatalf("add 4: want ErrorFull with 3 left, got %+v %v", state, err)
		}
		if !b.Reset().After(time.Now()) {
			t.Fatalf("reset %v is not ahead", b.Reset())
		}
	})
}

func TestGoroutinesAndProcessesShareExactly(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	each(t, func(t *testing.T, url string, c *tally.Client, key func(string) string) {
		ctx := context.Background()
		k := key("shared")
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 25; i++ {
					if _, err := c.Incr(ctx, k+":g", 1); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		mustEqual(t, must(c.Get(ctx, k+":g")), int64(800))
		const procs, n = 4, 60
		outs := make([][]byte, procs)
		errs := make([]error, procs)
		for p := 0; p < procs; p++ {
			p := p
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(os.Environ(), childEnv+"=1", "TALLY_URL="+url, "TALLY_GO_KEY="+k, "TALLY_GO_N="+strconv.Itoa(n))
				outs[p], errs[p] = cmd.Output()
			}()
		}
		wg.Wait()
		granted := 0
		for p := range outs {
			if errs[p] != nil {
				t.Fatalf("process %d: %v", p, errs[p])
			}
			g, _ := strconv.Atoi(string(outs[p]))
			granted += g
		}
		mustEqual(t, must(c.Get(ctx, k)), int64(procs*n))
		mustEqual(t, granted, 100) // 240 tries on a bucket of 100 that refills in an hour
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func mustEqual[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}
