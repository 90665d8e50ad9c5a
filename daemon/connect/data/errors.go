package data

import (
	"errors"
	"fmt"
)

// DataError is Kafka Connect's DataException: a value that does not match
// its schema, or data a converter cannot convert. Its message is Kafka
// Connect's wherever Kafka Connect has one.
type DataError struct {
	Msg string
	Err error // the cause, or nil
}

func (e *DataError) Error() string { return e.Msg }
func (e *DataError) Unwrap() error { return e.Err }

// Errorf returns a *DataError with the formatted message; an error given
// for a %w verb becomes its cause.
func Errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &DataError{Msg: err.Error(), Err: errors.Unwrap(err)}
}

// IsDataError tells whether err is or wraps a *DataError.
func IsDataError(err error) bool {
	_, ok := errors.AsType[*DataError](err)
	return ok
}
