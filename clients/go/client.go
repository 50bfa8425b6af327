// Package tally is a client for Tally's HTTP API (`tally serve`): exact counters and rate limits
// shared by every goroutine, process and host. Standard library only; every call takes a
// context.Context.
//
//	c := tally.New("http://127.0.0.1:8080")
//	n, err := c.Incr(ctx, "views:episode:512", 1)
//	d, err := c.Limiter("api:user:42", tally.TokenBucket(100, time.Minute)).Try(ctx, 1)
package tally

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one Tally server. It is safe for concurrent use and keeps connections alive.
type Client struct {
	base    string
	token   string
	http    *http.Client
	retries int
	backoff time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends `Authorization: Bearer token` on every call.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the http.Client (for TLS settings, a proxy, timeouts).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetries makes every changing call carry an idempotency key and retry up to n times on a
// lost answer, a 503 or a 504, with exponential backoff from base: the store remembers the key,
// so a call that had applied is answered again, never applied twice.
func WithRetries(n int, base time.Duration) Option {
	return func(c *Client) { c.retries, c.backoff = n, base }
}

// New returns a client of the server at baseURL, e.g. "http://127.0.0.1:8080".
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		base: strings.TrimRight(baseURL, "/"),
		http: &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     30 * time.Second, // under the server's 60 s idle timeout
		}},
		backoff: 50 * time.Millisecond,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// CallOption adjusts one counter call.
type CallOption func(map[string]any, *string)

// Default is the value a missing counter starts from (0 unless given).
func Default(v float64) CallOption {
	return func(b map[string]any, _ *string) { b["default"] = number(v) }
}

// MustExist makes the call fail with ErrNotFound instead of creating a missing counter.
func MustExist() CallOption { return func(b map[string]any, _ *string) { b["mustExist"] = true } }

// TTL sets the counter's time to live (Put, Add).
func TTL(d time.Duration) CallOption {
	return func(b map[string]any, _ *string) { b["ttl"] = duration(d) }
}

// IdempotencyKey makes the call exactly once: a repeat with the same key applies nothing and
// answers what the first answered.
func IdempotencyKey(k string) CallOption { return func(_ map[string]any, key *string) { *key = k } }

func number(v float64) any {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return int64(v)
	}
	return v
}

func duration(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

func counterPath(key, action string) string { return "/v1/counters/" + url.PathEscape(key) + action }

// Incr adds delta to the counter (a missing one starts at Default, 0) and returns its value.
func (c *Client) Incr(ctx context.Context, key string, delta int64, opts ...CallOption) (int64, error) {
	return c.intStep(ctx, key, "/incr", delta, opts)
}

// Decr subtracts delta (a missing counter starts at Default, which is not negated).
func (c *Client) Decr(ctx context.Context, key string, delta int64, opts ...CallOption) (int64, error) {
	return c.intStep(ctx, key, "/decr", delta, opts)
}

// IncrFloat adds a decimal delta; the counter becomes floating for good (Redis' INCRBYFLOAT).
func (c *Client) IncrFloat(ctx context.Context, key string, delta float64, opts ...CallOption) (float64, error) {
	v, err := c.step(ctx, key, "/incr", delta, opts)
	if err != nil {
		return 0, err
	}
	return v.Float64()
}

func (c *Client) intStep(ctx context.Context, key, action string, delta int64, opts []CallOption) (int64, error) {
	if len(opts) > 0 {
		v, err := c.step(ctx, key, action, delta, opts)
		if err != nil {
			return 0, err
		}
		return toInt(v)
	}
	// The common call: the body written without a map or encoding/json, the value read
	// without a decoder when the answer is the usual {"key":...,"value":N}.
	body := deltaOne
	if delta != 1 {
		body = append(strconv.AppendInt(append(make([]byte, 0, 32), `{"delta":`...), delta, 10), '}')
	}
	answer, err := c.do(ctx, http.MethodPost, counterPath(key, action), body, "")
	if err != nil {
		return 0, err
	}
	if v, ok := plainValue(answer); ok {
		return v, nil
	}
	var out struct{ Value json.Number }
	if err := decode(answer, &out); err != nil {
		return 0, err
	}
	return toInt(out.Value)
}

// deltaOne is the body of Incr(ctx, key, 1), shared by every call: net/http only reads a body.
var deltaOne = []byte(`{"delta":1}`)

// plainValue reads N from an answer ending in "value":N} where N is a plain integer; ok is
// false for anything else (a decimal, an exponent, a member after value), which the caller
// decodes with encoding/json. A '"' inside a key is escaped in JSON, so the last "value": is
// the member.
func plainValue(answer []byte) (int64, bool) {
	i := bytes.LastIndex(answer, []byte(`"value":`))
	if i < 0 || len(answer) < i+10 || answer[len(answer)-1] != '}' {
		return 0, false
	}
	digits := answer[i+8 : len(answer)-1]
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 { // 18 digits cannot overflow; longer ones go the slow way
		return 0, false
	}
	var v int64
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		v = v*10 + int64(d-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (c *Client) step(ctx context.Context, key, action string, delta any, opts []CallOption) (json.Number, error) {
	body := map[string]any{"delta": delta}
	idem := ""
	for _, o := range opts {
		o(body, &idem)
	}
	var out struct{ Value json.Number }
	return out.Value, c.call(ctx, http.MethodPost, counterPath(key, action), body, idem, &out)
}

// Get reads the counter; ErrNotFound if there is none.
func (c *Client) Get(ctx context.Context, key string) (int64, error) {
	var out struct{ Value json.Number }
	if err := c.call(ctx, http.MethodGet, counterPath(key, ""), nil, "", &out); err != nil {
		return 0, err
	}
	return toInt(out.Value)
}

// GetFloat reads a counter that may be floating.
func (c *Client) GetFloat(ctx context.Context, key string) (float64, error) {
	var out struct{ Value json.Number }
	if err := c.call(ctx, http.MethodGet, counterPath(key, ""), nil, "", &out); err != nil {
		return 0, err
	}
	return out.Value.Float64()
}

// Put sets the counter to value (with TTL, if given).
func (c *Client) Put(ctx context.Context, key string, value int64, opts ...CallOption) error {
	body := map[string]any{"value": value}
	idem := ""
	for _, o := range opts {
		o(body, &idem)
	}
	return c.call(ctx, http.MethodPut, counterPath(key, ""), body, idem, nil)
}

// Add sets the counter only if it is absent; true if it did.
func (c *Client) Add(ctx context.Context, key string, value int64, opts ...CallOption) (bool, error) {
	body := map[string]any{"value": value}
	idem := ""
	for _, o := range opts {
		o(body, &idem)
	}
	var out struct{ Added bool }
	err := c.call(ctx, http.MethodPost, counterPath(key, "/add"), body, idem, &out)
	return out.Added, err
}

// Pop reads and deletes the counter in one atomic step; ErrNotFound if there was none.
func (c *Client) Pop(ctx context.Context, key string, opts ...CallOption) (int64, error) {
	idem := ""
	for _, o := range opts {
		o(nil, &idem)
	}
	var out struct{ Value json.Number }
	if err := c.call(ctx, http.MethodPost, counterPath(key, "/pop"), nil, idem, &out); err != nil {
		return 0, err
	}
	return toInt(out.Value)
}

// Delete removes the counter; false if there was none.
func (c *Client) Delete(ctx context.Context, key string) (bool, error) {
	err := c.call(ctx, http.MethodDelete, counterPath(key, ""), nil, "", nil)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Keys lists the counters whose keys start with prefix, sorted, at most limit; truncated says
// whether there were more.
func (c *Client) Keys(ctx context.Context, prefix string, limit int) (keys []string, truncated bool, err error) {
	var out struct {
		Keys      []string
		Truncated bool
	}
	path := "/v1/counters?prefix=" + url.QueryEscape(prefix) + "&limit=" + strconv.Itoa(limit)
	err = c.call(ctx, http.MethodGet, path, nil, "", &out)
	return out.Keys, out.Truncated, err
}

// Op is one operation of a transaction; build it with IncrOp, DecrOp, PutOp, GetOp, DeleteOp.
type Op map[string]any

func IncrOp(key string, delta int64) Op { return Op{"op": "incr", "key": key, "delta": delta} }
func DecrOp(key string, delta int64) Op { return Op{"op": "decr", "key": key, "delta": delta} }
func PutOp(key string, value int64) Op  { return Op{"op": "put", "key": key, "value": value} }
func GetOp(key string) Op               { return Op{"op": "get", "key": key} }
func DeleteOp(key string) Op            { return Op{"op": "delete", "key": key} }
func (o Op) WithDefault(v int64) Op     { o["default"] = v; return o }
func (o Op) WithTTL(d time.Duration) Op { o["ttl"] = duration(d); return o }

// OpResult is one operation's outcome: its value (nil for a get of an absent counter) or, for a
// delete, whether there was something to delete.
type OpResult struct {
	Key     string       `json:"key"`
	Value   *json.Number `json:"value"`
	Deleted *bool        `json:"deleted"`
}

// Transaction applies every op or none, in one request (at most 1000 ops).
func (c *Client) Transaction(ctx context.Context, ops ...Op) ([]OpResult, error) {
	var out struct{ Results []OpResult }
	err := c.call(ctx, http.MethodPost, "/v1/transactions", map[string]any{"ops": ops}, "", &out)
	return out.Results, err
}

func toInt(n json.Number) (int64, error) {
	v, err := n.Int64()
	if err != nil {
		return 0, &Error{Status: 0, Code: "floating", Detail: "the counter holds " + n.String() + ", not an integer: use GetFloat/IncrFloat", kind: ErrConflict}
	}
	return v, nil
}

func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// call sends one request, retrying as the client is configured, and decodes a 200 into out.
func (c *Client) call(ctx context.Context, method, path string, body any, idem string, out any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return &Error{Code: "bad_request", Detail: err.Error(), kind: ErrBadRequest}
		}
	}
	answer, err := c.do(ctx, method, path, data, idem)
	if err != nil || out == nil {
		return err
	}
	return decode(answer, out)
}

func decode(answer []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(answer))
	d.UseNumber()
	return d.Decode(out)
}

// noIdempotencyKey marks a call whose route takes no key: none is made up for its retries.
const noIdempotencyKey = "\x00"

// repeatsItself marks a call that applies once however often it is sent (a settlement names its
// reservation and amount): it carries no key, and is retried all the same.
const repeatsItself = "\x01"

// do sends one request, retrying as the client is configured, and returns the body of a 200;
// any other status is an error.
func (c *Client) do(ctx context.Context, method, path string, data []byte, idem string) ([]byte, error) {
	changing := method != http.MethodGet
	repeatable := idem == repeatsItself
	keyless := idem == noIdempotencyKey || repeatable
	if keyless {
		idem = ""
	}
	if changing && idem == "" && c.retries > 0 && !keyless {
		idem = newIdempotencyKey()
	}
	for attempt := 0; ; attempt++ {
		status, answer, err := c.send(ctx, method, path, data, idem)
		if err == nil {
			if status == http.StatusOK {
				return answer, nil
			}
			err = errorOf(status, answer)
		}
		retryable := errors.Is(err, ErrUnavailable) || (errors.Is(err, ErrTimeout) && ctx.Err() == nil)
		if attempt >= c.retries || !retryable || (changing && idem == "" && !repeatable) {
			return nil, err
		}
		wait := c.backoff << attempt
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// jsonType is the Content-Type field's value, shared by every request (net/http only reads it).
var jsonType = []string{"application/json"}

func (c *Client) send(ctx context.Context, method, path string, data []byte, idem string) (int, []byte, error) {
	var rd io.Reader
	if data != nil {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, &Error{Code: "bad_request", Detail: err.Error(), kind: ErrBadRequest}
	}
	if data != nil {
		req.Header["Content-Type"] = jsonType
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", strconv.Quote(idem))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return 0, nil, &Error{Detail: "cannot connect to Tally: " + err.Error(), kind: ErrUnavailable, cause: err}
		}
		return 0, nil, &Error{Detail: fmt.Sprintf("no answer to %s %s: %v", method, path, err), kind: ErrTimeout, cause: err}
	}
	defer resp.Body.Close()
	answer, err := readBody(resp)
	if err != nil {
		return 0, nil, &Error{Detail: fmt.Sprintf("answer to %s %s cut short: %v", method, path, err), kind: ErrTimeout, cause: err}
	}
	return resp.StatusCode, answer, nil
}

// readBody reads an answer whose length is announced into a slice of that size (one allocation,
// where io.ReadAll starts at 512 bytes and grows), and reads on to the end so that the
// connection goes back to the pool.
func readBody(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n < 0 || n > 1<<20 {
		return io.ReadAll(resp.Body)
	}
	buf := make([]byte, n+1)
	got, err := io.ReadFull(resp.Body, buf)
	switch {
	case (err == io.ErrUnexpectedEOF || err == io.EOF) && int64(got) == n: // EOF: an empty body
		return buf[:n], nil
	case err == nil: // more than announced: net/http does not let that happen
		return nil, fmt.Errorf("more than the %d bytes announced", n)
	default:
		return nil, err
	}
}

func errorOf(status int, answer []byte) error {
	var p problem
	_ = json.Unmarshal(answer, &p)
	e := fromProblem(status, p)
	if status == http.StatusTooManyRequests {
		return &DeniedError{Err: e, Decision: decodeDecision(answer)}
	}
	return e
}
