// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import "context"

// Limiter bounds how many executions a program has in flight, so that a burst of goroutines
// waits on the client side instead of filling sandboxd's queue (whose overflow is a 429). Size it
// with NewLimiter: nodes × slots per node × 0.8, keeping a fifth of the capacity for bursts and
// for other callers. A slot per node is MaxConcurrent= of sandboxd.conf(5) (GET /v1/health
// "slots").
type Limiter struct {
	sem chan struct{}
}

// NewLimiter returns a Limiter of nodes × slotsPerNode × 0.8 slots (at least 1).
func NewLimiter(nodes, slotsPerNode int) *Limiter {
	n := nodes * slotsPerNode * 8 / 10
	return NewLimiterSize(n)
}

// NewLimiterSize returns a Limiter of n slots (at least 1).
func NewLimiterSize(n int) *Limiter {
	if n < 1 {
		n = 1
	}
	return &Limiter{sem: make(chan struct{}, n)}
}

// Acquire takes a slot, waiting until one is free or ctx is done (then it returns ctx's error
// and holds nothing).
func (l *Limiter) Acquire(ctx context.Context) error {
	select {
	case l.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquire takes a slot if one is free now.
func (l *Limiter) TryAcquire() bool {
	select {
	case l.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release gives back a slot taken by Acquire or TryAcquire.
func (l *Limiter) Release() {
	select {
	case <-l.sem:
	default:
		panic("sandbox: Limiter.Release without Acquire")
	}
}

// Size returns the number of slots.
func (l *Limiter) Size() int { return cap(l.sem) }

// InUse returns how many slots are taken.
func (l *Limiter) InUse() int { return len(l.sem) }
