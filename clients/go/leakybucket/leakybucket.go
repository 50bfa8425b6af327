// Package leakybucket has Clever/leakybucket's method set over a Tally server, so a service
// swaps an import: Storage.Create(name, capacity, rate) returns a Bucket whose Add reports the
// state or ErrorFull.
//
// One difference, on purpose: Clever's buckets empty all at once when rate has passed since the
// first Add; Tally's leaky bucket drains continuously (capacity per rate), so a client cannot
// spend 2 x capacity across the instant of a reset. Every Add is one atomic step on the store,
// shared by every process and host, decided on the store's clock.
package leakybucket

import (
	"context"
	"errors"
	"time"

	tally "dev.tally/client"
)

// ErrorFull is returned when the amount requested to add exceeds the remaining space.
var ErrorFull = errors.New("add exceeds free capacity")

// BucketState is a bucket's state after an Add.
type BucketState struct {
	Capacity  uint
	Remaining uint
	Reset     time.Time
}

// Bucket is Clever/leakybucket's interface.
type Bucket interface {
	Capacity() uint
	Remaining() uint
	Reset() time.Time
	Add(uint) (BucketState, error)
}

// Storage creates buckets; Clever/leakybucket's interface.
type Storage interface {
	Create(name string, capacity uint, rate time.Duration) (Bucket, error)
}

// TallyStorage keeps buckets in a Tally server. Timeout bounds each call (Clever's interface
// has no context).
type TallyStorage struct {
	Client  *tally.Client
	Timeout time.Duration
}

// New returns a Storage over the server at baseURL.
func New(baseURL string, opts ...tally.Option) *TallyStorage {
	return &TallyStorage{Client: tally.New(baseURL, opts...), Timeout: 2 * time.Second}
}

// Create returns the bucket name, capacity deep, draining fully in rate, with its current state.
func (s *TallyStorage) Create(name string, capacity uint, rate time.Duration) (Bucket, error) {
	b := &bucket{s: s, limiter: s.Client.Limiter(name, tally.LeakyBucket(int64(capacity), rate))}
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	d, err := b.limiter.Peek(ctx)
	if err != nil {
		return nil, err
	}
	b.remember(d)
	return b, nil
}

type bucket struct {
	s       *TallyStorage
	limiter *tally.Limiter
	state   BucketState
}

func (b *bucket) Capacity() uint   { return b.state.Capacity }
func (b *bucket) Remaining() uint  { return b.state.Remaining }
func (b *bucket) Reset() time.Time { return b.state.Reset }

func (b *bucket) remember(d tally.Decision) {
	b.state = BucketState{Capacity: uint(d.Limit), Remaining: uint(d.Remaining),
		Reset: time.Now().Add(d.ResetAfter)}
}

// Add takes amount from the bucket's free space, or returns ErrorFull and the state.
func (b *bucket) Add(amount uint) (BucketState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.s.Timeout)
	defer cancel()
	d, err := b.limiter.Try(ctx, int64(amount))
	if err != nil {
		return b.state, err
	}
	b.remember(d)
	if !d.Allowed {
		return b.state, ErrorFull
	}
	return b.state, nil
}
