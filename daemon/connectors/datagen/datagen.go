// Package datagen is a data generator for demos, tests and benchmarks:
// io.kcd.connect.datagen.DatagenConnector (aliases DatagenConnector and
// Datagen). Its records are deterministic and numbered: task t emits
// sequence numbers 0, 1, 2… with source partition {"task": t} and offset
// {"seq": n} (on the last record of each poll), and every record carries t
// and n in its headers (datagen.task, datagen.seq) and in its value, so
// that a test can count losses and duplicates. After a restart a task
// continues after its stored offset.
package datagen

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/internal/version"
)

// Class is the connector's class name.
const Class = "io.kcd.connect.datagen.DatagenConnector"

// Settings.
const (
	TopicConfig      = "topic"
	RateConfig       = "rate.per.task"
	MaxRecordsConfig = "max.records"
	ShapeConfig      = "shape"
	RecordSizeConfig = "record.size"
	KeyConfig        = "key"
	BatchSizeConfig  = "batch.size"
	// TaskIDConfig is set by the connector in each task's config.
	TaskIDConfig = "task.id"
)

// Shapes and keys.
const (
	ShapeCounter = "counter" // STRING "task-<t>-<n>"
	ShapeJSON    = "json"    // the User struct
	ShapeUser    = "user"    // the User struct
	ShapeBytes   = "bytes"   // BYTES of record.size

	KeyNone     = "none"
	KeySequence = "sequence" // INT64 n
	KeyTask     = "task"     // INT32 t
)

// Source partition and offset fields, and header keys.
const (
	TaskField    = "task"
	SeqField     = "seq"
	TaskHeader   = "datagen.task"
	SeqHeader    = "datagen.seq"
	defaultBatch = 1000
)

func init() {
	connect.Register(connect.Plugin{
		Class:   Class,
		Type:    connect.PluginSource,
		Version: version.Version,
		New:     func() connect.Connector { return &Connector{} },
	})
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, ok := range vals {
			if strings.TrimSpace(v) == ok {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(vals, ", "))
	}
}

func atLeast(n float64) func(string) error {
	return func(v string) error {
		if f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64); f < n {
			return fmt.Errorf("must be at least %v", n)
		}
		return nil
	}
}

var configDef = connect.ConfigDef{
	{Name: TopicConfig, Type: connect.TypeString, Importance: connect.High,
		Documentation: "The topic to write to", Validator: func(v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("String must be non-empty")
			}
			return nil
		}},
	{Name: RateConfig, Type: connect.TypeDouble, Default: connect.Default("0"), Importance: connect.Medium, Validator: atLeast(0),
		Documentation: "Records per second of each task; 0 = as fast as possible"},
	{Name: MaxRecordsConfig, Type: connect.TypeLong, Default: connect.Default("0"), Importance: connect.Medium, Validator: atLeast(0),
		Documentation: "Records each task emits in all (it then idles); 0 = no end"},
	{Name: ShapeConfig, Type: connect.TypeString, Default: connect.Default(ShapeCounter), Importance: connect.Medium,
		Validator: oneOf(ShapeCounter, ShapeJSON, ShapeUser, ShapeBytes), Recommended: []string{ShapeCounter, ShapeJSON, ShapeUser, ShapeBytes},
		Documentation: "counter: the string task-<t>-<n>; json or user: a User struct with a schema; bytes: record.size bytes"},
	{Name: RecordSizeConfig, Type: connect.TypeInt, Default: connect.Default("100"), Importance: connect.Low, Validator: atLeast(12),
		Documentation: "Bytes of a value of the bytes shape (the first 12 are the task and sequence numbers)"},
	{Name: KeyConfig, Type: connect.TypeString, Default: connect.Default(KeyNone), Importance: connect.Low,
		Validator: oneOf(KeyNone, KeySequence, KeyTask), Recommended: []string{KeyNone, KeySequence, KeyTask},
		Documentation: "none: no key; sequence: the sequence number (INT64); task: the task number (INT32)"},
	{Name: BatchSizeConfig, Type: connect.TypeInt, Default: connect.Default(strconv.Itoa(defaultBatch)), Importance: connect.Low, Validator: atLeast(1),
		Documentation: "The most records one poll returns"},
}

// Connector is the DatagenConnector.
type Connector struct {
	cfg map[string]string
}

var _ connect.SourceConnector = (*Connector)(nil)

func (c *Connector) Version() string              { return version.Version }
func (c *Connector) ConfigDef() connect.ConfigDef { return configDef }
func (c *Connector) NewTask() connect.SourceTask  { return &Task{} }
func (c *Connector) Stop() error                  { return nil }

// Start checks the config.
func (c *Connector) Start(_ connect.ConnectorContext, cfg map[string]string) error {
	if _, err := parse(cfg); err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

// TaskConfigs returns maxTasks tasks, numbered by task.id.
func (c *Connector) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, maxTasks)
	for i := range out {
		tc := maps.Clone(c.cfg)
		tc[TaskIDConfig] = strconv.Itoa(i)
		out[i] = tc
	}
	return out, nil
}

// config is a parsed task config.
type config struct {
	topic      string
	rate       float64
	maxRecords int64
	shape      string
	recordSize int
	key        string
	batch      int
	task       int
}

func parse(cfg map[string]string) (config, error) {
	var errs []error
	for _, k := range configDef {
		var v *string
		if s, ok := cfg[k.Name]; ok {
			v = &s
		}
		if err := k.ValidateValue(v); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return config{}, err
	}
	get := func(k string) string {
		if v, ok := cfg[k]; ok {
			return strings.TrimSpace(v)
		}
		d, _ := configDef.Key(k)
		return *d.Default
	}
	c := config{topic: get(TopicConfig), shape: get(ShapeConfig), key: get(KeyConfig)}
	c.rate, _ = strconv.ParseFloat(get(RateConfig), 64)
	c.maxRecords, _ = strconv.ParseInt(get(MaxRecordsConfig), 10, 64)
	c.recordSize, _ = strconv.Atoi(get(RecordSizeConfig))
	c.batch, _ = strconv.Atoi(get(BatchSizeConfig))
	if v, ok := cfg[TaskIDConfig]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return config{}, fmt.Errorf("invalid value %s for configuration %s", v, TaskIDConfig)
		}
		c.task = n
	}
	return c, nil
}
