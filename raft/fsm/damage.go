package fsm

import "errors"

// ErrDamaged is wrapped by the errors that report a state file whose bytes
// cannot be what kcd wrote: a damaged page, an impossible record.
var ErrDamaged = errors.New("fsm: state file is damaged")
