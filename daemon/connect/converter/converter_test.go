package converter

import (
	"slices"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	for name, want := range map[string]string{
		JSONClass:               "*converter.JSONConverter",
		"JsonConverter":         "*converter.JSONConverter",
		"Json":                  "*converter.JSONConverter",
		" " + StringClass + " ": "*converter.StringConverter",
		"String":                "*converter.StringConverter",
		ByteArrayClass:          "converter.ByteArrayConverter",
		"ByteArrayConverter":    "converter.ByteArrayConverter",
	} {
		c, err := New(name)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if got := sprintT(c); got != want {
			t.Errorf("New(%q) is a %s, want %s", name, got, want)
		}
	}
	_, err := New("org.example.AvroConverter")
	if err == nil || !strings.Contains(err.Error(), `"org.example.AvroConverter" could not be found`) ||
		!strings.Contains(err.Error(), JSONClass) {
		t.Fatalf("unknown class: %v", err)
	}
	if got := Classes(); len(got) < 9 || got[0] != BooleanClass || !slices.IsSorted(got) {
		t.Fatalf("Classes() = %v", got)
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registering a class twice did not panic")
		}
	}()
	Register(JSONClass, func() Converter { return NewJSON() })
}

func TestConfigureErrors(t *testing.T) {
	tests := []struct {
		config map[string]string
		err    string
	}{
		{map[string]string{"schemas.enable": "yes"}, "Invalid value yes for configuration schemas.enable: Expected value to be either true or false"},
		{map[string]string{"replace.null.with.default": ""}, "configuration replace.null.with.default"},
		{map[string]string{"schemas.cache.size": "many"}, "Invalid value many for configuration schemas.cache.size: Not a number of type INT"},
		{map[string]string{"decimal.format": "HEX"}, "String must be one of (case insensitive): BASE64, NUMERIC"},
		{map[string]string{"kcd.float.format": "JDK"}, "kcd.float.format"},
		{map[string]string{"schema.content": "{"}, "Failed to parse schema in converter config due to serialization error"},
		{map[string]string{"schema.content": `{"type":"float32"}`}, "Unknown schema type: float32"},
	}
	for _, tt := range tests {
		err := NewJSON().Configure(tt.config, false)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Configure(%v) = %v, want %q", tt.config, err, tt.err)
		}
	}
	good := map[string]string{"schemas.enable": " FALSE ", "decimal.format": "numeric", "schemas.cache.size": "0",
		"replace.null.with.default": "True", "converter.type": "value", "unknown": "ignored"}
	if err := NewJSON().Configure(good, true); err != nil {
		t.Fatalf("Configure(%v): %v", good, err)
	}
	if err := (&StringConverter{}).Configure(map[string]string{"converter.encoding": "EBCDIC"}, false); err == nil {
		t.Fatal("an unknown encoding was accepted")
	}
}
