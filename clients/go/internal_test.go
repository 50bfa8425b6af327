package tally

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPlainValueReadsOnlyPlainIntegers(t *testing.T) {
	for _, c := range []struct {
		answer string
		want   int64
		ok     bool
	}{
		{`{"key":"k","value":1}`, 1, true},
		{`{"key":"k","value":-42}`, -42, true},
		{`{"key":"k","value":0}`, 0, true},
		{`{"key":"k","value":999999999999999999}`, 999999999999999999, true},
		{`{"key":"q\"value\":7}","value":41}`, 41, true},
		{`{"key":"k","value":1234567890123456789}`, 0, false}, // 19 digits: encoding/json's
		{`{"key":"k","value":1.5}`, 0, false},
		{`{"key":"k","value":1e3}`, 0, false},
		{`{"key":"k","value":-}`, 0, false},
		{`{"key":"k","value":}`, 0, false},
		{`{"key":"k","value":1,"ttl":5}`, 0, false},
		{`{"key":"k","value": 1}`, 0, false},
		{`{"key":"k"}`, 0, false},
		{``, 0, false},
	} {
		got, ok := plainValue([]byte(c.answer))
		if got != c.want || ok != c.ok {
			t.Errorf("plainValue(%s) = %d, %v; want %d, %v", c.answer, got, ok, c.want, c.ok)
		}
	}
}

func TestReadBodyTakesWhatIsAnnounced(t *testing.T) {
	for _, c := range []struct {
		length int64
		body   string
		ok     bool
	}{
		{0, "", true},
		{21, `{"key":"k","value":1}`, true},
		{-1, "unannounced", true},
		{10, "short", false}, // the connection died mid-body
	} {
		resp := &http.Response{ContentLength: c.length, Body: io.NopCloser(strings.NewReader(c.body))}
		got, err := readBody(resp)
		if c.ok && (err != nil || string(got) != c.body) {
			t.Errorf("readBody(%d, %q) = %q, %v", c.length, c.body, got, err)
		}
		if !c.ok && err == nil {
			t.Errorf("readBody(%d, %q): want an error, got %q", c.length, c.body, got)
		}
	}
}

func TestSettlementIsRetriedWithoutAKey(t *testing.T) {
	var seen []*http.Request
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r)
		if len(seen) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"store_unavailable","status":503}`))
			return
		}
		_, _ = w.Write([]byte(`{"name":"t","allowed":true,"permits":3,"remaining":7,"limit":10,` +
			`"retryAfterMillis":0,"resetAfterMillis":1,"settled":3,"reservation":"r1"}`))
	}))
	defer peer.Close()
	c := New(peer.URL, WithRetries(2, time.Millisecond))
	d, err := c.Limiter("t", TokenBucket(10, time.Hour)).Reservation("r1").Settle(context.Background(), 3)
	if err != nil || d.Remaining != 7 {
		t.Fatalf("a settlement after a 503: %+v %v", d, err)
	}
	if len(seen) != 2 || seen[0].URL.Path != "/v1/limiters/t/reservations/r1/settle" {
		t.Fatalf("want the settlement sent twice, got %d requests", len(seen))
	}
	for _, r := range seen {
		if r.Header.Get("Idempotency-Key") != "" {
			t.Fatalf("a settlement repeats itself; it carries no key, but got %q", r.Header.Get("Idempotency-Key"))
		}
	}
}
