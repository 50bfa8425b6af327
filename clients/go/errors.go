package tally

import (
	"errors"
	"fmt"
)

// Sentinel errors: test with errors.Is. Every error a call returns is an *Error (or a
// *DeniedError, which wraps one) that says which.
var (
	// ErrBadRequest: refused before anything changed (bad input, a reused idempotency key).
	ErrBadRequest = errors.New("tally: bad request")
	// ErrUnauthorized: a missing or wrong token.
	ErrUnauthorized = errors.New("tally: unauthorized")
	// ErrNotFound: no such counter.
	ErrNotFound = errors.New("tally: not found")
	// ErrNoSuchRoute: the server has no such route (an older server, or a wrong base URL).
	ErrNoSuchRoute = errors.New("tally: no such route")
	// ErrConflict: overflow, an integer operation on a floating counter, or a name that holds
	// the other kind (a limiter's state used as a counter).
	ErrConflict = errors.New("tally: conflict")
	// ErrDenied: a limiter refused; the error is a *DeniedError with the decision.
	ErrDenied = errors.New("tally: denied")
	// ErrLeaseGone: a concurrency limit's lease was released or has expired (410); its permits
	// may be another holder's already.
	ErrLeaseGone = errors.New("tally: lease gone")
	// ErrReservationGone: a reservation was settled (at another amount), cancelled, or had
	// expired and so was settled at its estimate (410); nothing was changed.
	ErrReservationGone = errors.New("tally: reservation gone")
	// ErrUnsupported: the store cannot do this.
	ErrUnsupported = errors.New("tally: unsupported by the store")
	// ErrUnavailable: the store could not be reached or the server is stopping; nothing applied.
	ErrUnavailable = errors.New("tally: unavailable")
	// ErrTimeout: no answer in time (a 504, a lost connection, a context deadline): the
	// operation MAY have applied. Retry with the same idempotency key to be exact.
	ErrTimeout = errors.New("tally: timeout, maybe applied")
)

// Error is a failed call: the HTTP status (0 when no answer came), the server's error code and
// its detail.
type Error struct {
	Status int
	Code   string
	Detail string
	kind   error
	cause  error
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%v: %s", e.kind, e.Detail)
	}
	return fmt.Sprintf("%v (%d %s): %s", e.kind, e.Status, e.Code, e.Detail)
}

// Is matches the sentinel this error is.
func (e *Error) Is(target error) bool { return target == e.kind }

// Unwrap gives the transport error behind a status-0 error, if any.
func (e *Error) Unwrap() error { return e.cause }

// MaybeApplied says whether the operation may have taken effect without an answer saying so.
func (e *Error) MaybeApplied() bool { return e.kind == ErrTimeout }

// DeniedError is a limiter's refusal (429) with its decision.
type DeniedError struct {
	Err      *Error
	Decision Decision
}

func (e *DeniedError) Error() string { return e.Err.Error() }

// Unwrap gives the *Error, which is ErrDenied.
func (e *DeniedError) Unwrap() error { return e.Err }

var byStatus = map[int]error{
	400: ErrBadRequest, 401: ErrUnauthorized, 403: ErrUnauthorized, 404: ErrNotFound,
	408: ErrTimeout, 409: ErrConflict, 410: ErrLeaseGone, 413: ErrBadRequest, 414: ErrBadRequest, 415: ErrBadRequest,
	422: ErrBadRequest, 429: ErrDenied, 431: ErrBadRequest, 501: ErrUnsupported,
	503: ErrUnavailable, 504: ErrTimeout,
}

// byCode says which, where one status has several meanings.
var byCode = map[string]error{"reservation_gone": ErrReservationGone}

type problem struct {
	Status  int    `json:"status"`
	Error   string `json:"error"`
	Detail  string `json:"detail"`
	Message string `json:"message"`
}

func fromProblem(status int, p problem) *Error {
	kind, ok := byCode[p.Error]
	if !ok {
		kind, ok = byStatus[status]
	}
	if !ok {
		kind = fmt.Errorf("tally: HTTP %d", status)
	}
	detail := p.Detail
	if detail == "" {
		detail = p.Message
	}
	if status == 404 && (p.Error != "not_found" || hasPrefix(detail, "no route") || hasPrefix(detail, "no limiter action")) {
		kind = ErrNoSuchRoute
	}
	return &Error{Status: status, Code: p.Error, Detail: detail, kind: kind}
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
