// Package reason is the one error type that carries a condition reason. Every controller and
// the restore seed agent return it where a failure has a reason a user should read (the
// constants in pkg/apis/etcd/v1beta2/conditions.go), and read it back with Of.
package reason

import (
	"errors"
	"fmt"
)

// Error is a failure with the condition reason it is reported under. A transient failure is
// worth retrying (a store or etcd that did not answer); the others are not (a missing Secret, a
// corrupt backup) until the user changes something.
type Error struct {
	// Reason is a condition reason constant of pkg/apis/etcd/v1beta2.
	Reason string
	// Transient marks a failure that may pass by itself.
	Transient bool
	// Err is what failed.
	Err error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New is a failure with reason that retrying does not fix.
func New(reason string, err error) error { return &Error{Reason: reason, Err: err} }

// Errorf is New with a formatted error (%w wraps as in fmt.Errorf).
func Errorf(reason, format string, args ...any) error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Transient is a failure with reason that may pass when retried.
func Transient(reason string, err error) error {
	return &Error{Reason: reason, Transient: true, Err: err}
}

// Of returns the reason err carries, or "" when it carries none.
func Of(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason
	}
	return ""
}

// OrDefault returns the reason err carries, or fallback when it carries none.
func OrDefault(err error, fallback string) string {
	if r := Of(err); r != "" {
		return r
	}
	return fallback
}

// IsTransient reports whether err carries a reason and is marked transient.
func IsTransient(err error) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.Transient
}
