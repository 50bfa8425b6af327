package tally

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// ReserveOption adjusts one Reserve.
type ReserveOption func(*string)

// ReservationID names the reservation (1 to 120 letters, digits and - _ . :, e.g. a request id),
// so that a Reserve retried with it, from any process, takes once and answers the same. Without
// it the server draws an id (a client WithRetries sends one of its own, for its retries).
func ReservationID(id string) ReserveOption { return func(idem *string) { *idem = id } }

// ReservationHandle is a reservation named by its ID: it settles or cancels it from any goroutine,
// process or host. A reservation is closed once, by its settlement, its cancellation or its
// expiry; closing it again is ErrReservationGone and changes nothing, except the very same
// settlement repeated (a retry of one whose answer was lost), which answers what the first one
// did. So a client WithRetries retries these calls, without an idempotency key.
type ReservationHandle struct {
	ID      string
	limiter *Limiter
}

// Reservation is permits taken by Reserve: the limiter's Decision on the estimate, and, when it
// was granted, the ReservationHandle that settles it. A refused reservation holds nothing and
// has no ID.
type Reservation struct {
	ReservationHandle
	Estimate int64
	Decision Decision
}

// Granted says whether the estimate was taken (and is held until settled).
func (r Reservation) Granted() bool { return r.Decision.Allowed }

type reservationJSON struct {
	decisionJSON
	Reservation string `json:"reservation"`
}

// Reserve takes estimate permits now, for work whose real cost is known only when it ends, and
// holds them until Settle or Cancel, or until ttl passes: then the reservation is settled at its
// estimate by itself. A refusal is a Reservation that is not Granted (its Decision says when to
// retry), not an error; it takes and holds nothing.
func (l *Limiter) Reserve(ctx context.Context, estimate int64, ttl time.Duration, opts ...ReserveOption) (Reservation, error) {
	idem := ""
	for _, o := range opts {
		o(&idem)
	}
	var out reservationJSON
	err := l.c.call(ctx, http.MethodPost, l.path("/reserve"),
		l.body(map[string]any{"estimate": estimate, "ttl": duration(ttl)}), idem, &out)
	if denied, ok := err.(*DeniedError); ok {
		return Reservation{Estimate: estimate, Decision: denied.Decision}, nil
	}
	if err != nil {
		return Reservation{}, err
	}
	return Reservation{ReservationHandle: ReservationHandle{ID: out.Reservation, limiter: l},
		Estimate: estimate, Decision: out.decision()}, nil
}

// Reservation is the reservation id of this limiter, to settle or cancel from another process
// (an HTTP handler that has only the id). It reads nothing: one closed already is refused when
// settled.
func (l *Limiter) Reservation(id string) ReservationHandle {
	return ReservationHandle{ID: id, limiter: l}
}

// Settle closes the reservation at its real cost: it gives back what the estimate took beyond
// actual, or takes what it cost beyond the estimate, into the limiter's debt if need be (later
// requests wait it out). The answer is the limiter's state afterwards; ErrReservationGone if it
// was settled at another amount, cancelled, or had expired.
func (h ReservationHandle) Settle(ctx context.Context, actual int64) (Decision, error) {
	return h.close(ctx, "/settle", map[string]any{"actual": actual})
}

// Cancel gives the whole estimate back (Settle at 0), for work that was not done.
func (h ReservationHandle) Cancel(ctx context.Context) (Decision, error) {
	return h.close(ctx, "/cancel", nil)
}

func (h ReservationHandle) close(ctx context.Context, action string, extra map[string]any) (Decision, error) {
	if h.limiter == nil {
		return Decision{}, &Error{Code: "bad_request", kind: ErrBadRequest, Detail: "this reservation was " +
			"refused, so it holds nothing to settle or cancel: check Granted, and reserve again after its RetryAfter"}
	}
	var out decisionJSON
	path := h.limiter.path("/reservations/" + url.PathEscape(h.ID) + action)
	err := h.limiter.c.call(ctx, http.MethodPost, path, h.limiter.body(extra), repeatsItself, &out)
	return out.decision(), err
}
