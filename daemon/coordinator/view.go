package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kcd-project/kcd/store"
)

// The coordinator's state as any node reads it from the store: who owns
// each unit and which workers hold a session. Status reads and the worker
// list use it, so that every node answers from the same records.

// GonePrefix holds a record per worker whose session ended (GoneWorker):
// the worker list shows them, so that a worker that died does not simply
// vanish. The coordinator keeps one while the worker still owns a unit and
// for GoneRetention after it left, at most MaxGone of them.
const GonePrefix = "kcd/workers-gone/"

// Bounds of the gone-worker records.
const (
	GoneRetention = 10 * time.Minute
	MaxGone       = 100
)

// The states of a worker in the worker list.
const (
	WorkerAlive    = "alive"
	WorkerDraining = "draining" // alive, and an operator drained it
	WorkerExpired  = "expired"  // its session expired: it went silent
	WorkerLeft     = "left"     // it ended its session (a clean stop)
)

// GoneWorker is the record of a worker whose session ended.
type GoneWorker struct {
	WorkerInfo
	State string    `json:"state"` // WorkerExpired or WorkerLeft
	At    time.Time `json:"at"`    // when the session ended
}

// UnitOwner is who owns a unit now.
type UnitOwner struct {
	Worker string
	// Alive: the worker holds a session (it has a record under
	// WorkerPrefix). A unit whose owner is not alive runs nowhere.
	Alive bool
}

// Owners reads who owns each unit of connector name (task -1 is the
// connector instance) and whether the owner's session is alive. rev is
// the store revision the owners were read at: a status written after it
// was written by the unit's owner at that time (status writes are fenced
// on the owner key).
func Owners(ctx context.Context, s store.Store, name string) (owners map[int]UnitOwner, rev int64, err error) {
	kvs, rev, err := s.Scan(ctx, ownerPrefix+url.PathEscape(name)+"/", 0)
	if err != nil {
		return nil, 0, fmt.Errorf("read the owners of connector %s: %w", name, err)
	}
	owners = make(map[int]UnitOwner, len(kvs))
	if len(kvs) == 0 {
		return owners, rev, nil
	}
	live, _, err := LiveWorkers(ctx, s)
	if err != nil {
		return nil, 0, err
	}
	for _, kv := range kvs {
		u, isRevoke, ok := ParseUnitKey(kv.Key)
		if !ok || isRevoke || u.Connector != name {
			continue
		}
		var o Owner
		if json.Unmarshal(kv.Value, &o) != nil {
			continue
		}
		_, alive := live[o.Worker]
		owners[u.Task] = UnitOwner{Worker: o.Worker, Alive: alive}
	}
	return owners, rev, nil
}

// LiveWorkers reads the records of the workers that hold a session.
func LiveWorkers(ctx context.Context, s store.Store) (map[string]WorkerInfo, int64, error) {
	kvs, rev, err := s.Scan(ctx, WorkerPrefix, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("read the workers: %w", err)
	}
	out := make(map[string]WorkerInfo, len(kvs))
	for _, kv := range kvs {
		var w WorkerInfo
		if json.Unmarshal(kv.Value, &w) == nil && w.ID != "" {
			out[w.ID] = w
		}
	}
	return out, rev, nil
}

// GoneWorkers reads the records of workers whose session ended.
func GoneWorkers(ctx context.Context, s store.Store) (map[string]GoneWorker, error) {
	kvs, _, err := s.Scan(ctx, GonePrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("read the gone workers: %w", err)
	}
	out := make(map[string]GoneWorker, len(kvs))
	for _, kv := range kvs {
		var g GoneWorker
		if json.Unmarshal(kv.Value, &g) == nil {
			out[strings.TrimPrefix(kv.Key, GonePrefix)] = g
		}
	}
	return out, nil
}

// goneOps keeps the gone-worker records: it writes one for each worker
// whose session ended since the last rebalance, and removes the record of a
// worker that is back, of one that owns no unit and left more than
// GoneRetention ago, and any beyond the newest MaxGone. wkvs are the
// stored worker records.
func (c *Coordinator) goneOps(ctx context.Context, sn *snapshot, wkvs []store.KV, now time.Time) ([]store.Op, error) {
	records, err := GoneWorkers(ctx, c.cfg.Store)
	if err != nil {
		return nil, err
	}
	var ops []store.Op
	for id, state := range sn.gone {
		if sn.infos[id] != nil {
			continue // back already
		}
		info := WorkerInfo{ID: id}
		if g, ok := records[id]; ok {
			info = g.WorkerInfo
		}
		for _, kv := range wkvs {
			if kv.Key == WorkerPrefix+id {
				_ = json.Unmarshal(kv.Value, &info)
			}
		}
		g := GoneWorker{WorkerInfo: info, State: state, At: now}
		b, _ := json.Marshal(g)
		ops = append(ops, store.Put(GonePrefix+id, b))
		records[id] = g
	}
	owning := map[string]bool{}
	for _, o := range sn.owner {
		owning[o.Worker] = true
	}
	var keep []string
	for id, g := range records {
		if sn.infos[id] != nil || (!owning[id] && now.Sub(g.At) > GoneRetention) {
			ops = append(ops, store.Delete(GonePrefix+id))
			continue
		}
		keep = append(keep, id)
	}
	if len(keep) > MaxGone {
		slices.SortFunc(keep, func(a, b string) int { return records[b].At.Compare(records[a].At) })
		for _, id := range keep[MaxGone:] {
			ops = append(ops, store.Delete(GonePrefix+id))
		}
	}
	return ops, nil
}
