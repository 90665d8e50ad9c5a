// Package transforms is Kafka Connect's single message transforms and
// predicates in Go, for kcd's built-in connectors: the classes of
// org.apache.kafka.connect.transforms with their config keys, defaults and
// behaviour, so that a connector config written for Kafka Connect runs
// unchanged. A Chain built from a connector config (transforms=…,
// predicates=…) applies them to a record.
//
// Transformations never modify the record they are given, nor the values
// it points to: they return a new record that may share unchanged parts.
package transforms

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// Record is what transformations and predicates see of a source or sink
// record (Kafka Connect's ConnectRecord).
type Record struct {
	Topic     string
	Partition *int32 // nil: none
	// Offset is the Kafka offset of a sink record; Sink says the record
	// is one (InsertField's offset.field needs it).
	Offset      int64
	Sink        bool
	KeySchema   *data.Schema
	Key         any
	ValueSchema *data.Schema
	Value       any
	Timestamp   *int64 // milliseconds since the epoch; nil: none
	Headers     []connect.Header
}

// clone returns a shallow copy of r; the Headers slice is shared, so a
// transformation that changes headers copies it first.
func (r *Record) clone() *Record { c := *r; return &c }

// Transformation is a single message transform.
type Transformation interface {
	// Configure takes the transformation's own settings (without the
	// "transforms.<alias>." prefix).
	Configure(config map[string]string) error
	// Apply returns the transformed record, or nil to drop it.
	Apply(r *Record) (*Record, error)
}

// Predicate decides whether a transformation applies to a record.
type Predicate interface {
	Configure(config map[string]string) error
	Test(r *Record) (bool, error)
}

// Plugin is a registered transformation or predicate class.
type Plugin struct {
	Class  string
	Config connect.ConfigDef
	// Exactly one of these is set.
	NewTransformation func() Transformation
	NewPredicate      func() Predicate
}

// Version is the version these plugins report: Kafka Connect's, whose
// behaviour they reproduce.
const Version = "4.3.1"

var (
	regMu   sync.RWMutex
	plugins = map[string]*Plugin{}
)

func register(p Plugin) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := plugins[p.Class]; dup {
		panic("transforms: " + p.Class + " registered twice")
	}
	plugins[p.Class] = &p
}

// registerKV registers the $Key and $Value variants of a transformation
// whose class is base.
func registerKV(base string, def connect.ConfigDef, mk func(key bool) Transformation) {
	register(Plugin{Class: base + "$Key", Config: def, NewTransformation: func() Transformation { return mk(true) }})
	register(Plugin{Class: base + "$Value", Config: def, NewTransformation: func() Transformation { return mk(false) }})
}

// Lookup finds a plugin by class name or simple class name.
func Lookup(name string) (*Plugin, bool) {
	name = strings.TrimSpace(name)
	regMu.RLock()
	defer regMu.RUnlock()
	if p, ok := plugins[name]; ok {
		return p, true
	}
	for c, p := range plugins {
		if c[strings.LastIndexByte(c, '.')+1:] == name {
			return p, true
		}
	}
	return nil, false
}

// Transformations and Predicates list the class names, sorted.
func Transformations() []string { return classes(false) }

// Predicates lists the predicate classes, sorted.
func Predicates() []string { return classes(true) }

func classes(pred bool) []string {
	regMu.RLock()
	defer regMu.RUnlock()
	var out []string
	for c, p := range plugins {
		if (p.NewPredicate != nil) == pred {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// ConfigError is Kafka Connect's ConfigException.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// config is Kafka Connect's SimpleConfig: settings parsed and checked
// against a ConfigDef, defaults filled in.
type config struct {
	def  connect.ConfigDef
	vals map[string]*string
}

func parseConfig(def connect.ConfigDef, raw map[string]string) (*config, error) {
	c := &config{def: def, vals: map[string]*string{}}
	for _, k := range def {
		var v *string
		if s, ok := raw[k.Name]; ok {
			v = &s
		} else {
			v = k.Default
		}
		if err := k.ValidateValue(v); err != nil {
			return nil, &ConfigError{Msg: err.Error()}
		}
		c.vals[k.Name] = v
	}
	return c, nil
}

// str returns a STRING setting; nil when null.
func (c *config) str(name string) *string { return c.vals[name] }

func (c *config) string(name string) string {
	if v := c.vals[name]; v != nil {
		return *v
	}
	return ""
}

func (c *config) list(name string) []string { return parseList(c.string(name)) }

func (c *config) bool(name string) bool {
	return strings.EqualFold(strings.TrimSpace(c.string(name)), "true")
}

func (c *config) int(name string) (int64, bool) {
	v := c.vals[name]
	if v == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(*v), 10, 64)
	return n, err == nil
}

// parseList splits a LIST setting as Kafka Connect does: on commas,
// trimmed; an empty string is the empty list.
func parseList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Validators, with Kafka Connect's messages.

func nonEmptyList(v string) error {
	if len(parseList(v)) == 0 {
		return &connect.MessageError{Msg: "Configuration '{name}' must not be empty. Valid values include: any non-empty value"}
	}
	return nil
}

// nullList is NonEmptyListValidator's message for null.
const nullList = "Configuration '{name}' values must not be null."

// wholeMessage is a validator error shown as it is.
func wholeMessage(err error) error {
	if err == nil {
		return nil
	}
	return &connect.MessageError{Msg: err.Error()}
}

func nonEmptyString(v string) error {
	if v == "" {
		return fmt.Errorf("String must be non-empty")
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(values, ", "))
	}
}

func def(v string) *string { return connect.Default(v) }

const docReplaceNull = "Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."

var replaceNullKey = connect.ConfigKey{Name: "replace.null.with.default", Type: connect.TypeBoolean, Default: def("true"),
	Importance: connect.Medium, Documentation: docReplaceNull}

// Chain is the transformations of a connector config, in order, each with
// its predicate.
type Chain struct {
	stages []stage
}

type stage struct {
	alias  string
	class  string
	t      Transformation
	pred   Predicate
	negate bool
}

// NewChain builds the chain a connector config describes: "transforms"
// lists the aliases, "transforms.<alias>.type" names each class and
// "transforms.<alias>.*" configures it; "predicate" and "negate" pick a
// predicate of "predicates". No transforms gives a nil chain, which
// applies nothing.
func NewChain(cfg map[string]string) (*Chain, error) {
	aliases := parseList(cfg["transforms"])
	if len(aliases) == 0 {
		return nil, nil
	}
	preds := map[string]Predicate{}
	for _, a := range parseList(cfg["predicates"]) {
		prefix := "predicates." + a + "."
		p, ok := Lookup(cfg[prefix+"type"])
		if !ok || p.NewPredicate == nil {
			return nil, configErrorf("Invalid value %s for configuration %stype: Class %s could not be found.", cfg[prefix+"type"], prefix, cfg[prefix+"type"])
		}
		pr := p.NewPredicate()
		if err := pr.Configure(sub(cfg, prefix)); err != nil {
			return nil, fmt.Errorf("predicate %s: %w", a, err)
		}
		preds[a] = pr
	}
	c := &Chain{}
	for _, a := range aliases {
		prefix := "transforms." + a + "."
		p, ok := Lookup(cfg[prefix+"type"])
		if !ok || p.NewTransformation == nil {
			return nil, configErrorf("Invalid value %s for configuration %stype: Class %s could not be found.", cfg[prefix+"type"], prefix, cfg[prefix+"type"])
		}
		own := sub(cfg, prefix)
		t := p.NewTransformation()
		if err := t.Configure(own); err != nil {
			return nil, fmt.Errorf("transformation %s: %w", a, err)
		}
		s := stage{alias: a, class: p.Class, t: t}
		if pa := strings.TrimSpace(own["predicate"]); pa != "" {
			if s.pred = preds[pa]; s.pred == nil {
				return nil, configErrorf("Invalid value %s for configuration %spredicate: The predicate '%s' is not defined in predicates", pa, prefix, pa)
			}
			s.negate = strings.EqualFold(strings.TrimSpace(own["negate"]), "true")
		} else if _, ok := own["negate"]; ok {
			return nil, configErrorf("Config '%snegate' was provided but there is no config '%spredicate' defining a predicate to be negated.", prefix, prefix)
		}
		c.stages = append(c.stages, s)
	}
	return c, nil
}

// sub returns the settings under prefix, without it.
func sub(cfg map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// Error is a transformation's (or its predicate's) failure on a record,
// with the class that failed, as Kafka Connect's error context names it.
type Error struct {
	Alias, Class string
	Err          error
}

func (e *Error) Error() string { return fmt.Sprintf("transformation %s: %v", e.Alias, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Apply runs r through the chain; nil means a transformation dropped it.
// A nil chain returns r.
func (c *Chain) Apply(r *Record) (*Record, error) {
	if c == nil {
		return r, nil
	}
	for _, s := range c.stages {
		if s.pred != nil {
			ok, err := s.pred.Test(r)
			if err != nil {
				return nil, &Error{Alias: s.alias, Class: s.class, Err: fmt.Errorf("predicate: %w", err)}
			}
			if ok == s.negate {
				continue
			}
		}
		out, err := s.t.Apply(r)
		if err != nil {
			return nil, &Error{Alias: s.alias, Class: s.class, Err: err}
		}
		if out == nil {
			return nil, nil
		}
		r = out
	}
	return r, nil
}

// Len is the number of transformations.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.stages)
}

// FromSource and ToSource convert between a source record and a Record.
func FromSource(s *connect.SourceRecord) *Record {
	r := &Record{Topic: s.Topic, Partition: s.Partition, KeySchema: s.KeySchema, Key: s.Key,
		ValueSchema: s.ValueSchema, Value: s.Value, Headers: s.Headers}
	if !s.Timestamp.IsZero() {
		ms := s.Timestamp.UnixMilli()
		r.Timestamp = &ms
	}
	return r
}

// ToSource returns a copy of base carrying r's data.
func ToSource(base *connect.SourceRecord, r *Record) *connect.SourceRecord {
	out := *base
	out.Topic, out.Partition = r.Topic, r.Partition
	out.KeySchema, out.Key, out.ValueSchema, out.Value = r.KeySchema, r.Key, r.ValueSchema, r.Value
	out.Headers = r.Headers
	out.Timestamp = time.Time{}
	if r.Timestamp != nil {
		out.Timestamp = time.UnixMilli(*r.Timestamp)
	}
	return &out
}

// FromSink converts a sink record.
func FromSink(s *connect.SinkRecord) *Record {
	p := s.Partition
	r := &Record{Topic: s.Topic, Partition: &p, Offset: s.Offset, Sink: true, KeySchema: s.KeySchema, Key: s.Key,
		ValueSchema: s.ValueSchema, Value: s.Value, Headers: s.Headers}
	if !s.Timestamp.IsZero() {
		ms := s.Timestamp.UnixMilli()
		r.Timestamp = &ms
	}
	return r
}

// ToSink writes r's data into dst (its offset stays).
func ToSink(dst *connect.SinkRecord, r *Record) {
	dst.Topic = r.Topic
	if r.Partition != nil {
		dst.Partition = *r.Partition
	}
	dst.KeySchema, dst.Key, dst.ValueSchema, dst.Value = r.KeySchema, r.Key, r.ValueSchema, r.Value
	dst.Headers = r.Headers
	dst.Timestamp = time.Time{}
	if r.Timestamp != nil {
		dst.Timestamp = time.UnixMilli(*r.Timestamp)
	}
}
