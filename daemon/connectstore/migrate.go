package connectstore

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/kcd-project/kcd/store"
)

// The writes of an import (daemon/importer), built here so that the key
// layout stays private to this package: the importer puts these ops in its
// own batches, with these conditions.

// ConfigCond is the condition that a connector's config is at revision rev
// (0: that the connector does not exist).
func ConfigCond(name string, rev int64) store.Cond {
	return store.Cond{Key: configKey(name), ModRevision: rev}
}

// TasksCond is the condition that a connector's task configs are at
// revision rev (0: that it has none stored).
func TasksCond(name string, rev int64) store.Cond {
	return store.Cond{Key: tasksKey(name), ModRevision: rev}
}

// ConfigOp sets a connector's config.
func ConfigOp(name string, config map[string]string) store.Op {
	return store.Put(configKey(name), mustJSON(ConnectorConfig{Config: config}))
}

// TargetOp sets a connector's target state.
func TargetOp(name, state string) store.Op {
	return store.Put(targetKey(name), mustJSON(TargetState{State: state}))
}

// TasksOp sets a connector's task configs.
func TasksOp(name string, tc TaskConfigs) store.Op {
	return store.Put(tasksKey(name), mustJSON(tc))
}

// SourceOffsetOp stores one source partition's offset.
func SourceOffsetOp(name string, o SourceOffset) (store.Op, error) {
	key, err := partitionKey(name, o.Partition)
	if err != nil {
		return store.Op{}, err
	}
	b, err := json.Marshal(o)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(key, b), nil
}

// SinkOffsetOp stores the next offset to read of one topic-partition.
func SinkOffsetOp(name string, o SinkOffset) store.Op {
	return store.Put(sinkOffsetKey(name, o.Topic, o.Partition), mustJSON(o))
}

// TasksAt returns a connector's task configs and the revision they were
// written at (0: none stored).
func (c *Store) TasksAt(ctx context.Context, name string) (TaskConfigs, int64, error) {
	var tc TaskConfigs
	_, rev, err := getJSON(ctx, c.s, tasksKey(name), &tc)
	return tc, rev, err
}

// ConfigAt is a connector's config and the revision it was written at.
type ConfigAt struct {
	Config map[string]string
	Rev    int64
}

// Configs reads every connector's config, in one scan.
func (c *Store) Configs(ctx context.Context) (map[string]ConfigAt, error) {
	kvs, _, err := c.s.Scan(ctx, Prefix+"config/", 0)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ConfigAt, len(kvs))
	for _, kv := range kvs {
		name, err := url.PathUnescape(strings.TrimPrefix(kv.Key, Prefix+"config/"))
		if err != nil {
			continue
		}
		var cc ConnectorConfig
		if err := json.Unmarshal(kv.Value, &cc); err != nil {
			return nil, err
		}
		out[name] = ConfigAt{Config: cc.Config, Rev: kv.ModRevision}
	}
	return out, nil
}

// Stopped tells whether a connector's offsets may change: its target
// state is STOPPED, it has no task configs, and no task reports running
// (the rule of PUT /connectors/{name}/offsets).
func (c *Store) Stopped(ctx context.Context, name string) (bool, error) {
	target, err := c.Target(ctx, name)
	if err != nil {
		return false, err
	}
	tasks, err := c.Tasks(ctx, name)
	if err != nil {
		return false, err
	}
	st, err := c.Statuses(ctx, name)
	if err != nil {
		return false, err
	}
	for _, t := range st.Tasks {
		switch t.State {
		case StateRunning, StatePaused, StateRestarting:
			return false, nil
		}
	}
	return target == TargetStopped && len(tasks.Tasks) == 0, nil
}

// OffsetKeys lists the keys of a connector's stored offsets, source and
// sink, for DeleteKeys.
func (c *Store) OffsetKeys(ctx context.Context, name string) ([]string, error) {
	var out []string
	for _, prefix := range []string{offsetPrefix(name), sinkOffsetPrefix(name)} {
		kvs, _, err := c.s.Scan(ctx, prefix, 0)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			out = append(out, kv.Key)
		}
	}
	return out, nil
}

// DeleteKeys removes keys (from OffsetKeys), store.MaxBatchOps at a time.
func (c *Store) DeleteKeys(ctx context.Context, keys []string) error { return c.deleteKeys(ctx, keys) }

// RemoveLeftovers removes what a connector of that name left behind when
// no connector of that name exists (statuses of a delete cut short), as
// CreateConnector does before it creates one.
func (c *Store) RemoveLeftovers(ctx context.Context, name string) error {
	left, _, err := c.s.Scan(ctx, statusPrefix(name), 1)
	if err != nil || len(left) == 0 {
		return err
	}
	if _, found, err := c.s.Get(ctx, configKey(name)); err != nil || found {
		return err
	}
	return c.removeStatuses(ctx, name)
}

// Exported is one connector as an export gives it.
type Exported struct {
	Name   string
	Config map[string]string
	Target string
	Tasks  []map[string]string
	Source []SourceOffset
	Sink   []SinkOffset
}

// Export reads the connectors after name after, in name order, at most
// limit of them, with their target states, current task configs and
// offsets, all at one revision (one scan of Prefix). next is the last
// name returned when more follow.
func (c *Store) Export(ctx context.Context, after string, limit int) (out []Exported, next string, rev int64, err error) {
	kvs, rev, err := c.s.Scan(ctx, Prefix, 0)
	if err != nil {
		return nil, "", 0, err
	}
	byEsc := map[string]*Exported{}
	var names []string
	for _, kv := range kvs {
		escaped, ok := strings.CutPrefix(kv.Key, Prefix+"config/")
		if !ok {
			continue
		}
		name, err := url.PathUnescape(escaped)
		if err != nil || name <= after {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) > limit {
		names = names[:limit]
		next = names[limit-1]
	}
	out = make([]Exported, len(names))
	for i, name := range names {
		out[i] = Exported{Name: name, Target: TargetStarted, Tasks: []map[string]string{}}
		byEsc[esc(name)] = &out[i]
	}
	for _, kv := range kvs {
		section, rest, _ := strings.Cut(strings.TrimPrefix(kv.Key, Prefix), "/")
		escName, _, _ := strings.Cut(rest, "/")
		e := byEsc[escName]
		if e == nil {
			continue
		}
		switch {
		case section == "config" && rest == escName:
			var cc ConnectorConfig
			if err := json.Unmarshal(kv.Value, &cc); err != nil {
				return nil, "", 0, err
			}
			e.Config = cc.Config
		case section == "target" && rest == escName:
			var ts TargetState
			if err := json.Unmarshal(kv.Value, &ts); err != nil {
				return nil, "", 0, err
			}
			e.Target = ts.State
		case section == "tasks" && rest == escName:
			var tc TaskConfigs
			if err := json.Unmarshal(kv.Value, &tc); err != nil {
				return nil, "", 0, err
			}
			if tc.Tasks != nil {
				e.Tasks = tc.Tasks
			}
		case section == "offset":
			var so SourceOffset
			if err := decodeNumbers(kv.Value, &so); err != nil {
				return nil, "", 0, err
			}
			e.Source = append(e.Source, so)
		case section == "sinkoffset":
			var so SinkOffset
			if err := json.Unmarshal(kv.Value, &so); err != nil {
				return nil, "", 0, err
			}
			e.Sink = append(e.Sink, so)
		}
	}
	return out, next, rev, nil
}
