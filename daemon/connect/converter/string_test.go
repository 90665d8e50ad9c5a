package converter

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

func TestStringConverter(t *testing.T) {
	c := &StringConverter{}
	if err := c.Configure(map[string]string{}, false); err != nil {
		t.Fatal(err)
	}
	point := data.NewStructSchema().Field("x", data.Int32Schema).Field("y", data.OptionalInt32Schema).Build()
	for _, tt := range []struct {
		v    any
		want string
	}{
		{"héllo", "héllo"}, {int32(-5), "-5"}, {1e10, "1.0E10"}, {true, "true"},
		{data.NewDecimal(12, -2), "1.2E+3"}, {data.NewStruct(point).Put("x", int32(1)), "Struct{x=1}"},
		{[]any{"a", int64(2)}, "[a, 2]"}, {[]byte{0xff, 0}, "\xff\x00"},
	} {
		if got := mustWrite(t, c, nil, tt.v); got != tt.want {
			t.Errorf("%#v: %q, want %q", tt.v, got, tt.want)
		}
	}
	if b, err := c.FromConnectData("t", data.StringSchema, nil); b != nil || err != nil {
		t.Fatalf("null: %q %v", b, err)
	}
	s, v, err := c.ToConnectData("t", []byte("abc"))
	if s != data.OptionalStringSchema || v != "abc" || err != nil {
		t.Fatalf("read: %v %v %v", s, v, err)
	}
	if s, v, _ := c.ToConnectData("t", nil); s != data.OptionalStringSchema || v != nil {
		t.Fatalf("read null: %v %v", s, v)
	}
}

func TestStringConverterEncodings(t *testing.T) {
	tests := []struct {
		encoding string
		text     string
		bytes    []byte
		back     string // what the bytes read as
	}{
		{"utf8", "é𝄞", []byte("é𝄞"), "é𝄞"},
		{"US-ASCII", "aé𝄞", []byte("a??"), "a??"},
		{"iso-8859-1", "aé€", []byte{'a', 0xe9, '?'}, "aé?"},
		{"UTF-16", "a𝄞", []byte{0xfe, 0xff, 0, 'a', 0xd8, 0x34, 0xdd, 0x1e}, "a𝄞"},
		{"UTF-16LE", "a", []byte{'a', 0}, "a"},
		{"UTF-16BE", "a", []byte{0, 'a'}, "a"},
	}
	for _, tt := range tests {
		c := &StringConverter{}
		if err := c.Configure(map[string]string{"converter.encoding": tt.encoding}, true); err != nil {
			t.Fatal(err)
		}
		got := mustWrite(t, c, nil, tt.text)
		if !bytes.Equal([]byte(got), tt.bytes) {
			t.Errorf("%s: wrote %x, want %x", tt.encoding, got, tt.bytes)
		}
		if _, v, _ := c.ToConnectData("t", tt.bytes); v != tt.back {
			t.Errorf("%s: read %q, want %q", tt.encoding, v, tt.back)
		}
	}
}

func TestStringConverterInvalidUTF8(t *testing.T) {
	c := &StringConverter{}
	// As new String(b, UTF_8) reads them (checked with JDK 17).
	for in, want := range map[string]string{
		"a\xe2\x82b":       "a\uFFFDb",
		"\xff\xfe":         "\uFFFD\uFFFD",
		"\xed\xa0\x80":     "\uFFFD",
		"\xed\xa0x":        "\uFFFDx",
		"\xc0\x80":         "\uFFFD\uFFFD",
		"\xf4\x90\x80\x80": "\uFFFD\uFFFD\uFFFD\uFFFD",
		"\xf0\x9d\x84":     "\uFFFD",
		"ok\xc3":           "ok\uFFFD",
		"\xe0\x80\x80xy":   "\uFFFD\uFFFD\uFFFDxy",
	} {
		if _, v, _ := c.ToConnectData("t", []byte(in)); v != want {
			t.Errorf("%q read as %q, want %q", in, v, want)
		}
	}
}

func TestByteArrayConverter(t *testing.T) {
	var c ByteArrayConverter
	if b, err := c.FromConnectData("t", data.OptionalBytesSchema, []byte{1}); err != nil || !bytes.Equal(b, []byte{1}) {
		t.Fatalf("bytes: %v %v", b, err)
	}
	if b, err := c.FromConnectData("t", nil, nil); b != nil || err != nil {
		t.Fatalf("null: %v %v", b, err)
	}
	if _, err := c.FromConnectData("t", data.StringSchema, []byte{1}); err == nil ||
		!strings.Contains(err.Error(), "Invalid schema type for ByteArrayConverter: STRING") {
		t.Fatalf("string schema: %v", err)
	}
	if _, err := c.FromConnectData("t", nil, "x"); err == nil ||
		!strings.Contains(err.Error(), "ByteArrayConverter is not compatible with objects of type string") {
		t.Fatalf("string value: %v", err)
	}
	s, v, err := c.ToConnectData("t", []byte{2})
	if s != data.OptionalBytesSchema || !bytes.Equal(v.([]byte), []byte{2}) || err != nil {
		t.Fatalf("read: %v %v %v", s, v, err)
	}
}

// An empty string is an empty record value, as Java's "".getBytes() is,
// never a null one (a tombstone), in every encoding.
func TestStringConverterEmptyIsNotNull(t *testing.T) {
	for _, enc := range []string{"UTF-8", "US-ASCII", "ISO-8859-1", "UTF-16", "UTF-16LE"} {
		c := &StringConverter{}
		if err := c.Configure(map[string]string{"converter.encoding": enc}, false); err != nil {
			t.Fatal(err)
		}
		b, err := c.FromConnectData("t", data.StringSchema, "")
		if err != nil || b == nil || len(b) != 0 {
			t.Errorf("%s: \"\" wrote %#v %v, want an empty non-nil value", enc, b, err)
		}
	}
}

// ToConnectDataShared reads what ToConnectData reads, for every charset
// and for bytes that are not valid in it, and reads valid UTF-8 in place.
func TestStringConverterShared(t *testing.T) {
	for _, enc := range []string{"", "UTF-8", "ISO-8859-1", "UTF-16"} {
		c := &StringConverter{}
		cfg := map[string]string{}
		if enc != "" {
			cfg["converter.encoding"] = enc
		}
		if err := c.Configure(cfg, false); err != nil {
			t.Fatal(err)
		}
		for _, b := range [][]byte{nil, {}, []byte("héllo"), {0xff, 'a'}, {0xed, 0xa0, 0x80}, []byte("\x00\x41")} {
			ws, wv, werr := c.ToConnectData("t", b)
			gs, gv, gerr := c.ToConnectDataShared("t", b)
			if ws != gs || wv != gv || (werr == nil) != (gerr == nil) {
				t.Errorf("%s %q: shared %v %#v %v, want %v %#v %v", enc, b, gs, gv, gerr, ws, wv, werr)
			}
		}
	}
	c := &StringConverter{}
	b := []byte("in place")
	_, v, _ := c.ToConnectDataShared("t", b)
	if s := v.(string); unsafe.StringData(s) != &b[0] {
		t.Error("valid UTF-8 was copied")
	}
}
