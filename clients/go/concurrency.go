package tally

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ConcurrencyLimit allows at most MaxPermits permits held at once on a name, by leases that
// expire: a holder that dies gives its permits back at its lease's expiry.
type ConcurrencyLimit struct {
	c          *Client
	name       string
	maxPermits int64
}

// Concurrency returns the concurrency limit name of maxPermits permits.
func (c *Client) Concurrency(name string, maxPermits int64) *ConcurrencyLimit {
	return &ConcurrencyLimit{c: c, name: name, maxPermits: maxPermits}
}

// Lease is permits held until released or ExpiresAt. Pass FencingToken to the resource the
// permit guards, so that it can refuse a paused holder's late writes.
type Lease struct {
	Name            string    `json:"name"`
	ID              string    `json:"id"`
	FencingToken    int64     `json:"fencingToken"`
	Weight          int64     `json:"weight"` // 0 in a renewal's answer: the store does not say it
	ExpiresAt       time.Time `json:"expiresAt"`
	ExpiresInMillis int64     `json:"expiresInMillis"`
}

func (l *ConcurrencyLimit) call(ctx context.Context, method, action string, body map[string]any, out any) error {
	var data any // a nil map would be sent as null
	if body != nil {
		body["maxPermits"] = l.maxPermits
		data = body
	}
	// The routes take no idempotency key: never retried with one.
	return l.c.call(ctx, method, "/v1/concurrency/"+url.PathEscape(l.name)+action, data, noIdempotencyKey, out)
}

// Acquire leases weight permits for ttl, waiting on the server up to maxWait (at most 5m); a
// *DeniedError (errors.Is ErrDenied) if they are not free in time.
func (l *ConcurrencyLimit) Acquire(ctx context.Context, weight int64, ttl, maxWait time.Duration) (Lease, error) {
	var out Lease
	err := l.call(ctx, http.MethodPost, "/acquire", map[string]any{"weight": weight, "ttl": duration(ttl),
		"maxWait": duration(maxWait)}, &out)
	return out, err
}

// Renew extends the lease to ttl from now; ErrLeaseGone if it was released or has expired.
func (l *ConcurrencyLimit) Renew(ctx context.Context, leaseID string, ttl time.Duration) (Lease, error) {
	var out Lease
	err := l.call(ctx, http.MethodPost, "/leases/"+url.PathEscape(leaseID)+"/renew",
		map[string]any{"ttl": duration(ttl)}, &out)
	return out, err
}

// Release gives the lease's permits back: false if it had been released or had expired.
func (l *ConcurrencyLimit) Release(ctx context.Context, leaseID string) (bool, error) {
	var out struct {
		Released bool `json:"released"`
	}
	err := l.call(ctx, http.MethodPost, "/leases/"+url.PathEscape(leaseID)+"/release", map[string]any{}, &out)
	return out.Released, err
}

// InUse is the permits held by unexpired leases.
func (l *ConcurrencyLimit) InUse(ctx context.Context) (int64, error) {
	var out struct {
		InUse int64 `json:"inUse"`
	}
	err := l.call(ctx, http.MethodGet, "?maxPermits="+strconv.FormatInt(l.maxPermits, 10), nil, &out)
	return out.InUse, err
}
