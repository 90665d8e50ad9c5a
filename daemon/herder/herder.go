// Package herder is kcd's control plane for connectors, the part of Kafka
// Connect's herder that the REST API calls: it validates connector configs
// as Kafka Connect does (its common settings, then the connector's own
// ConfigDef), and writes configs, target states, restart requests and
// offsets to the metadata store (package connectstore), from which the
// workers run the connectors. It reads the statuses the workers report.
//
// Every write is one conditional store operation, so a request that fails
// (validation, a concurrent change) leaves nothing half-written. The store
// is replicated, so any node can serve any call: nothing is forwarded to a
// leader.
package herder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/transforms"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/internal/version"
)

// Kinds of failure; every error the herder returns for a bad request wraps
// one of them (errors.Is), so that the REST API can pick the status code.
var (
	ErrNotFound      = errors.New("not found")      // 404
	ErrAlreadyExists = errors.New("already exists") // 409
	ErrBadRequest    = errors.New("bad request")    // 400
	ErrConflict      = errors.New("conflict")       // 409: the request lost a race too often
	ErrForbidden     = errors.New("forbidden")      // 403: turned off by the worker's settings
)

// Error is a failure with Kafka Connect's message, of one of the kinds
// above. Error() is the message alone, as the REST API shows it.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Kafka Connect's default converters, which a connector without its own
// uses; validation shows them as the defaults.
const (
	JSONConverter         = "org.apache.kafka.connect.json.JsonConverter"
	StringConverter       = "org.apache.kafka.connect.storage.StringConverter"
	ByteArrayConverter    = "org.apache.kafka.connect.converters.ByteArrayConverter"
	SimpleHeaderConverter = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
)

// Options tune a Herder. The zero value is usable.
type Options struct {
	// Converters and HeaderConverters are the (header) converter classes
	// the workers can load, by Kafka Connect class name; nil means the
	// converters kcd ships (DefaultConverters, DefaultHeaderConverters).
	Converters, HeaderConverters []string
	// Transformations and Predicates are the SMT and predicate classes the
	// workers can load; nil means kcd's own (package transforms).
	Transformations, Predicates []string
	// ConverterConfig returns the settings a converter class takes (without
	// the "key.converter." prefix), so that validation checks the settings
	// of a converter a config names, as Kafka Connect does; nil, or a nil
	// ConfigDef, leaves them unchecked.
	ConverterConfig func(class string) connect.ConfigDef
	// PluginVersion is the version reported for those plugins (default:
	// kcd's version, which kcd's built-in connectors report too).
	PluginVersion string
	// KeyConverter, ValueConverter and HeaderConverter are the workers'
	// defaults (JSONConverter, JSONConverter, SimpleHeaderConverter).
	KeyConverter, ValueConverter, HeaderConverter string
	// Owners, when set, reads who owns each unit of a connector now and
	// whether that worker holds a session (coordinator.Owners over the
	// store); statuses are then shown as they hold now, not only as last
	// reported. Nil shows them as reported.
	Owners func(ctx context.Context, name string) (map[int]coordinator.UnitOwner, int64, error)
	// MaxTasksPerConnector is the most tasks a connector may ask for
	// (tasks.max); 0 means DefaultMaxTasksPerConnector.
	MaxTasksPerConnector int
	// Files confines the local files connectors may use
	// (--file-connector-dirs): validation reports, on the setting that
	// names it, a file a connector (connect.FileUser) may not open, so
	// that create and config updates refuse it. Nil: any path.
	Files *connect.Files
	// NoTopicTracking answers GET and PUT /connectors/{name}/topics... with
	// 403, as Kafka Connect does with topic.tracking.enable=false (the
	// workers then record no topics); NoTopicTrackingReset answers the
	// reset with 403 (topic.tracking.allow.reset=false).
	NoTopicTracking, NoTopicTrackingReset bool
	// Clients are the workers' producer and consumer settings and their
	// override policy; nil: Kafka Connect's defaults and the policy All.
	Clients *ClientSettings
	Logger  *slog.Logger
}

// DefaultMaxTasksPerConnector is the default of
// Options.MaxTasksPerConnector.
const DefaultMaxTasksPerConnector = 1000

// DefaultConverters and DefaultHeaderConverters are the converter classes
// kcd ships.
var (
	DefaultConverters       = []string{ByteArrayConverter, JSONConverter, StringConverter}
	DefaultHeaderConverters = []string{ByteArrayConverter, JSONConverter, SimpleHeaderConverter, StringConverter}
)

// Herder serves the connector calls of the REST API over a connectstore.
type Herder struct {
	store *connectstore.Store
	opts  Options
	log   *slog.Logger
}

// New returns a herder that keeps connectors in store.
func New(store *connectstore.Store, opts Options) *Herder {
	if opts.Converters == nil {
		opts.Converters = DefaultConverters
	}
	if opts.HeaderConverters == nil {
		opts.HeaderConverters = DefaultHeaderConverters
	}
	if opts.Transformations == nil {
		opts.Transformations = transforms.Transformations()
	}
	if opts.Predicates == nil {
		opts.Predicates = transforms.Predicates()
	}
	if opts.PluginVersion == "" {
		opts.PluginVersion = version.Version
	}
	if opts.KeyConverter == "" {
		opts.KeyConverter = JSONConverter
	}
	if opts.ValueConverter == "" {
		opts.ValueConverter = JSONConverter
	}
	if opts.HeaderConverter == "" {
		opts.HeaderConverter = SimpleHeaderConverter
	}
	if opts.MaxTasksPerConnector <= 0 {
		opts.MaxTasksPerConnector = DefaultMaxTasksPerConnector
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Herder{store: store, opts: opts, log: opts.Logger}
}

// maxAttempts bounds the read-check-write retries of one request that keeps
// losing compare-and-set races.
const maxAttempts = 20

func conflict(name string) error {
	return errorf(ErrConflict, "Cannot complete request because of a conflicting operation on connector %s; retry", name)
}

// Store is the Connect metadata the herder serves (GET /kcd/v1/export reads it).
func (h *Herder) Store() *connectstore.Store { return h.store }
