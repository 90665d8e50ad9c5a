// Package connectstore keeps Kafka Connect's metadata — connector configs,
// task configs, target states, statuses, source and sink offsets — in kcd's
// metadata store (package store), under the prefix "connect/". It is the
// contract between the REST API, which writes configs and target states,
// and the workers, which run connectors and write task configs, statuses and
// offsets.
//
// Layout (connector names are path-escaped, so "a/b" cannot reach into
// "a"'s keys):
//
//	connect/config/<name>              ConnectorConfig
//	connect/target/<name>              TargetState
//	connect/tasks/<name>               TaskConfigs (all tasks at once: no half-written set)
//	connect/restart/<name>             RestartRequest
//	connect/status/<name>/connector    Status
//	connect/status/<name>/task/<id>    Status
//	connect/topic/<name>/<topic>       TopicStatus (topics.go)
//	connect/offset/<name>/<hash>       SourceOffset (hash of the partition's JSON)
//	connect/sinkoffset/<name>/<topic>/<partition>   SinkOffset
package connectstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kcd-project/kcd/store"
)

// Prefix is where all of Connect's metadata lives in the store.
const Prefix = "connect/"

// The target states a connector can be asked to be in.
const (
	TargetStarted = "STARTED"
	TargetPaused  = "PAUSED"
	TargetStopped = "STOPPED"
)

// The states a connector or task reports, as Kafka Connect names them.
const (
	StateUnassigned = "UNASSIGNED"
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StateFailed     = "FAILED"
	StateRestarting = "RESTARTING"
	StateStopped    = "STOPPED"
)

// ErrNotFound says a connector does not exist.
var ErrNotFound = errors.New("connectstore: connector not found")

// ConnectorConfig is a connector's configuration as the user gave it.
type ConnectorConfig struct {
	Config map[string]string `json:"config"`
	// Nulls are the settings the user gave as null, which Kafka Connect
	// keeps and shows (a connector's own settings may be null). Connectors
	// and tasks see them as absent.
	Nulls []string `json:"nulls,omitempty"`
}

// TargetState is what the user asked the connector to be.
type TargetState struct {
	State string `json:"state"`
}

// TaskConfigs is the whole set of a connector's task configs. Generation
// grows with every new set, so workers can tell sets apart.
type TaskConfigs struct {
	Generation int64               `json:"generation"`
	Tasks      []map[string]string `json:"tasks"`
}

// RestartRequest asks the workers to restart a connector (and its tasks).
type RestartRequest struct {
	Seq          int64 `json:"seq"`
	IncludeTasks bool  `json:"include_tasks"`
	OnlyFailed   bool  `json:"only_failed"`
	// Task, when not nil, restarts that task only.
	Task *int `json:"task,omitempty"`
}

// Status is the reported state of a connector or a task.
type Status struct {
	State    string `json:"state"`
	Trace    string `json:"trace,omitempty"`
	WorkerID string `json:"worker_id"`
	// Generation of the task configs (or assignment) the status belongs to.
	Generation int64 `json:"generation"`
	// Restarts counts automatic restarts after failures.
	Restarts int `json:"restarts,omitempty"`
	// ModRevision is the store revision the status was written at, as
	// Statuses read it; not stored.
	ModRevision int64 `json:"-"`
}

// SourceOffset is one source partition's offset.
type SourceOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
	// Key is the record key Kafka Connect's offsets topic holds this
	// partition under, ["<connector>",{<partition>}] in the connector's
	// Java map order, when kcd learned it (an import from Kafka Connect, a
	// Java plugin's task); empty otherwise, and in entries stored before
	// kcd kept it. A way back to Kafka Connect writes it again as is
	// (CheckOffsetKey bounds it).
	Key string `json:"key,omitempty"`
}

// SinkOffset is the next offset to read of one topic-partition.
type SinkOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func esc(name string) string { return url.PathEscape(name) }

// maxTopicLength is Kafka's limit on a topic name; its characters
// ([a-zA-Z0-9._-]) need no escaping.
const maxTopicLength = 249

// MaxNameBytes is the longest connector name, in bytes once path-escaped
// (url.PathEscape: letters, digits and -._~ count one byte, other bytes
// three), whose every store key fits store.MaxKeySize. The longest key
// besides the name is a sink offset's,
// connect/sinkoffset/<name>/<topic>/<partition>, with a topic of Kafka's
// 249 characters and a partition of 10 digits; the coordinator's keys
// (kcd/assign/revoke/<name>/<task>) are shorter.
const MaxNameBytes = store.MaxKeySize - len(Prefix+"sinkoffset/") - len("/") - maxTopicLength - len("/") - 10

// CheckName says why name cannot be a connector's name, or nil: it must
// be valid UTF-8, addressable as one URL path segment (no '/', not "." or
// "..", which clients and servers resolve away), and short enough for its
// keys (MaxNameBytes).
func CheckName(name string) error {
	switch {
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: a connector name must be valid UTF-8", store.ErrInvalid)
	case name == "." || name == "..":
		return fmt.Errorf("%w: a connector name must not be %q: it cannot be addressed in a URL path", store.ErrInvalid, name)
	case strings.Contains(name, "/"):
		return fmt.Errorf("%w: a connector name must not contain '/': it cannot be addressed in a URL path", store.ErrInvalid)
	case len(esc(name)) > MaxNameBytes:
		return fmt.Errorf("%w: a connector name takes at most %d bytes once URL-escaped, this one %d", store.ErrInvalid, MaxNameBytes, len(esc(name)))
	}
	return nil
}

// Keys of one connector.
func configKey(name string) string     { return Prefix + "config/" + esc(name) }
func targetKey(name string) string     { return Prefix + "target/" + esc(name) }
func tasksKey(name string) string      { return Prefix + "tasks/" + esc(name) }
func restartKey(name string) string    { return Prefix + "restart/" + esc(name) }
func statusPrefix(name string) string  { return Prefix + "status/" + esc(name) + "/" }
func connStatusKey(name string) string { return statusPrefix(name) + "connector" }
func taskStatusKey(name string, id int) string {
	return statusPrefix(name) + "task/" + strconv.Itoa(id)
}
func offsetPrefix(name string) string     { return Prefix + "offset/" + esc(name) + "/" }
func sinkOffsetPrefix(name string) string { return Prefix + "sinkoffset/" + esc(name) + "/" }
func sinkOffsetKey(name, topic string, p int32) string {
	return sinkOffsetPrefix(name) + esc(topic) + "/" + strconv.Itoa(int(p))
}

// PartitionKey is the canonical JSON of a source partition (sorted keys,
// as encoding/json writes maps), hashed into a bounded key.
func partitionKey(name string, partition map[string]any) (string, error) {
	b, err := json.Marshal(partition)
	if err != nil {
		return "", fmt.Errorf("source partition %v: %w", partition, err)
	}
	sum := sha256.Sum256(b)
	return offsetPrefix(name) + hex.EncodeToString(sum[:16]), nil
}

// Store is Connect's metadata over a store.Store.
type Store struct {
	s store.Store
}

// New returns the Connect metadata kept in s.
func New(s store.Store) *Store { return &Store{s: s} }

// Raw is the underlying store.
func (c *Store) Raw() store.Store { return c.s }

func getJSON(ctx context.Context, s store.Store, key string, v any) (bool, int64, error) {
	kv, found, err := s.Get(ctx, key)
	if err != nil || !found {
		return false, 0, err
	}
	if err := json.Unmarshal(kv.Value, v); err != nil {
		return false, 0, fmt.Errorf("connectstore: %s holds bad JSON: %w", key, err)
	}
	return true, kv.ModRevision, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("connectstore: encode %T: %v", v, err)) // only plain data is stored
	}
	return b
}

// Connectors lists the connector names, sorted.
func (c *Store) Connectors(ctx context.Context) ([]string, error) {
	kvs, _, err := c.s.Scan(ctx, Prefix+"config/", 0)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		name, err := url.PathUnescape(strings.TrimPrefix(kv.Key, Prefix+"config/"))
		if err == nil {
			out = append(out, name)
		}
	}
	return out, nil
}

// Config returns a connector's config and the revision it was written at.
func (c *Store) Config(ctx context.Context, name string) (map[string]string, int64, error) {
	cc, rev, err := c.ConnectorConfig(ctx, name)
	return cc.Config, rev, err
}

// ConnectorConfig returns a connector's config with the settings given as
// null, and the revision it was written at.
func (c *Store) ConnectorConfig(ctx context.Context, name string) (ConnectorConfig, int64, error) {
	var cc ConnectorConfig
	found, rev, err := getJSON(ctx, c.s, configKey(name), &cc)
	if err != nil {
		return ConnectorConfig{}, 0, err
	}
	if !found {
		return ConnectorConfig{}, 0, ErrNotFound
	}
	return cc, rev, nil
}

// CreateConnector stores a new connector's config (with the settings given
// as null, nulls) and target state in one atomic write. created is false
// when the connector already existed.
func (c *Store) CreateConnector(ctx context.Context, name string, config map[string]string, target string, nulls ...string) (created bool, err error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	if left, _, err := c.s.Scan(ctx, statusPrefix(name), 1); err != nil {
		return false, err
	} else if len(left) > 0 {
		// Statuses of an earlier connector of this name whose delete was
		// cut short: not this one's.
		if _, found, err := c.s.Get(ctx, configKey(name)); err != nil || found {
			return false, err
		}
		if err := c.removeStatuses(ctx, name); err != nil {
			return false, err
		}
	}
	if _, found, err := c.s.Get(ctx, configKey(name)); err != nil {
		return false, err
	} else if !found {
		// Topics of an earlier connector of this name whose delete was cut
		// short: a new connector starts with none, as in Kafka Connect.
		if err := c.ResetTopics(ctx, name); err != nil {
			return false, err
		}
	}
	_, ok, err := c.s.Batch(ctx,
		[]store.Cond{{Key: configKey(name), ModRevision: 0}},
		[]store.Op{
			store.Put(configKey(name), mustJSON(ConnectorConfig{Config: config, Nulls: nulls})),
			store.Put(targetKey(name), mustJSON(TargetState{State: target})),
		})
	return ok, err
}

// UpdateConfig replaces an existing connector's config (with the settings
// given as null, nulls) when it is still at revision rev (from Config); ok
// is false when it changed meanwhile.
func (c *Store) UpdateConfig(ctx context.Context, name string, config map[string]string, rev int64, nulls ...string) (ok bool, err error) {
	_, ok, err = c.s.CompareAndSet(ctx, configKey(name), rev, mustJSON(ConnectorConfig{Config: config, Nulls: nulls}))
	return ok, err
}

// DeleteConnector removes everything of a connector but its offsets (which
// Kafka Connect keeps too, so a re-created connector resumes). deleted is
// false when there was no such connector.
//
// The connector goes in one atomic write, with as many of its statuses as
// fit in a batch; the statuses left over (a connector with thousands of
// tasks) are removed in further batches. A delete cut short leaves only
// statuses of a connector that no longer exists, which the next delete or
// create of that name removes.
func (c *Store) DeleteConnector(ctx context.Context, name string) (deleted bool, err error) {
	for {
		kv, found, err := c.s.Get(ctx, configKey(name))
		if err != nil {
			return false, err
		}
		if !found {
			return false, errors.Join(c.removeStatuses(ctx, name), c.ResetTopics(ctx, name))
		}
		statuses, _, err := c.s.Scan(ctx, statusPrefix(name), 0)
		if err != nil {
			return false, err
		}
		ops := []store.Op{store.Delete(configKey(name)), store.Delete(targetKey(name)), store.Delete(tasksKey(name)), store.Delete(restartKey(name))}
		n := min(len(statuses), store.MaxBatchOps-len(ops))
		for _, st := range statuses[:n] {
			ops = append(ops, store.Delete(st.Key))
		}
		_, ok, err := c.s.Batch(ctx, []store.Cond{{Key: configKey(name), ModRevision: kv.ModRevision}}, ops)
		if err != nil {
			return false, err
		}
		if !ok {
			continue // changed meanwhile: read again
		}
		if n < len(statuses) {
			keys := make([]string, 0, len(statuses)-n)
			for _, st := range statuses[n:] {
				keys = append(keys, st.Key)
			}
			if err := c.deleteKeys(ctx, keys); err != nil {
				return true, fmt.Errorf("connector deleted; removing its statuses: %w", err)
			}
		}
		if err := c.ResetTopics(ctx, name); err != nil {
			return true, fmt.Errorf("connector deleted; removing its topics: %w", err)
		}
		return true, nil
	}
}

// removeStatuses removes the statuses left by a connector that no longer
// exists (a delete cut short).
func (c *Store) removeStatuses(ctx context.Context, name string) error {
	kvs, _, err := c.s.Scan(ctx, statusPrefix(name), 0)
	if err != nil || len(kvs) == 0 {
		return err
	}
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = kv.Key
	}
	return c.deleteKeys(ctx, keys)
}

// deleteKeys removes keys, store.MaxBatchOps at a time.
func (c *Store) deleteKeys(ctx context.Context, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), store.MaxBatchOps)
		ops := make([]store.Op, n)
		for i, k := range keys[:n] {
			ops[i] = store.Delete(k)
		}
		if _, _, err := c.s.Batch(ctx, nil, ops); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// Target returns a connector's target state (STARTED when none is stored).
func (c *Store) Target(ctx context.Context, name string) (string, error) {
	var ts TargetState
	found, _, err := getJSON(ctx, c.s, targetKey(name), &ts)
	if err != nil {
		return "", err
	}
	if !found {
		return TargetStarted, nil
	}
	return ts.State, nil
}

// SetTarget sets an existing connector's target state.
func (c *Store) SetTarget(ctx context.Context, name, state string) error {
	kv, found, err := c.s.Get(ctx, configKey(name))
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	_, ok, err := c.s.Batch(ctx,
		[]store.Cond{{Key: configKey(name), ModRevision: kv.ModRevision}},
		[]store.Op{store.Put(targetKey(name), mustJSON(TargetState{State: state}))})
	if err == nil && !ok {
		return c.SetTarget(ctx, name, state) // the config changed meanwhile: check again
	}
	return err
}

// Tasks returns a connector's task configs (empty when none were written).
func (c *Store) Tasks(ctx context.Context, name string) (TaskConfigs, error) {
	var tc TaskConfigs
	_, _, err := getJSON(ctx, c.s, tasksKey(name), &tc)
	return tc, err
}

// SetTasks replaces a connector's task configs, with the next generation,
// when the connector still exists and fence holds.
func (c *Store) SetTasks(ctx context.Context, name string, tasks []map[string]string, fence Fence) (TaskConfigs, error) {
	for {
		cfg, found, err := c.s.Get(ctx, configKey(name))
		if err != nil {
			return TaskConfigs{}, err
		}
		if !found {
			return TaskConfigs{}, ErrNotFound
		}
		old, _, err := c.s.Get(ctx, tasksKey(name))
		if err != nil {
			return TaskConfigs{}, err
		}
		var prev TaskConfigs
		oldRev := int64(0)
		if old.Key != "" {
			oldRev = old.ModRevision
			if err := json.Unmarshal(old.Value, &prev); err != nil {
				return TaskConfigs{}, fmt.Errorf("connectstore: task configs of %s: %w", name, err)
			}
		}
		next := TaskConfigs{Generation: prev.Generation + 1, Tasks: tasks}
		conds := append([]store.Cond{{Key: configKey(name), ModRevision: cfg.ModRevision}, {Key: tasksKey(name), ModRevision: oldRev}}, fence...)
		_, ok, err := c.s.Batch(ctx, conds, []store.Op{store.Put(tasksKey(name), mustJSON(next))})
		if err != nil {
			return TaskConfigs{}, err
		}
		if ok {
			return next, nil
		}
		if held, err := c.holds(ctx, fence); err != nil {
			return TaskConfigs{}, err
		} else if !held {
			return TaskConfigs{}, ErrFenced
		}
	}
}

// ClearTasks empties the task configs of a stopped connector, as Kafka
// Connect's stop does, when fence holds and the connector's target state is
// STOPPED when the write applies: a target changed since the caller read it
// (resumed, or set by an import's roll-forward along with its task configs)
// leaves them alone. cleared says whether it wrote.
func (c *Store) ClearTasks(ctx context.Context, name string, fence Fence) (cleared bool, err error) {
	for {
		cfg, found, err := c.s.Get(ctx, configKey(name))
		if err != nil || !found {
			return false, err
		}
		target, found, err := c.s.Get(ctx, targetKey(name))
		if err != nil || !found {
			return false, err
		}
		var ts TargetState
		if err := json.Unmarshal(target.Value, &ts); err != nil {
			return false, fmt.Errorf("connectstore: target state of %s: %w", name, err)
		}
		if ts.State != TargetStopped {
			return false, nil
		}
		old, found, err := c.s.Get(ctx, tasksKey(name))
		if err != nil || !found {
			return false, err
		}
		var prev TaskConfigs
		if err := json.Unmarshal(old.Value, &prev); err != nil {
			return false, fmt.Errorf("connectstore: task configs of %s: %w", name, err)
		}
		if len(prev.Tasks) == 0 {
			return false, nil
		}
		next := TaskConfigs{Generation: prev.Generation + 1, Tasks: []map[string]string{}}
		conds := append([]store.Cond{
			{Key: configKey(name), ModRevision: cfg.ModRevision},
			{Key: targetKey(name), ModRevision: target.ModRevision},
			{Key: tasksKey(name), ModRevision: old.ModRevision},
		}, fence...)
		_, ok, err := c.s.Batch(ctx, conds, []store.Op{store.Put(tasksKey(name), mustJSON(next))})
		if err != nil || ok {
			return ok, err
		}
		if held, err := c.holds(ctx, fence); err != nil {
			return false, err
		} else if !held {
			return false, ErrFenced
		}
	}
}

// TaskCounts returns, for every connector, how many task configs it has
// now (0 before the connector produced any, or when stopped). Two scans,
// whatever the number of connectors.
func (c *Store) TaskCounts(ctx context.Context) (map[string]int, error) {
	names, err := c.Connectors(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(names))
	for _, n := range names {
		out[n] = 0
	}
	kvs, _, err := c.s.Scan(ctx, Prefix+"tasks/", 0)
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		name, err := url.PathUnescape(strings.TrimPrefix(kv.Key, Prefix+"tasks/"))
		if _, exists := out[name]; err != nil || !exists {
			continue
		}
		var tc TaskConfigs
		if err := json.Unmarshal(kv.Value, &tc); err != nil {
			return nil, fmt.Errorf("connectstore: task configs of %s: %w", name, err)
		}
		out[name] = len(tc.Tasks)
	}
	return out, nil
}

// Spec is a connector's desired state: its config, target state, task
// configs and restart request, with the revisions a worker compares.
type Spec struct {
	Config    map[string]string
	ConfigRev int64
	Target    string
	Tasks     TaskConfigs
	TasksRev  int64
	Restart   RestartRequest
}

// Specs reads the spec of every connector in four scans instead of four
// reads per connector: what a worker that follows many connectors needs
// after it lost track of the store. The scans are not one snapshot (as
// the single reads are not): a caller that watches from a revision read
// before Specs sees every later change. A connector whose keys hold bad
// JSON is left out, so that its own reads report the error; a connector
// without a config does not exist.
func (c *Store) Specs(ctx context.Context) (map[string]Spec, error) {
	scan := func(kind string, each func(name string, kv store.KV) error) error {
		p := Prefix + kind + "/"
		kvs, _, err := c.s.Scan(ctx, p, 0)
		if err != nil {
			return fmt.Errorf("connectstore: scan %s: %w", p, err)
		}
		for _, kv := range kvs {
			name, err := url.PathUnescape(strings.TrimPrefix(kv.Key, p))
			if err != nil {
				continue
			}
			if err := each(name, kv); err != nil {
				return err
			}
		}
		return nil
	}
	specs := map[string]Spec{}
	bad := map[string]bool{}
	if err := scan("config", func(name string, kv store.KV) error {
		var cc ConnectorConfig
		if json.Unmarshal(kv.Value, &cc) != nil {
			bad[name] = true
			return nil
		}
		specs[name] = Spec{Config: cc.Config, ConfigRev: kv.ModRevision, Target: TargetStarted}
		return nil
	}); err != nil {
		return nil, err
	}
	// update applies fn to a connector the config scan found.
	update := func(fn func(*Spec, store.KV) error) func(string, store.KV) error {
		return func(name string, kv store.KV) error {
			sp, ok := specs[name]
			if !ok {
				return nil // created after the config scan: its watch event reads it
			}
			if fn(&sp, kv) != nil {
				bad[name] = true
				return nil
			}
			specs[name] = sp
			return nil
		}
	}
	if err := scan("target", update(func(sp *Spec, kv store.KV) error {
		var ts TargetState
		err := json.Unmarshal(kv.Value, &ts)
		sp.Target = ts.State
		return err
	})); err != nil {
		return nil, err
	}
	if err := scan("tasks", update(func(sp *Spec, kv store.KV) error {
		sp.TasksRev = kv.ModRevision
		return json.Unmarshal(kv.Value, &sp.Tasks)
	})); err != nil {
		return nil, err
	}
	if err := scan("restart", update(func(sp *Spec, kv store.KV) error {
		return json.Unmarshal(kv.Value, &sp.Restart)
	})); err != nil {
		return nil, err
	}
	for name := range bad {
		delete(specs, name)
	}
	return specs, nil
}
