package converter

import (
	"fmt"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

func sprintT(v any) string { return fmt.Sprintf("%T", v) }

func configured(t testing.TB, config map[string]string) *JSONConverter {
	t.Helper()
	c := NewJSON()
	if err := c.Configure(config, false); err != nil {
		t.Fatal(err)
	}
	return c
}

func mustWrite(t testing.TB, c Converter, s *data.Schema, v any) string {
	t.Helper()
	b, err := c.FromConnectData("t", s, v)
	if err != nil {
		t.Fatalf("FromConnectData(%v, %#v): %v", s, v, err)
	}
	return string(b)
}
