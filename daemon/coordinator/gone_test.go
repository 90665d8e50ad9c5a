package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

// The gone-worker records stay bounded: one per departed worker, gone when
// the worker is back, or once it owns nothing and left more than
// GoneRetention ago, and never more than MaxGone.
func TestGoneWorkerRecordsStayBounded(t *testing.T) {
	ctx := context.Background()
	s, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := New(Config{Store: s, Raft: noRaft{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	put := func(key string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		if _, err := s.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-GoneRetention - time.Minute)
	put(GonePrefix+"owner", GoneWorker{WorkerInfo: WorkerInfo{ID: "owner"}, State: WorkerExpired, At: old})
	put(GonePrefix+"idle", GoneWorker{WorkerInfo: WorkerInfo{ID: "idle"}, State: WorkerLeft, At: old})
	put(GonePrefix+"recent", GoneWorker{WorkerInfo: WorkerInfo{ID: "recent"}, State: WorkerLeft, At: now.Add(-time.Minute)})
	put(GonePrefix+"back", GoneWorker{WorkerInfo: WorkerInfo{ID: "back"}, State: WorkerExpired, At: now.Add(-time.Minute)})
	put(WorkerPrefix+"new", WorkerInfo{ID: "new", RESTURL: "http://new:8083", NodeID: 7})
	wkvs, _, err := s.Scan(ctx, WorkerPrefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	sn := &snapshot{
		infos: map[string]*session{"back": {info: WorkerInfo{ID: "back"}}},
		gone:  map[string]string{"new": WorkerExpired},
		owner: map[Unit]Owner{{Connector: "c", Task: 0}: {Worker: "owner"}},
	}
	apply := func() map[string]GoneWorker {
		t.Helper()
		ops, err := c.goneOps(ctx, sn, wkvs, now)
		if err != nil {
			t.Fatal(err)
		}
		for len(ops) > 0 {
			n := min(len(ops), store.MaxBatchOps)
			if _, _, err := s.Batch(ctx, nil, ops[:n]); err != nil {
				t.Fatal(err)
			}
			ops = ops[n:]
		}
		gone, err := GoneWorkers(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return gone
	}
	gone := apply()
	if ids := slices.Sorted(maps.Keys(gone)); !slices.Equal(ids, []string{"new", "owner", "recent"}) {
		t.Errorf("records %v, want new, owner (still owns a unit) and recent", ids)
	}
	if g := gone["new"]; g.State != WorkerExpired || !g.At.Equal(now) || g.RESTURL != "http://new:8083" || g.NodeID != 7 {
		t.Errorf("record of the worker just gone: %+v", g)
	}

	// Many departures at once: the newest MaxGone stay.
	sn.gone = map[string]string{}
	for i := range MaxGone + 5 {
		put(fmt.Sprintf("%sw%03d", GonePrefix, i), GoneWorker{State: WorkerExpired, At: now.Add(time.Duration(i) * time.Millisecond)})
	}
	gone = apply()
	if len(gone) != MaxGone {
		t.Fatalf("%d records, want %d", len(gone), MaxGone)
	}
	for _, id := range []string{"new", "owner", "recent", "w000", "w004"} {
		if _, ok := gone[id]; ok {
			t.Errorf("%s kept, although %d newer records are", id, MaxGone)
		}
	}
	if _, ok := gone["w005"]; !ok {
		t.Errorf("w005, the %dth newest, was removed", MaxGone)
	}
}

type noRaft struct{}

func (noRaft) ID() uint64                                 { return 1 }
func (noRaft) IsLeader() bool                             { return false }
func (noRaft) Term() uint64                               { return 1 }
func (noRaft) LinearizableRead(ctx context.Context) error { return nil }
