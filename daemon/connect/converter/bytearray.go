package converter

import "github.com/kcd-project/kcd/daemon/connect/data"

// ByteArrayConverter is Kafka Connect's
// org.apache.kafka.connect.converters.ByteArrayConverter: bytes pass
// through unchanged.
type ByteArrayConverter struct{}

// Configure accepts any settings; there are none.
func (ByteArrayConverter) Configure(map[string]string, bool) error { return nil }

// FromConnectData returns value, which must be []byte or nil, of a BYTES
// schema or none.
func (ByteArrayConverter) FromConnectData(_ string, schema *data.Schema, value any) ([]byte, error) {
	if schema != nil && schema.Type != data.Bytes {
		return nil, data.Errorf("Invalid schema type for ByteArrayConverter: %s", schema.Type)
	}
	switch v := value.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	}
	return nil, data.Errorf("ByteArrayConverter is not compatible with objects of type %T", value)
}

// ToConnectData returns b as an optional BYTES value.
func (ByteArrayConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalBytesSchema, nil, nil
	}
	return data.OptionalBytesSchema, b, nil
}
