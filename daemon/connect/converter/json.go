package converter

import (
	"strings"
	"sync/atomic"

	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connect/internal/java"
)

// JSONConverter is Kafka Connect's org.apache.kafka.connect.json.JsonConverter.
// It writes exactly the bytes the Java converter writes (Jackson's compact
// output: schema fields in Kafka Connect's order, Java's number formats,
// maps in java.util.HashMap order, bytes as base64) and reads what it
// reads. Settings:
//
//	schemas.enable             true: {"schema":…,"payload":…}; false: the payload alone
//	decimal.format             BASE64 (default) or NUMERIC
//	replace.null.with.default  true (default): a null with a schema default is written and read as the default
//	schemas.cache.size         how many schemas to keep parsed and serialized (1000)
//	schema.content             a schema that all records read have (they hold the payload alone)
//	kcd.float.format           LEGACY (default): floats and doubles as JDK 8 to 18 print them;
//	                           SHORTEST: as JDK 19 and later print them (they differ in ~1% of values)
//
// Maps are written in the order a java.util.HashMap of their keys
// iterates; keys that share a hash bucket iterate in insertion order in
// Java, which a Go map does not keep, and are taken in their natural order
// (as if they had been put sorted). Schemas are cached by pointer: do not
// modify a schema once it has been written.
//
// Where the Java converter silently turns a mismatched value into another
// (a string or a fraction into an integer, an integer that does not fit
// into a truncated one, a non-boolean into false, a non-string into
// null, an object into the array of its values), reading returns an error
// naming the field. Reading also takes the strings "NaN", "Infinity" and
// "-Infinity", which Java writes for those doubles, as their values (Java
// reads them as 0), and accepts struct schemas with a default (Java's
// SchemaBuilder rejects them). Input must be UTF-8 (Jackson also detects
// UTF-16 and UTF-32), and maps with BYTES, ARRAY or MAP keys cannot be read
// (Go map keys must be comparable).
type JSONConverter struct {
	schemasEnable  bool
	decimalNumeric bool
	replaceNull    bool
	floatFormat    java.FloatFormat
	schemaContent  *data.Schema

	fromCache *lru[*data.Schema, []byte] // schema → its JSON
	toCache   *lru[string, *data.Schema] // schema JSON → schema
	sizeHint  atomic.Int64               // the size of the last record written
}

const defaultCacheSize = 1000

// NewJSON returns a JsonConverter with the default settings.
func NewJSON() *JSONConverter {
	return &JSONConverter{
		schemasEnable: true,
		replaceNull:   true,
		fromCache:     newLRU[*data.Schema, []byte](defaultCacheSize),
		toCache:       newLRU[string, *data.Schema](defaultCacheSize),
	}
}

// Configure applies the settings.
func (c *JSONConverter) Configure(config map[string]string, _ bool) error {
	var err error
	if c.schemasEnable, err = boolSetting(config, "schemas.enable", true); err != nil {
		return err
	}
	if c.replaceNull, err = boolSetting(config, "replace.null.with.default", true); err != nil {
		return err
	}
	size, err := intSetting(config, "schemas.cache.size", defaultCacheSize)
	if err != nil {
		return err
	}
	format, err := choiceSetting(config, "decimal.format", "BASE64", "BASE64", "NUMERIC")
	if err != nil {
		return err
	}
	c.decimalNumeric = format == "NUMERIC"
	if c.floatFormat, err = floatFormatSetting(config); err != nil {
		return err
	}
	c.fromCache = newLRU[*data.Schema, []byte](size)
	c.toCache = newLRU[string, *data.Schema](size)
	c.schemaContent = nil
	if sc := config["schema.content"]; strings.TrimSpace(sc) != "" {
		root, err := parseJSON([]byte(sc), false)
		if err != nil {
			return data.Errorf("Failed to parse schema in converter config due to serialization error: %w", err)
		}
		if c.schemaContent, err = c.asConnectSchema(&root); err != nil {
			return err
		}
	}
	return nil
}

// FromConnectData serializes value with its schema; a null schema and a
// null value make a null (tombstone).
func (c *JSONConverter) FromConnectData(_ string, schema *data.Schema, value any) ([]byte, error) {
	if schema == nil && isNull(value) {
		return nil, nil
	}
	buf := make([]byte, 0, c.sizeHint.Load()+64)
	var err error
	if c.schemasEnable {
		buf = append(buf, `{"schema":`...)
		if buf, err = c.appendSchemaOrNull(buf, schema); err != nil {
			return nil, err
		}
		buf = append(buf, `,"payload":`...)
	}
	if buf, err = c.appendValue(buf, schema, value); err != nil {
		return nil, err
	}
	if c.schemasEnable {
		buf = append(buf, '}')
	}
	c.sizeHint.Store(int64(min(len(buf), 1<<16)))
	return buf, nil
}

// ToConnectData deserializes b; a nil b (a tombstone) reads as a null
// schema and value.
func (c *JSONConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return nil, nil, nil
	}
	envelope := c.schemasEnable && c.schemaContent == nil
	root, err := parseJSON(b, envelope)
	if err != nil {
		return nil, nil, data.Errorf("Converting byte[] to Kafka Connect data failed due to serialization error: %w", err)
	}
	if !c.schemasEnable {
		v, err := c.toConnect(nil, &root)
		return nil, v, err
	}
	if c.schemaContent != nil {
		v, err := c.toConnect(c.schemaContent, &root)
		return c.schemaContent, v, err
	}
	if root.kind != kObject || len(root.keys) != 2 || root.get("schema") == nil || root.get("payload") == nil {
		return nil, nil, data.Errorf("JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may not contain additional fields." +
			" If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.")
	}
	schema, err := c.envelopeSchema(root.get("schema").raw)
	if err != nil {
		return nil, nil, err
	}
	v, err := c.toConnect(schema, root.get("payload"))
	if err != nil {
		return nil, nil, err
	}
	return schema, v, nil
}

// envelopeSchema parses the raw JSON of an envelope's schema, through the
// cache.
func (c *JSONConverter) envelopeSchema(raw []byte) (*data.Schema, error) {
	if s, ok := getString(c.toCache, raw); ok {
		return s, nil
	}
	n, err := parseJSON(raw, false)
	if err != nil { // checked by the first parse already
		return nil, data.Errorf("Converting byte[] to Kafka Connect data failed due to serialization error: %w", err)
	}
	s, err := c.asConnectSchema(&n)
	if err != nil {
		return nil, err
	}
	c.toCache.put(string(raw), s)
	return s, nil
}

func isNull(v any) bool { return v == nil || v == (*data.Struct)(nil) }
