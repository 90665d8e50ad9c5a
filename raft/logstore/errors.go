package logstore

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error that reports damaged or impossible
// data on disk. Such a store must not be used until an operator has looked
// at it: opening it anyway would mean losing acknowledged writes.
var ErrCorrupt = errors.New("logstore: corrupt data")

// ErrClosed is returned by writes to a closed Store.
var ErrClosed = errors.New("logstore: store is closed")

// CorruptError says where the damage is. errors.Is(err, ErrCorrupt) is true.
type CorruptError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset of the bad record, or -1 if not about one record
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%v: %s: %s", ErrCorrupt, e.File, e.Reason)
	}
	return fmt.Sprintf("%v: %s at offset %d: %s", ErrCorrupt, e.File, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corruptf(file string, off int64, format string, args ...any) error {
	return &CorruptError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
