package converter

import (
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// recordSchema is a typical record: a dozen fields of the common types.
var recordSchema = data.NewStructSchema().Name("com.example.Order").
	Field("id", data.Int64Schema).
	Field("customer", data.StringSchema).
	Field("email", data.OptionalStringSchema).
	Field("quantity", data.Int32Schema).
	Field("price", data.DecimalSchema(2, false)).
	Field("discount", data.OptionalFloat64Schema).
	Field("paid", data.BooleanSchema).
	Field("created", data.TimestampSchema(false)).
	Field("tags", data.ArraySchema(data.StringSchema)).
	Field("attributes", data.MapSchema(data.StringSchema, data.StringSchema)).
	Field("note", data.OptionalStringSchema).
	Build()

func recordValue() *data.Struct {
	return data.NewStruct(recordSchema).
		Put("id", int64(1234567890)).
		Put("customer", "Ada Lovelace").
		Put("email", "ada@example.com").
		Put("quantity", int32(3)).
		Put("price", data.NewDecimal(129999, 2)).
		Put("discount", 0.15).
		Put("paid", true).
		Put("created", time.UnixMilli(1709164800123)).
		Put("tags", []any{"priority", "gift"}).
		Put("attributes", map[any]any{"channel": "web", "region": "eu-west"})
}

func benchmarkFrom(b *testing.B, config map[string]string) {
	c := configured(b, config)
	v := recordValue()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		out, err := c.FromConnectData("orders", recordSchema, v)
		if err != nil {
			b.Fatal(err)
		}
		n = len(out)
	}
	b.SetBytes(int64(n))
}

func benchmarkTo(b *testing.B, config map[string]string) {
	c := configured(b, config)
	in, err := c.FromConnectData("orders", recordSchema, recordValue())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.ToConnectData("orders", in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONFromConnectDataWithSchema(b *testing.B)    { benchmarkFrom(b, nil) }
func BenchmarkJSONFromConnectDataWithoutSchema(b *testing.B) { benchmarkFrom(b, schemaless) }
func BenchmarkJSONToConnectDataWithSchema(b *testing.B)      { benchmarkTo(b, nil) }
func BenchmarkJSONToConnectDataWithoutSchema(b *testing.B)   { benchmarkTo(b, schemaless) }
