package tally

import "testing"

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
