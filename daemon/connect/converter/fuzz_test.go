package converter

import (
	"bytes"
	"testing"
)

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
