package converter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenInputs are the converter documents of the golden fixtures, which
// Kafka Connect's own JsonConverter read or wrote (golden/jsonconverter):
// each with whether its case had schemas enabled.
func goldenInputs(f *testing.F) (docs [][]byte, schemas []bool) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "golden", "jsonconverter", "testdata", "*", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no golden JsonConverter fixtures: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var fx struct {
			Config        string
			Input, Output json.RawMessage
			InputBase64   string `json:"input_base64"`
		}
		if err := json.Unmarshal(b, &fx); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		var texts []string
		for _, raw := range []json.RawMessage{fx.Input, fx.Output} {
			var one string
			var many []string // a sweep's cases
			if json.Unmarshal(raw, &one) == nil {
				texts = append(texts, one)
			} else if json.Unmarshal(raw, &many) == nil {
				texts = append(texts, many...)
			}
		}
		if fx.InputBase64 != "" {
			in, err := base64.StdEncoding.DecodeString(fx.InputBase64)
			if err != nil {
				f.Fatalf("%s: %v", file, err)
			}
			texts = append(texts, string(in))
		}
		for _, d := range texts {
			if d != "" {
				docs = append(docs, []byte(d))
				schemas = append(schemas, !strings.Contains(fx.Config, "schemas.enable=false"))
			}
		}
	}
	return docs, schemas
}

// FuzzToConnectData feeds arbitrary bytes to the JSON converter, with and
// without schemas: it must never panic, and whatever it reads it must write
// back, reaching a fixed point after one more round (-0.0 reads as 0.0,
// as in Java, so the first round may change).
func FuzzToConnectData(f *testing.F) {
	seeds := []string{
		`{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"a"},` +
			`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"d"},` +
			`{"type":"map","keys":{"type":"int64"},"values":{"type":"double"},"field":"m"},` +
			`{"type":"array","items":{"type":"string"},"default":["x"],"field":"l"}]},` +
			`"payload":{"a":1,"d":"AMg=","m":[[1,1.5],[2,"NaN"]],"l":null}}`,
		`{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Date"},"payload":19000}`,
		`{"schema":{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp","default":5},"payload":null}`,
		`{"schema":{"type":"struct","fields":[{"type":"int32","field":"a"}],"default":{"a":1}},"payload":null}`,
		`{"schema":null,"payload":{"b":[1,-0.0,1e400,"s",{"c":null}]}}`,
		`{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"0"}},"payload":1e-99}`,
		`[1,2,{"a":"\ud834\udd1e"}]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	docs, schemas := goldenInputs(f)
	for i, d := range docs {
		f.Add(d, schemas[i])
	}
	f.Fuzz(func(t *testing.T, in []byte, schemas bool) {
		if len(in) > 1<<16 {
			return
		}
		enable := "false"
		if schemas {
			enable = "true"
		}
		c := configured(t, map[string]string{"schemas.enable": enable, "decimal.format": "NUMERIC"})
		round := func(b []byte) []byte {
			s, v, err := c.ToConnectData("t", b)
			if err != nil {
				t.Fatalf("reading %q, which was written from %q: %v", b, in, err)
			}
			out, err := c.FromConnectData("t", s, v)
			if err != nil {
				t.Fatalf("writing what %q reads as (%v, %#v): %v", b, s, v, err)
			}
			return out
		}
		s, v, err := c.ToConnectData("t", in)
		if err != nil {
			return
		}
		first, err := c.FromConnectData("t", s, v)
		if err != nil {
			t.Fatalf("writing what %q reads as (%v, %#v): %v", in, s, v, err)
		}
		if first == nil {
			return // a null without a schema is a tombstone
		}
		second := round(first)
		if third := round(second); !bytes.Equal(second, third) {
			t.Fatalf("no fixed point for %q:\n%s\n%s", in, second, third)
		}
	})
}
