package worker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// Converter turns Connect data into record bytes and back. It is the
// interface of package converter (daemon/connect/converter), which the
// worker receives through Config.Converters.
type Converter interface {
	Configure(config map[string]string, isKey bool) error
	FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error)
	ToConnectData(topic string, b []byte) (*data.Schema, any, error)
}

// sharedReader is a Converter that can read bytes in place:
// ToConnectDataShared may return values that point into b, which the
// caller promises never changes while they live. A sink's fetched bytes
// are such: franz-go decodes every fetch response into a buffer of its
// own and never reuses it.
type sharedReader interface {
	ToConnectDataShared(topic string, b []byte) (*data.Schema, any, error)
}

// toConnectFunc is a converter's ToConnectData or ToConnectDataShared.
type toConnectFunc func(topic string, b []byte) (*data.Schema, any, error)

// sharedRead returns c's ToConnectDataShared, or its ToConnectData.
func sharedRead(c Converter) toConnectFunc {
	if s, ok := c.(sharedReader); ok {
		return s.ToConnectDataShared
	}
	return c.ToConnectData
}

// ConverterFactory makes a converter by class name or alias, as
// converter.New does.
type ConverterFactory func(class string) (Converter, error)

// converters are the key, value and header converters of one task.
type converters struct {
	key, value, header Converter
	// Their class names, for the dead letter queue's context headers.
	keyClass, valueClass, headerClass string
	// How a sink reads fetched bytes with them (see sharedReader).
	readKey, readValue, readHeader toConnectFunc
}

// newConverters builds a task's converters: the connector's own when its
// config names them (with its "<kind>.converter.*" settings), else the
// worker's defaults (with theirs).
func (w *Worker) newConverters(config map[string]string) (converters, error) {
	var cs converters
	var err error
	if cs.key, err = w.converter(config, "key", true); err != nil {
		return cs, err
	}
	if cs.value, err = w.converter(config, "value", false); err != nil {
		return cs, err
	}
	if cs.header, err = w.converter(config, "header", false); err != nil {
		return cs, err
	}
	cs.keyClass = converterClass(w.converterSetting(config, "key.converter"))
	cs.valueClass = converterClass(w.converterSetting(config, "value.converter"))
	cs.headerClass = converterClass(w.converterSetting(config, "header.converter"))
	cs.readKey, cs.readValue, cs.readHeader = sharedRead(cs.key), sharedRead(cs.value), sharedRead(cs.header)
	return cs, nil
}

// converterSetting is the connector's converter class setting prop, or
// the worker's default.
func (w *Worker) converterSetting(config map[string]string, prop string) string {
	if c := strings.TrimSpace(config[prop]); c != "" {
		return c
	}
	return w.cfg.ConverterDefaults[prop]
}

func (w *Worker) converter(config map[string]string, kind string, isKey bool) (Converter, error) {
	prop := kind + ".converter"
	src := config
	if strings.TrimSpace(config[prop]) == "" {
		src = w.cfg.ConverterDefaults
	}
	class := strings.TrimSpace(src[prop])
	settings := map[string]string{}
	for k, v := range src {
		if rest, ok := strings.CutPrefix(k, prop+"."); ok {
			settings[rest] = v
		}
	}
	var c Converter
	switch {
	case kind == "header" && (class == "" || class == SimpleHeaderConverter || class == "SimpleHeaderConverter"):
		c = simpleHeaderConverter{}
	case class == "":
		return nil, fmt.Errorf("no %s is configured", prop)
	case w.cfg.Converters == nil:
		return nil, fmt.Errorf("%s %s: the worker has no converters", prop, class)
	default:
		var err error
		if c, err = w.cfg.Converters(class); err != nil {
			return nil, fmt.Errorf("%s %s: %w", prop, class, err)
		}
	}
	if err := c.Configure(settings, isKey); err != nil {
		return nil, fmt.Errorf("configure %s %s: %w", prop, class, err)
	}
	return c, nil
}

// simpleHeaderConverter is the part of Kafka Connect's
// SimpleHeaderConverter that needs no type inference: values are written
// as their text, and read back as strings.
type simpleHeaderConverter struct{}

func (simpleHeaderConverter) Configure(map[string]string, bool) error { return nil }

func (simpleHeaderConverter) FromConnectData(_ string, _ *data.Schema, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	case fmt.Stringer:
		return []byte(v.String()), nil
	}
	if b, ok := appendSimpleHeader(nil, v); ok {
		return b, nil
	}
	return nil, fmt.Errorf("header value of type %T: %w", v, errUnsupportedHeader)
}

// appendSimpleHeader appends what simpleHeaderConverter.FromConnectData
// returns for a number or a boolean to dst; ok is false for other values,
// which FromConnectData converts.
func appendSimpleHeader(dst []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case bool:
		return strconv.AppendBool(dst, v), true
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case float32:
		return strconv.AppendFloat(dst, float64(v), 'g', -1, 32), true
	case float64:
		return strconv.AppendFloat(dst, v, 'g', -1, 64), true
	}
	return dst, false
}

func (simpleHeaderConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalStringSchema, nil, nil
	}
	return data.StringSchema, string(b), nil
}

// ToConnectDataShared is ToConnectData reading b in place (sharedReader).
func (simpleHeaderConverter) ToConnectDataShared(_ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalStringSchema, nil, nil
	}
	return data.StringSchema, unsafe.String(unsafe.SliceData(b), len(b)), nil
}

var errUnsupportedHeader = errors.New("not supported by the simple header converter")

// isSerialized tells whether a connector's records are bytes already
// (connect.SerializedRecords, on the connector or its task): the runtime
// then runs no converters for its tasks, and the converter settings are
// the plugin's business.
func isSerialized(conn connect.Connector, task any) bool {
	_, c := conn.(connect.SerializedRecords)
	_, t := task.(connect.SerializedRecords)
	return c || t
}
