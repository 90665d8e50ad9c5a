package transforms

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// The byte-for-byte comparison with Kafka Connect's own transforms is in
// golden/transforms_integration_test.go (and replayed without Java by
// TestTransformsReplay); these tests cover the chain, the configs and the
// helpers.

func chain(t *testing.T, kv ...string) *Chain {
	t.Helper()
	cfg := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	c, err := NewChain(cfg)
	if err != nil {
		t.Fatalf("NewChain: %v", err)
	}
	return c
}

func TestRegistry(t *testing.T) {
	want := []string{"Cast", "DropHeaders", "ExtractField", "Filter", "Flatten", "HeaderFrom", "HoistField", "InsertField",
		"InsertHeader", "MaskField", "RegexRouter", "ReplaceField", "SetSchemaMetadata", "TimestampConverter", "TimestampRouter", "ValueToKey"}
	ts := Transformations()
	for _, w := range want {
		if !slices.ContainsFunc(ts, func(c string) bool { return strings.HasPrefix(c, pkg+w) }) {
			t.Errorf("no %s among %v", w, ts)
		}
	}
	kv := []string{"Cast", "ExtractField", "Flatten", "HeaderFrom", "HoistField", "InsertField", "MaskField", "ReplaceField", "SetSchemaMetadata", "TimestampConverter"}
	for _, w := range kv {
		for _, v := range []string{"$Key", "$Value"} {
			if !slices.Contains(ts, pkg+w+v) {
				t.Errorf("no %s%s", w, v)
			}
		}
	}
	if got := Predicates(); !slices.Equal(got, []string{predPkg + "HasHeaderKey", predPkg + "RecordIsTombstone", predPkg + "TopicNameMatches"}) {
		t.Errorf("predicates %v", got)
	}
	if p, ok := Lookup("InsertField$Value"); !ok || p.Class != pkg+"InsertField$Value" {
		t.Errorf("simple name lookup: %+v %v", p, ok)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "Cast$Value"}, `Missing required configuration "spec" which has no default value.`},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "Cast$Value", "transforms.t.spec": "a:bytes"}, "Cast transformation does not support casting to BYTES"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "Cast$Value", "transforms.t.spec": "int8,a:int8"}, "may ony specify a single cast"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "InsertField$Value"}, "No field insertion configured"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "InsertField$Value", "transforms.t.static.field": "s"}, "No value specified for static field"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "ReplaceField$Value", "transforms.t.renames": "a:b:c"}, "Invalid rename mapping: a:b:c"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "MaskField$Value", "transforms.t.fields": ""}, "Configuration 'fields' must not be empty"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "HeaderFrom$Value", "transforms.t.fields": "a,b", "transforms.t.headers": "a", "transforms.t.operation": "copy"}, "same number of elements"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "TimestampConverter$Value", "transforms.t.target.type": "string"}, "requires format option"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "TimestampConverter$Value", "transforms.t.target.type": "week"}, "String must be one of: string, unix, Date, Time, Timestamp"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "SetSchemaMetadata$Value"}, "Neither schema name nor version configured"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "TimestampRouter", "transforms.t.timestamp.format": "yyyy-qq"}, "Illegal pattern character 'q'"},
		{map[string]string{"transforms": "t", "transforms.t.type": "com.example.Nope"}, "Class com.example.Nope could not be found"},
		{map[string]string{"transforms": "t", "transforms.t.type": pkg + "Filter", "transforms.t.predicate": "p"}, "The predicate 'p' is not defined"},
	} {
		_, err := NewChain(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one with %q", tc.cfg, err, tc.want)
		}
	}
}

func TestNoTransforms(t *testing.T) {
	c := chain(t, "transforms", "")
	r := &Record{Topic: "a", Value: "v"}
	if out, err := c.Apply(r); out != r || err != nil || c.Len() != 0 {
		t.Errorf("an empty chain changed the record: %+v %v", out, err)
	}
}

// A predicate selects the records a transformation applies to; negate
// selects the others; a transformation returning nil drops the record.
func TestPredicates(t *testing.T) {
	c := chain(t,
		"transforms", "drop,tag",
		"transforms.drop.type", pkg+"Filter", "transforms.drop.predicate", "tomb",
		"transforms.tag.type", pkg+"InsertHeader", "transforms.tag.header", "other", "transforms.tag.value.literal", "1",
		"transforms.tag.predicate", "orders", "transforms.tag.negate", "true",
		"predicates", "tomb,orders",
		"predicates.tomb.type", predPkg+"RecordIsTombstone",
		"predicates.orders.type", predPkg+"TopicNameMatches", "predicates.orders.pattern", "ord.*")
	if out, err := c.Apply(&Record{Topic: "orders"}); out != nil || err != nil {
		t.Errorf("a tombstone passed: %+v %v", out, err)
	}
	out, err := c.Apply(&Record{Topic: "orders", Value: "x"})
	if err != nil || len(out.Headers) != 0 {
		t.Errorf("orders: %+v %v", out, err)
	}
	in := &Record{Topic: "users", Value: "x", Headers: []connect.Header{{Key: "h", Value: "v"}}}
	out, err = c.Apply(in)
	if err != nil || len(out.Headers) != 2 || out.Headers[1].Key != "other" || out.Headers[1].Value != int8(1) {
		t.Errorf("users: %+v %v", out, err)
	}
	if len(in.Headers) != 1 {
		t.Errorf("the input record's headers changed: %+v", in.Headers)
	}
	h := chain(t, "transforms", "f", "transforms.f.type", pkg+"Filter", "transforms.f.predicate", "h",
		"predicates", "h", "predicates.h.type", predPkg+"HasHeaderKey", "predicates.h.name", "h")
	if out, _ := h.Apply(in); out != nil {
		t.Errorf("a record with header h passed")
	}
	if out, _ := h.Apply(&Record{Topic: "t"}); out == nil {
		t.Errorf("a record without header h was dropped")
	}
}

// Transformations leave their input alone: the source runtime may still
// be sending what it points to.
func TestInputUnchanged(t *testing.T) {
	s := data.NewStructSchema().Field("a", data.Int32Schema).Field("b", data.OptionalStringSchema).Build()
	st := data.NewStruct(s).Put("a", int32(1)).Put("b", "x")
	m := map[string]any{"a": int32(1), "b": "x"}
	for _, cfg := range [][]string{
		{"transforms.t.type", pkg + "MaskField$Value", "transforms.t.fields", "a,b"},
		{"transforms.t.type", pkg + "Cast$Value", "transforms.t.spec", "a:string"},
		{"transforms.t.type", pkg + "ReplaceField$Value", "transforms.t.exclude", "a"},
		{"transforms.t.type", pkg + "HeaderFrom$Value", "transforms.t.fields", "a", "transforms.t.headers", "h", "transforms.t.operation", "move"},
	} {
		c := chain(t, append([]string{"transforms", "t"}, cfg...)...)
		for _, r := range []*Record{{Topic: "t", ValueSchema: s, Value: st}, {Topic: "t", Value: m}} {
			if _, err := c.Apply(r); err != nil {
				t.Fatalf("%v: %v", cfg, err)
			}
		}
		if st.Values[0] != int32(1) || st.Values[1] != "x" || m["a"] != int32(1) || m["b"] != "x" || len(m) != 2 {
			t.Fatalf("%v changed its input: %v %v", cfg, st.Values, m)
		}
	}
}

func TestRecordErrors(t *testing.T) {
	c := chain(t, "transforms", "t", "transforms.t.type", pkg+"ExtractField$Value", "transforms.t.field", "a")
	_, err := c.Apply(&Record{Topic: "t", Value: "not a map"})
	if err == nil || !data.IsDataError(err) || !strings.Contains(err.Error(), "Only Map objects supported in absence of schema for [field extraction], found: java.lang.String") {
		t.Errorf("error %v", err)
	}
	var de *data.DataError
	if !errors.As(err, &de) {
		t.Errorf("not a DataError: %T", err)
	}
}

// jmap iterates as java.util.HashMap: by bucket, then insertion order;
// a copy is sized for its entries, and the table grows past 3/4.
func TestJMapOrder(t *testing.T) {
	m := newJMap(-1)
	for _, k := range []string{"ok", "addr", "id"} {
		m.put(k, 1)
	}
	// "ok" and "addr" share a bucket of 16: insertion order decides.
	if got := m.value().Keys; !slices.Equal(got, []any{"ok", "addr", "id"}) && !slices.Equal(got, []any{"id", "ok", "addr"}) {
		t.Errorf("order %v", got)
	}
	big := newJMap(-1)
	for i := range 13 {
		big.put(string(rune('a'+i)), i)
	}
	if big.capacity != 32 {
		t.Errorf("13 entries: capacity %d, want 32", big.capacity)
	}
	c := copyJMap([]any{"a", "b", "c"}, []any{1, 2, 3})
	if c.capacity != 8 { // tableSizeFor(3/0.75+1)
		t.Errorf("copy of 3: capacity %d, want 8", c.capacity)
	}
	c.remove("b")
	if c.get("b") != nil || len(c.keys) != 2 {
		t.Errorf("after remove: %v", c.keys)
	}
}

func TestDateFormat(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		ms      int64
		want    string
	}{
		{"yyyyMMdd", 1700000000123, "20231114"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", 1700000000123, "2023-11-14T22:13:20.123Z"},
		{"EEE, dd MMM yyyy hh:mm:ss a Z", 1700000000123, "Tue, 14 Nov 2023 10:13:20 PM +0000"},
		{"yy/M/d", 0, "70/1/1"},
		{"'it''s' HH", 3600000, "it's 01"},
	} {
		f, err := newDateFormat(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if got := f.format(tc.ms); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.pattern, got, tc.want)
		}
		if tc.pattern == "'it''s' HH" {
			continue
		}
		back, err := f.parse(tc.want)
		if err != nil {
			t.Errorf("parse %q by %s: %v", tc.want, tc.pattern, err)
		}
		if again := f.format(back); again != tc.want {
			t.Errorf("%s: %q parsed to %d, formats as %q", tc.pattern, tc.want, back, again)
		}
	}
	if _, err := newDateFormat("yyyy-qq"); err == nil {
		t.Errorf("an unknown pattern letter was accepted")
	}
}

func TestJavaReplacement(t *testing.T) {
	c := chain(t, "transforms", "r", "transforms.r.type", pkg+"RegexRouter",
		"transforms.r.regex", `(?<env>[a-z]+)\.(.*)`, "transforms.r.replacement", `${env}_$2\$`)
	out, err := c.Apply(&Record{Topic: "prod.orders"})
	if err != nil || out.Topic != "prod_orders$" {
		t.Errorf("topic %+v %v", out, err)
	}
}
