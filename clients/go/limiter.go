package tally

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Limit is one limit of a limiter; build it with TokenBucket, LeakyBucket, GCRA, FixedWindow,
// SlidingWindow or Quota.
type Limit map[string]string

func rate(n int64, period time.Duration) string { return fmt.Sprintf("%d/%s", n, duration(period)) }

// TokenBucket holds capacity tokens, refilled at capacity per period.
func TokenBucket(capacity int64, period time.Duration) Limit {
	return Limit{"tokenBucket": rate(capacity, period)}
}

// LeakyBucket is capacity deep and drains fully in period.
func LeakyBucket(capacity int64, period time.Duration) Limit {
	return Limit{"leakyBucket": rate(capacity, period)}
}

// GCRA is redis-cell's `CL.THROTTLE key burst rate period`.
func GCRA(burst, count int64, period time.Duration) Limit {
	return Limit{"gcra": fmt.Sprintf("%d:%d/%s", burst, count, duration(period))}
}

// FixedWindow allows limit per clock window.
func FixedWindow(limit int64, window time.Duration) Limit {
	return Limit{"fixedWindow": rate(limit, window)}
}

// SlidingWindow allows about limit in any window.
func SlidingWindow(limit int64, window time.Duration) Limit {
	return Limit{"slidingWindow": rate(limit, window)}
}

// Quota is an allowance per calendar period ("day", "week", "month"...), in zone ("" is UTC).
func Quota(allowance int64, period, zone string) Limit {
	spec := fmt.Sprintf("%d/%s", allowance, period)
	if zone != "" {
		spec += "@" + zone
	}
	return Limit{"quota": spec}
}

// Policy names the limit in RateLimit header fields.
func (l Limit) Policy(name string) Limit { l["policy"] = name; return l }

// Decision is a limiter's answer.
type Decision struct {
	Name      string
	Allowed   bool
	Permits   int64
	Remaining int64
	Limit     int64
	// RetryAfter is how long until the same request fits; NeverFits is true when it cannot
	// (more permits than the limit).
	RetryAfter time.Duration
	NeverFits  bool
	// ResetAfter is how long until the limiter is full again.
	ResetAfter time.Duration
}

type decisionJSON struct {
	Name             string `json:"name"`
	Allowed          bool   `json:"allowed"`
	Permits          int64  `json:"permits"`
	Remaining        int64  `json:"remaining"`
	Limit            int64  `json:"limit"`
	RetryAfterMillis *int64 `json:"retryAfterMillis"`
	ResetAfterMillis int64  `json:"resetAfterMillis"`
}

func (j decisionJSON) decision() Decision {
	d := Decision{Name: j.Name, Allowed: j.Allowed, Permits: j.Permits, Remaining: j.Remaining,
		Limit: j.Limit, ResetAfter: time.Duration(j.ResetAfterMillis) * time.Millisecond}
	if j.RetryAfterMillis == nil {
		d.NeverFits = !j.Allowed
	} else {
		d.RetryAfter = time.Duration(*j.RetryAfterMillis) * time.Millisecond
	}
	return d
}

func decodeDecision(answer []byte) Decision {
	var j decisionJSON
	_ = json.Unmarshal(answer, &j)
	return j.decision()
}

// Limiter is one rate limiter; every call is one atomic step on the store.
type Limiter struct {
	c      *Client
	name   string
	limits map[string]any
}

// Limiter returns the limiter name with limits (granted only if all allow).
func (c *Client) Limiter(name string, limits ...Limit) *Limiter {
	body := map[string]any{}
	if len(limits) == 1 {
		body["limit"] = limits[0]
	} else {
		body["limits"] = limits
	}
	return &Limiter{c: c, name: name, limits: body}
}

// path is the route of one of the limiter's actions.
func (l *Limiter) path(action string) string {
	return "/v1/limiters/" + url.PathEscape(l.name) + action
}

// body is a request's body: the limiter's limits and the action's own members.
func (l *Limiter) body(extra map[string]any) map[string]any {
	body := make(map[string]any, len(l.limits)+len(extra))
	for k, v := range l.limits {
		body[k] = v
	}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func (l *Limiter) post(ctx context.Context, action string, extra map[string]any) (Decision, error) {
	var out decisionJSON
	err := l.c.call(ctx, http.MethodPost, l.path(action), l.body(extra), "", &out)
	if denied, ok := err.(*DeniedError); ok && action == "/try" {
		return denied.Decision, nil
	}
	return out.decision(), err
}

// Try takes permits if they are there now. A refusal is a Decision with Allowed false, not an
// error.
func (l *Limiter) Try(ctx context.Context, permits int64) (Decision, error) {
	return l.post(ctx, "/try", map[string]any{"permits": permits})
}

// Acquire takes permits, waiting on the server up to maxWait (at most 5m); a *DeniedError
// (errors.Is ErrDenied) if they cannot be had in time.
func (l *Limiter) Acquire(ctx context.Context, permits int64, maxWait time.Duration) (Decision, error) {
	return l.post(ctx, "/acquire", map[string]any{"permits": permits, "maxWait": duration(maxWait)})
}

// Peek says what is available, taking nothing.
func (l *Limiter) Peek(ctx context.Context) (Decision, error) { return l.post(ctx, "/peek", nil) }

// Refund gives permits back.
func (l *Limiter) Refund(ctx context.Context, permits int64) (Decision, error) {
	return l.post(ctx, "/refund", map[string]any{"permits": permits})
}

// Reset makes the limiter full again.
func (l *Limiter) Reset(ctx context.Context) (Decision, error) { return l.post(ctx, "/reset", nil) }

// Reconfigure stores this handle's limits for every process, keeping what was consumed.
func (l *Limiter) Reconfigure(ctx context.Context) (Decision, error) {
	return l.post(ctx, "/reconfigure", nil)
}
