//go:build !linux

package tally_test

import "time"

// Elsewhere the benchmark reports no CPU figures (zeros).
func cpuSelf() time.Duration  { return 0 }
func cpuOf(int) time.Duration { return 0 }
