package file

import "unsafe"

// eface is the layout of an interface value without methods (any): its
// dynamic type and a pointer to its value (runtime.eface).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// stringType is the dynamic type of an any holding a string.
var stringType = func() unsafe.Pointer {
	v := any("")
	return (*eface)(unsafe.Pointer(&v)).typ
}()

// boxString returns *s as an any that points at s itself. Converting a
// string to an any allocates a copy of its header (16 bytes) on the heap:
// a Poll's lines, boxed one by one, cost as many allocations as lines,
// and that was most of what a line cost to poll. Boxed in place, they
// share the allocation of their headers' slice. *s must not change
// afterwards: the any reads it.
func boxString(s *string) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = stringType, unsafe.Pointer(s)
	return v
}
