package file

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// A string boxed in place is the same value as one converted to any: for
// ==, type switches, reflect and fmt, also after a garbage collection
// with the slice of headers reachable only through the boxes.
func TestBoxString(t *testing.T) {
	boxes := func() []any {
		values := []string{"", "a line", "ünïcode 😀"}
		out := make([]any, len(values))
		for i := range values {
			out[i] = boxString(&values[i])
		}
		return out
	}()
	runtime.GC()
	for i, want := range []string{"", "a line", "ünïcode 😀"} {
		got := boxes[i]
		if got != any(want) {
			t.Errorf("box %d: %#v != %#v", i, got, want)
		}
		if s, ok := got.(string); !ok || s != want {
			t.Errorf("box %d: as string %q %v", i, s, ok)
		}
		if v := reflect.ValueOf(got); v.Kind() != reflect.String || v.String() != want {
			t.Errorf("box %d: reflect %v", i, v)
		}
		if s := fmt.Sprint(got); s != want {
			t.Errorf("box %d: fmt %q", i, s)
		}
		if b, _ := json.Marshal(got); string(b) != string(must(json.Marshal(want))) {
			t.Errorf("box %d: json %s", i, b)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
