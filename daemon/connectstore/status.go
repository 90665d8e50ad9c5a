package connectstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/store"
)

// Statuses is a connector's reported status and its tasks'.
type Statuses struct {
	Connector *Status // nil when none was reported
	Tasks     map[int]Status
}

// PutConnectorStatus records a connector's status, under fence.
func (c *Store) PutConnectorStatus(ctx context.Context, name string, st Status, fence Fence) error {
	return c.fencedBatch(ctx, fence, []store.Op{store.Put(connStatusKey(name), mustJSON(st))})
}

// PutTaskStatus records a task's status, under fence.
func (c *Store) PutTaskStatus(ctx context.Context, name string, id int, st Status, fence Fence) error {
	return c.fencedBatch(ctx, fence, []store.Op{store.Put(taskStatusKey(name, id), mustJSON(st))})
}

// DeleteTaskStatuses removes the statuses of tasks with an id ≥ from (the
// connector now has fewer tasks).
func (c *Store) DeleteTaskStatuses(ctx context.Context, name string, from int) error {
	st, err := c.Statuses(ctx, name)
	if err != nil {
		return err
	}
	var keys []string
	for id := range st.Tasks {
		if id >= from {
			keys = append(keys, taskStatusKey(name, id))
		}
	}
	return c.deleteKeys(ctx, keys)
}

// Statuses reads a connector's status and its tasks'.
func (c *Store) Statuses(ctx context.Context, name string) (Statuses, error) {
	kvs, _, err := c.s.Scan(ctx, statusPrefix(name), 0)
	if err != nil {
		return Statuses{}, err
	}
	out := Statuses{Tasks: map[int]Status{}}
	for _, kv := range kvs {
		var st Status
		if err := json.Unmarshal(kv.Value, &st); err != nil {
			return Statuses{}, fmt.Errorf("connectstore: %s holds bad JSON: %w", kv.Key, err)
		}
		st.ModRevision = kv.ModRevision
		rest := strings.TrimPrefix(kv.Key, statusPrefix(name))
		if rest == "connector" {
			out.Connector = &st
			continue
		}
		if id, err := strconv.Atoi(strings.TrimPrefix(rest, "task/")); err == nil {
			out.Tasks[id] = st
		}
	}
	return out, nil
}

// TaskIDs returns the task ids of st in order.
func (st Statuses) TaskIDs() []int {
	ids := make([]int, 0, len(st.Tasks))
	for id := range st.Tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// RequestRestart records a restart request for the workers; each request
// gets a new sequence number so that repeated requests are all seen.
func (c *Store) RequestRestart(ctx context.Context, name string, req RestartRequest) error {
	for {
		var prev RestartRequest
		kv, found, err := c.s.Get(ctx, restartKey(name))
		if err != nil {
			return err
		}
		rev := int64(0)
		if found {
			rev = kv.ModRevision
			_ = json.Unmarshal(kv.Value, &prev)
		}
		req.Seq = prev.Seq + 1
		_, ok, err := c.s.CompareAndSet(ctx, restartKey(name), rev, mustJSON(req))
		if err != nil || ok {
			return err
		}
	}
}

// Restart returns the latest restart request of a connector (Seq 0: none).
func (c *Store) Restart(ctx context.Context, name string) (RestartRequest, error) {
	var r RestartRequest
	_, _, err := getJSON(ctx, c.s, restartKey(name), &r)
	return r, err
}
