package jsonconverter_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect/converter"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// fixture is one file of testdata/<jdk>/, written by capture/Capture.java.
type fixture struct {
	Case        string          `json:"case"`
	Direction   string          `json:"direction"` // fromConnectData or toConnectData
	Config      string          `json:"config"`    // k=v,k=v
	JavaVersion string          `json:"java_version"`
	Input       json.RawMessage `json:"input"` // toConnectData: the bytes as a string; fromConnectData: case data
	InputBase64 *string         `json:"input_base64"`
	Output      json.RawMessage `json:"output"` // absent when Java threw; null for a null result
	OutputB64   *string         `json:"output_base64"`
	Error       string          `json:"error"`
	ValueClass  *string         `json:"value_class"`
	Result      json.RawMessage `json:"result"`
	ResultB64   *string         `json:"result_base64"`
	ResultError string          `json:"result_error"`

	file string
}

func loadFixtures(t *testing.T) []*fixture {
	t.Helper()
	files, err := filepath.Glob("testdata/*/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/*/ (%v): run capture.sh", err)
	}
	var out []*fixture
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fx := &fixture{file: f}
		if err := json.Unmarshal(b, fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, fx)
	}
	return out
}

// bytesOf decodes a captured byte string: a JSON string, null (nil) or,
// for bytes that are not UTF-8, base64. present is false when absent.
func bytesOf(t *testing.T, s json.RawMessage, b64 *string) (b []byte, present bool) {
	t.Helper()
	if b64 != nil {
		b, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			t.Fatal(err)
		}
		return b, true
	}
	if len(s) == 0 {
		return nil, false
	}
	if string(s) == "null" {
		return nil, true
	}
	var str string
	if err := json.Unmarshal(s, &str); err != nil {
		t.Fatal(err)
	}
	return []byte(str), true
}

var settingStart = regexp.MustCompile(`^[a-z.]+=`)

// settings parses "k=v,k=v" as Capture.java does (a comma starts a new
// setting only when a name and '=' follow), and picks the float format of
// the JDK the fixture was captured with.
func (f *fixture) settings() map[string]string {
	conf := map[string]string{}
	rest := f.Config
	for rest != "" {
		end := len(rest)
		for i := 0; i < len(rest); i++ {
			if rest[i] == ',' && settingStart.MatchString(rest[i+1:]) {
				end = i
				break
			}
		}
		k, v, _ := strings.Cut(rest[:end], "=")
		conf[k] = v
		rest = strings.TrimPrefix(rest[end:], ",")
	}
	conf["kcd.float.format"] = floatFormat(f.JavaVersion)
	return conf
}

// floatFormat is the kcd.float.format matching a JDK: Double.toString
// changed in JDK 19.
func floatFormat(javaVersion string) string {
	major, _, _ := strings.Cut(javaVersion, ".")
	if n, err := strconv.Atoi(major); err == nil && n >= 19 {
		return "SHORTEST"
	}
	return "LEGACY"
}

func newConverter(t *testing.T, conf map[string]string) converter.Converter {
	t.Helper()
	c, err := converter.New(converter.JSONClass)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Configure(conf, false); err != nil {
		t.Fatal(err)
	}
	return c
}

// javaMessage is the part of Java's error to find in Go's: the first
// exception's message (Go words the causes in its own way).
func javaMessage(javaErr string) string {
	msg, _, _ := strings.Cut(javaErr, " | caused by ")
	_, msg, _ = strings.Cut(msg, ": ")
	return strings.TrimSpace(msg)
}

// writeMessages overrides the Java message Go's error must contain where
// Java names Java classes.
var writeMessages = map[string]string{
	"wrong_type_error":         "Invalid type for INT32: int64",
	"schemaless_decimal_error": "Go type data.Decimal does not have corresponding schema type.",
}

// noValueRoundTrip lists the written cases whose value does not read back
// equal, and why.
var noValueRoundTrip = map[string]string{
	"float32_values":         "-0.0 reads back as 0.0 (through BigDecimal, in Java too)",
	"float32_sweep":          "-0.0 reads back as 0.0 (through BigDecimal, in Java too)",
	"float64_values":         "-0.0 reads back as 0.0 (through BigDecimal, in Java too)",
	"map_float64_keys":       "-0.0 reads back as 0.0 (through BigDecimal, in Java too)",
	"defaults_all":           "nulls are written as their defaults",
	"defaults_all_numeric":   "nulls are written as their defaults",
	"required_null_default":  "the null is written as the default",
	"optional_default_null":  "the null is written as the default",
	"decimal_sneg2_numeric":  "NUMERIC reads the scale from the number: 0E+2 has scale -2, but 1.2E+3 scale -2 too",
	"struct_logical_numeric": "NUMERIC reads the scale from the number",
}

func TestFromConnectData(t *testing.T) {
	cases := writeCases()
	for _, f := range loadFixtures(t) {
		if f.Direction != "fromConnectData" {
			continue
		}
		t.Run(f.file, func(t *testing.T) {
			build, ok := cases[f.Case]
			if !ok {
				t.Fatalf("no Go case %q in cases_test.go", f.Case)
			}
			schema, value, err := build(f.Input)
			if err != nil {
				t.Fatal(err)
			}
			conf := f.settings()
			c := newConverter(t, conf)
			got, err := c.FromConnectData("topic", schema, value)
			want, ok := bytesOf(t, f.Output, f.OutputB64)
			if !ok { // Java threw
				wantMsg := javaMessage(f.Error)
				if m, ok := writeMessages[f.Case]; ok {
					wantMsg = m
				}
				if err == nil || !strings.Contains(err.Error(), wantMsg) {
					t.Fatalf("Java failed with %q; Go: %v (output %q)", f.Error, err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Go failed: %v\nJava wrote %s", err, want)
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("bytes differ\n got: %q\nwant: %q", got, want)
			}
			if got != nil {
				checkRoundTrip(t, c, f.Case, got, schema, value)
			}
		})
	}
}

// checkRoundTrip reads written bytes back: writing what was read must give
// the same bytes, and (with schemas) the same schema and value.
func checkRoundTrip(t *testing.T, c converter.Converter, name string, written []byte, schema *data.Schema, value any) {
	t.Helper()
	rs, rv, err := c.ToConnectData("topic", written)
	if err != nil {
		t.Fatalf("reading back: %v", err)
	}
	if _, skip := noValueRoundTrip[name]; skip || (rs == nil && rv == nil) {
		return // a schemaless null writes as a tombstone, in Java too
	}
	again, err := c.FromConnectData("topic", rs, rv)
	if err != nil {
		t.Fatalf("writing what was read back: %v", err)
	}
	if !bytes.Equal(again, written) {
		t.Fatalf("read back and written again:\n got: %s\nwant: %s", again, written)
	}
	if schema == nil || rs == nil {
		return // schemaless: integers read back as int64, maps as map[any]any
	}
	if !rs.Equal(schema) {
		t.Errorf("schema read back differs: %+v, want %+v", rs, schema)
	}
	if !data.Equal(rv, value) {
		t.Errorf("value read back differs: %#v, want %#v", rv, value)
	}
}

// readDeviation is what Go does where it reads differently from Java.
type readDeviation struct {
	why    string
	err    string // Go fails with an error containing this
	result string // or Go reads this (written back as the fixture's result is)
}

var readDeviations = map[string]readDeviation{
	"read_int32_overflow":                {why: "Java wraps to -1294967296", err: "3000000000 is out of range"},
	"read_int8_overflow":                 {why: "Java wraps to 44", err: "300 is out of range"},
	"read_int32_fraction":                {why: "Java truncates to 1", err: "1.5 is not a whole number"},
	"read_int32_string":                  {why: "Java reads 0", err: "expected a number but found STRING"},
	"read_int64_big":                     {why: "Java keeps the low 64 bits", err: "out of range"},
	"read_float64_string":                {why: "Java reads 0.0", err: "expected a number but found STRING"},
	"read_boolean_number":                {why: "Java reads false", err: "expected a boolean but found NUMBER"},
	"read_string_number":                 {why: "Java reads null", err: "expected a string but found NUMBER"},
	"read_string_number_required":        {why: "Java reads null into a required field", err: "expected a string but found NUMBER"},
	"read_bytes_number":                  {why: "Java reads null", err: "expected a base64 string but found NUMBER"},
	"read_timestamp_big":                 {why: "Java keeps the low 64 bits", err: "out of range"},
	"read_schemaless_big_integer":        {why: "Java keeps the low 64 bits", err: "out of range of int64"},
	"read_number_1000_digits_schemaless": {why: "Java keeps the low 64 bits", err: "out of range of int64"},
	"read_schema_default_wrong_type":     {why: "Java reads the default \"x\" as 0", err: "expected a number but found STRING"},
	"read_array_object_payload":          {why: "Java reads an object's values as the array", err: "expected an array but found OBJECT"},
	"read_array_scalar_payload":          {why: "Java reads a scalar as an empty array", err: "expected an array but found NUMBER"},
	"read_map_bytes_keys":                {why: "byte slices cannot be Go map keys", err: "Maps with BYTES keys cannot be read into Go maps"},
	"read_utf16_schemaless":              {why: "Go reads UTF-8 only; Jackson detects UTF-16 and UTF-32", err: "unexpected character"},
	"read_float64_nan_string": {why: "Java writes NaN as \"NaN\" but reads it as 0.0",
		result: `{"schema":{"type":"double","optional":false},"payload":"NaN"}`},
	"read_schema_default_struct": {why: "Java cannot build a struct schema with a default (SchemaBuilder compares a ConnectSchema with itself)",
		result: `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}],"optional":false,"default":{"a":1}},"payload":{"a":1}}`},
	"read_decimal_no_scale": {why: "Java fails with a NullPointerException", err: "scale parameter not found"},
}

// goTypes maps the Java classes of values read to the Go types kcd reads.
var goTypes = map[string]string{
	"java.lang.Boolean": "bool", "java.lang.Byte": "int8", "java.lang.Short": "int16",
	"java.lang.Integer": "int32", "java.lang.Long": "int64", "java.lang.Float": "float32",
	"java.lang.Double": "float64", "java.lang.String": "string", "[B": "[]uint8",
	"java.util.ArrayList": "[]interface {}", "java.util.HashMap": "*data.OrderedMap",
	"org.apache.kafka.connect.data.Struct": "*data.Struct", "java.math.BigDecimal": "data.Decimal",
	"java.util.Date": "time.Time",
}

func TestToConnectData(t *testing.T) {
	for _, f := range loadFixtures(t) {
		if f.Direction != "toConnectData" {
			continue
		}
		t.Run(f.file, func(t *testing.T) {
			input, _ := bytesOf(t, f.Input, f.InputBase64)
			conf := f.settings()
			c := newConverter(t, conf)
			schema, value, err := c.ToConnectData("topic", input)
			dev, deviates := readDeviations[f.Case]
			switch {
			case deviates && dev.err != "":
				if err == nil || !strings.Contains(err.Error(), dev.err) {
					t.Fatalf("want an error with %q (%s); got %v", dev.err, dev.why, err)
				}
				return
			case f.Error != "" && !deviates:
				if err == nil {
					t.Fatalf("Java failed with %q; Go read %#v", f.Error, value)
				}
				if want := javaMessage(f.Error); !strings.Contains(err.Error(), want) &&
					!strings.HasPrefix(want, "Converting byte[] to Kafka Connect data failed") {
					t.Errorf("error %q does not contain Java's %q", err, want)
				}
				return
			case err != nil:
				t.Fatalf("Java read it; Go: %v", err)
			}
			// A HashMap is read into a *data.OrderedMap from a JSON object
			// (in the HashMap's order), into a map from an array of pairs.
			if typ := fmt.Sprintf("%T", value); f.ValueClass != nil && goTypes[*f.ValueClass] != typ &&
				!(*f.ValueClass == "java.util.HashMap" && typ == "map[interface {}]interface {}") {
				t.Errorf("read a %T; Java read a %s", value, *f.ValueClass)
			}
			dump := conf
			dump["schemas.enable"], dump["decimal.format"], dump["replace.null.with.default"] = "true", "NUMERIC", "false"
			delete(dump, "schema.content")
			got, err := newConverter(t, dump).FromConnectData("topic", schema, value)
			want, ok := bytesOf(t, f.Result, f.ResultB64)
			if deviates {
				want, ok = []byte(dev.result), true
			}
			if !ok { // Java could not write back what it read
				t.Logf("Java could not write it back (%s); Go: %v", f.ResultError, err)
				return
			}
			if err != nil {
				t.Fatalf("writing back: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read differently\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// TestFixturesComplete checks that every Go case has a fixture from every
// JDK captured, and that the JDKs captured the same cases.
func TestFixturesComplete(t *testing.T) {
	byJDK := map[string][]string{}
	for _, f := range loadFixtures(t) {
		dir := filepath.Base(filepath.Dir(f.file))
		byJDK[dir] = append(byJDK[dir], f.Case)
	}
	var want []string
	for name := range writeCases() {
		want = append(want, name)
	}
	for dir, names := range byJDK {
		for _, w := range want {
			if !slices.Contains(names, w) {
				t.Errorf("%s: no fixture for Go case %q: run capture.sh", dir, w)
			}
		}
	}
	var first []string
	for _, names := range byJDK {
		slices.Sort(names)
		if first == nil {
			first = names
		} else if !slices.Equal(first, names) {
			t.Errorf("the JDK fixture sets capture different cases")
		}
	}
	for name := range readDeviations {
		if !slices.Contains(first, name) {
			t.Errorf("deviation for unknown case %q", name)
		}
	}
}
