package tally

import (
	"io"
	"net/http"
	"strings"
	"testing"
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
