package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newImporter(st store.Store) *Importer {
	return New(Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
}

func fileSource(name string) api.ImportConnector {
	return api.ImportConnector{Name: name, Target: "STARTED",
		Config: map[string]string{"connector.class": "FileStreamSource", "file": "/tmp/" + name, "topic": "t-" + name},
		Tasks:  []map[string]string{{"task.class": "FileStreamSourceTask", "file": "/tmp/" + name}}}
}

func sink(name, target string) api.ImportConnector {
	return api.ImportConnector{Name: name, Target: target,
		Config: map[string]string{"connector.class": "org.example.NotInKcd", "topics": "orders"}}
}

func srcOff(conn string, file string, pos int64) api.ImportSourceOffset {
	return api.ImportSourceOffset{Connector: conn, Partition: map[string]any{"filename": file}, Offset: map[string]any{"position": json.Number(fmt.Sprint(pos))}}
}

// keyed is src's offset of partition {"filename":"a"} with key bytes key.
func keyed(key string) api.ImportSourceOffset {
	o := srcOff("src", "a", 1)
	o.Key = key
	return o
}

func kind(err error) error {
	for _, k := range []error{ErrInvalid, ErrConflict, ErrNotFound} {
		if errors.Is(err, k) {
			return k
		}
	}
	return err
}

// keys lists the keys under prefix.
func keys(t *testing.T, st store.Store, prefix string) []string {
	t.Helper()
	kvs, _, err := st.Scan(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}

// stage opens an import of a source "src" (2 tasks' worth of offsets) and
// a sink "snk" of a class kcd does not have, with their offsets.
func stage(t *testing.T, im *Importer) api.Import {
	t.Helper()
	ctx := t.Context()
	got, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{fileSource("src"), sink("snk", "STOPPED"), sink("paused", "PAUSED")}})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != api.ImportStaging || len(got.Items) != 3 {
		t.Fatalf("opened: %+v", got)
	}
	withKey := srcOff("src", "/tmp/b", 7)
	withKey.Key = `["src",{"filename":"/tmp/b"}]` // Kafka Connect's key bytes: kept
	offs := api.ImportOffsets{
		Source: []api.ImportSourceOffset{srcOff("src", "/tmp/a", 5), withKey, srcOff("src", "/tmp/a", 42)}, // a twice: the later counts
		Sink:   []api.ImportSinkOffset{{Connector: "snk", Topic: "orders", Partition: 0, Offset: 10}, {Connector: "snk", Topic: "orders", Partition: 3, Offset: 99}},
	}
	if _, err := im.ImportOffsets(ctx, got.ID, offs); err != nil {
		t.Fatal(err)
	}
	return got
}

// checkImported checks what stage's import makes of the store once done.
func checkImported(t *testing.T, st store.Store) {
	t.Helper()
	ctx := t.Context()
	cs := connectstore.New(st)
	names, _ := cs.Connectors(ctx)
	if !slices.Equal(names, []string{"paused", "snk", "src"}) {
		t.Fatalf("connectors %v", names)
	}
	for name, want := range map[string]string{"src": "STARTED", "snk": "STOPPED", "paused": "PAUSED"} {
		if got, _ := cs.Target(ctx, name); got != want {
			t.Errorf("target of %s: %s, want %s", name, got, want)
		}
	}
	tc, _ := cs.Tasks(ctx, "src")
	if len(tc.Tasks) != 1 || tc.Tasks[0]["task.class"] != "FileStreamSourceTask" || tc.Generation < 1 {
		t.Errorf("tasks of src: %+v", tc)
	}
	if cfg, _, _ := cs.Config(ctx, "snk"); cfg["connector.class"] != "org.example.NotInKcd" {
		t.Errorf("config of snk: %v", cfg)
	}
	for file, want := range map[string]string{"/tmp/a": "42", "/tmp/b": "7"} {
		off, err := cs.SourceOffset(ctx, "src", map[string]any{"filename": file})
		if err != nil || fmt.Sprint(off["position"]) != want {
			t.Errorf("offset of src %s: %v %v, want %s", file, off, err, want)
		}
	}
	so, _ := cs.SourceOffsets(ctx, "src")
	if len(so) != 2 {
		t.Errorf("src has %d offsets: %v", len(so), so)
	}
	for _, o := range so {
		if want := map[any]string{"/tmp/a": "", "/tmp/b": `["src",{"filename":"/tmp/b"}]`}[o.Partition["filename"]]; o.Key != want {
			t.Errorf("key of src %v: %q, want %q", o.Partition, o.Key, want)
		}
	}
	sk, _ := cs.SinkOffsets(ctx, "snk")
	if len(sk) != 2 || sk[0].Offset != 10 || sk[1].Offset != 99 {
		t.Errorf("sink offsets %+v", sk)
	}
	if left := keys(t, st, dataRoot); len(left) > 0 {
		t.Errorf("staging keys left: %v", left)
	}
	if left := keys(t, st, openKey); len(left) > 0 {
		t.Errorf("the import is still open")
	}
}

func TestImportCommit(t *testing.T) {
	st := openStore(t)
	im := newImporter(st)
	cs := connectstore.New(st)
	ctx := t.Context()
	// Stale offsets of an earlier "src", deleted long ago (Kafka Connect
	// keeps them too): the import's offsets replace them.
	if err := cs.PutSourceOffsets(ctx, "src", []connectstore.SourceOffset{{Partition: map[string]any{"filename": "/old"}, Offset: map[string]any{"position": 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	opened := stage(t, im)
	if names, _ := cs.Connectors(ctx); len(names) != 0 {
		t.Fatalf("connectors visible before the commit: %v", names)
	}
	if so, _ := cs.SourceOffsets(ctx, "src"); len(so) != 1 {
		t.Fatalf("offsets visible before the commit: %v", so)
	}
	done, err := im.Commit(ctx, opened.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != api.ImportDone || done.Revision == 0 || done.SourceOffsets != 2 || done.SinkOffsets != 2 {
		t.Fatalf("commit: %+v", done)
	}
	checkImported(t, st)
	// Committing again answers the same.
	if again, err := im.Commit(ctx, opened.ID); err != nil || again.State != api.ImportDone || again.Revision != done.Revision {
		t.Fatalf("second commit: %+v %v", again, err)
	}
	if got, err := im.Get(ctx, opened.ID); err != nil || got.State != api.ImportDone {
		t.Fatalf("get: %+v %v", got, err)
	}
	if list, err := im.List(ctx); err != nil || len(list) != 1 || list[0].ID != opened.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// TestImportRecoveryAfterCommit: the leader stops right after the commit
// batch; the connectors exist, stopped, without their offsets. A new
// leader's importer (Run on the same store) finishes the roll-forward.
func TestImportRecoveryAfterCommit(t *testing.T) {
	st := openStore(t)
	old := newImporter(st)
	cs := connectstore.New(st)
	ctx := t.Context()
	opened := stage(t, old)
	crash := errors.New("leader gone")
	old.afterCommit = func() error { return crash }
	if _, err := old.Commit(ctx, opened.ID); !errors.Is(err, crash) {
		t.Fatalf("commit: %v", err)
	}
	// The commit point passed: every connector exists, stopped, no offsets
	// moved yet.
	names, _ := cs.Connectors(ctx)
	if len(names) != 3 {
		t.Fatalf("after the commit batch: %v", names)
	}
	for _, n := range names {
		if got, _ := cs.Target(ctx, n); got != connectstore.TargetStopped {
			t.Fatalf("target of %s right after the commit: %s", n, got)
		}
	}
	if so, _ := cs.SourceOffsets(ctx, "src"); len(so) != 0 {
		t.Fatalf("offsets moved already: %v", so)
	}
	if j, _ := old.Get(ctx, opened.ID); j.State != api.ImportCommitted {
		t.Fatalf("state %s", j.State)
	}
	// A second import must wait for this one.
	if _, err := old.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{sink("other", "STOPPED")}}); kind(err) != ErrConflict || !strings.Contains(err.Error(), opened.ID) {
		t.Fatalf("second import while one is committed: %v", err)
	}

	// The new leader.
	lead := &fakeLeader{}
	lead.leads.Store(true)
	nu := New(Config{Store: st, Leader: lead, Logger: slog.New(slog.DiscardHandler), RecoverEvery: time.Hour})
	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		nu.Run(rctx)
	}()
	defer func() { cancel(); <-stopped }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := nu.Get(ctx, opened.ID)
		if err == nil && j.State == api.ImportDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new leader did not finish the import: %+v %v", j, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkImported(t, st)
}

// TestImportRollForwardTwice: every step of the roll-forward taken twice,
// by two importers (an old leader that goes on, a new one), takes effect
// once: the source's offsets written by the running connector after the
// first roll-forward are not overwritten by the second.
func TestImportRollForwardTwice(t *testing.T) {
	st := openStore(t)
	a, b := newImporter(st), newImporter(st)
	cs := connectstore.New(st)
	ctx := t.Context()
	opened := stage(t, a)
	a.afterCommit = func() error { return errors.New("stop") }
	_, _ = a.Commit(ctx, opened.ID)
	j, rev, err := a.journal(ctx, opened.ID)
	if err != nil {
		t.Fatal(err)
	}
	conns, _ := a.stagedConns(ctx, opened.ID)
	if _, err := b.rollForward(ctx, j, rev); err != nil {
		t.Fatal(err)
	}
	// The connector runs and moves on.
	if err := cs.PutSourceOffsets(ctx, "src", []connectstore.SourceOffset{{Partition: map[string]any{"filename": "/tmp/a"}, Offset: map[string]any{"position": 500}}}, nil); err != nil {
		t.Fatal(err)
	}
	// The old leader's attempt from what it read before.
	for _, c := range conns {
		if err := a.finish(ctx, opened.ID, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.rollForward(ctx, j, rev); err != nil {
		t.Fatal(err)
	}
	off, _ := cs.SourceOffset(ctx, "src", map[string]any{"filename": "/tmp/a"})
	if fmt.Sprint(off["position"]) != "500" {
		t.Fatalf("a second roll-forward overwrote a newer offset: %v", off)
	}
}

func TestImportAbortLeavesNothing(t *testing.T) {
	st := openStore(t)
	im := newImporter(st)
	ctx := t.Context()
	opened := stage(t, im)
	ab, err := im.Abort(ctx, opened.ID)
	if err != nil || ab.State != api.ImportAborted {
		t.Fatalf("abort: %+v %v", ab, err)
	}
	if left := keys(t, st, connectstore.Prefix); len(left) > 0 {
		t.Fatalf("keys of an aborted import: %v", left)
	}
	if left := keys(t, st, dataRoot); len(left) > 0 {
		t.Fatalf("staging keys left: %v", left)
	}
	if _, err := im.Commit(ctx, opened.ID); kind(err) != ErrConflict {
		t.Fatalf("commit of an aborted import: %v", err)
	}
	if _, err := im.ImportOffsets(ctx, opened.ID, api.ImportOffsets{Source: []api.ImportSourceOffset{srcOff("src", "x", 1)}}); kind(err) != ErrConflict {
		t.Fatalf("offsets of an aborted import: %v", err)
	}
	// The next import opens.
	if _, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{fileSource("src")}}); err != nil {
		t.Fatal(err)
	}
}

// TestImportStaleAborted: a staging import idle for StaleAfter is aborted
// by the recovery (its client went away); an active one is not.
func TestImportStaleAborted(t *testing.T) {
	st := openStore(t)
	now := time.Now()
	im := New(Config{Store: st, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	ctx := t.Context()
	opened := stage(t, im)
	now = now.Add(59 * time.Minute)
	if err := im.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _ := im.Get(ctx, opened.ID); j.State != api.ImportStaging {
		t.Fatalf("aborted too soon: %s", j.State)
	}
	now = now.Add(2 * time.Minute)
	if err := im.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _ := im.Get(ctx, opened.ID); j.State != api.ImportAborted {
		t.Fatalf("stale import: %s", j.State)
	}
	if left := keys(t, st, dataRoot); len(left) > 0 {
		t.Fatalf("staging keys left: %v", left)
	}
	if left := keys(t, st, connectstore.Prefix); len(left) > 0 {
		t.Fatalf("connect keys: %v", left)
	}
}

func TestImportRerunAndExisting(t *testing.T) {
	st := openStore(t)
	im := newImporter(st)
	cs := connectstore.New(st)
	ctx := t.Context()
	opened := stage(t, im)
	if _, err := im.Commit(ctx, opened.ID); err != nil {
		t.Fatal(err)
	}
	before, _, _ := st.Scan(ctx, connectstore.Prefix, 0)

	// The same import again: everything unchanged, nothing written.
	again, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{fileSource("src"), sink("snk", "STOPPED"), sink("paused", "PAUSED")}, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range again.Items {
		if it.Action != api.ImportUnchanged {
			t.Errorf("rerun: %+v", it)
		}
	}
	if _, err := im.ImportOffsets(ctx, again.ID, api.ImportOffsets{Source: []api.ImportSourceOffset{srcOff("src", "/tmp/a", 1)}}); kind(err) != ErrInvalid {
		t.Fatalf("offsets of an unchanged connector: %v", err)
	}
	if _, err := im.Commit(ctx, again.ID); err != nil {
		t.Fatal(err)
	}
	after, _, _ := st.Scan(ctx, connectstore.Prefix, 0)
	if !slices.EqualFunc(before, after, func(a, b store.KV) bool { return a.Key == b.Key && a.ModRevision == b.ModRevision }) {
		t.Fatalf("a rerun changed connect/ keys")
	}

	// Another config, no overwrite: exists, left alone.
	changed := sink("snk", "STOPPED")
	changed.Config = map[string]string{"connector.class": "org.example.NotInKcd", "topics": "other"}
	dry, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{changed}, DryRun: true})
	if err != nil || dry.ID != "" || dry.Items[0].Action != api.ImportExists {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if left := keys(t, st, openKey); len(left) > 0 {
		t.Fatalf("a dry run opened an import")
	}
	ex, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{changed}})
	if err != nil || ex.Items[0].Action != api.ImportExists {
		t.Fatalf("exists: %+v %v", ex, err)
	}
	if _, err := im.Commit(ctx, ex.ID); err != nil {
		t.Fatal(err)
	}
	if cfg, _, _ := cs.Config(ctx, "snk"); cfg["topics"] != "orders" {
		t.Fatalf("an existing connector was changed: %v", cfg)
	}

	// Overwrite of a running connector: blocked, 409, nothing opened.
	running := fileSource("src")
	running.Config = map[string]string{"connector.class": "FileStreamSource", "file": "/tmp/new", "topic": "t"}
	_, err = im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{running}, Overwrite: true})
	if kind(err) != ErrConflict || !strings.Contains(err.Error(), "src") || !strings.Contains(err.Error(), "/connectors/<name>/stop") {
		t.Fatalf("overwrite of a running connector: %v", err)
	}
	if dry, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{running}, Overwrite: true, DryRun: true}); err != nil || dry.Items[0].Action != api.ImportBlocked {
		t.Fatalf("dry run of a blocked overwrite: %+v %v", dry, err)
	}

	// Overwrite of a stopped connector: replaced, stale offsets gone.
	if err := cs.SetTarget(ctx, "src", connectstore.TargetStopped); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.SetTasks(ctx, "src", []map[string]string{}, nil); err != nil {
		t.Fatal(err)
	}
	ow, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{running}, Overwrite: true})
	if err != nil || ow.Items[0].Action != api.ImportOverwrite {
		t.Fatalf("overwrite: %+v %v", ow, err)
	}
	if _, err := im.ImportOffsets(ctx, ow.ID, api.ImportOffsets{Source: []api.ImportSourceOffset{srcOff("src", "/tmp/new", 3)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := im.Commit(ctx, ow.ID); err != nil {
		t.Fatal(err)
	}
	if cfg, _, _ := cs.Config(ctx, "src"); cfg["file"] != "/tmp/new" {
		t.Fatalf("not replaced: %v", cfg)
	}
	so, _ := cs.SourceOffsets(ctx, "src")
	if len(so) != 1 || so[0].Partition["filename"] != "/tmp/new" {
		t.Fatalf("offsets after the overwrite: %v", so)
	}
	tc, _ := cs.Tasks(ctx, "src")
	if tc.Generation < 3 || len(tc.Tasks) != 1 {
		t.Fatalf("tasks after the overwrite: %+v", tc)
	}
}

// TestImportCommitConflicts: a connector created under an imported name
// while the import stages, or an overwritten one started meanwhile: the
// commit answers 409 and changes nothing.
func TestImportCommitConflicts(t *testing.T) {
	st := openStore(t)
	im := newImporter(st)
	cs := connectstore.New(st)
	ctx := t.Context()
	opened := stage(t, im)
	if _, err := cs.CreateConnector(ctx, "snk", map[string]string{"connector.class": "X"}, connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	before, _, _ := st.Scan(ctx, connectstore.Prefix, 0)
	_, err := im.Commit(ctx, opened.ID)
	if kind(err) != ErrConflict || !strings.Contains(err.Error(), "snk") {
		t.Fatalf("commit: %v", err)
	}
	after, _, _ := st.Scan(ctx, connectstore.Prefix, 0)
	if len(before) != len(after) {
		t.Fatalf("a refused commit changed connect/: %d → %d keys", len(before), len(after))
	}
	if _, err := im.Abort(ctx, opened.ID); err != nil {
		t.Fatal(err)
	}

	// Overwrite, then the connector is started before the commit.
	if err := cs.SetTarget(ctx, "snk", connectstore.TargetStopped); err != nil {
		t.Fatal(err)
	}
	ow, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{sink("snk", "STARTED")}, Overwrite: true})
	if err != nil || ow.Items[0].Action != api.ImportOverwrite {
		t.Fatalf("overwrite: %+v %v", ow, err)
	}
	if err := cs.SetTarget(ctx, "snk", connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if _, err := im.Commit(ctx, ow.ID); kind(err) != ErrConflict || !strings.Contains(err.Error(), "no longer stopped") {
		t.Fatalf("commit after a start: %v", err)
	}
	if cfg, _, _ := cs.Config(ctx, "snk"); cfg["connector.class"] != "X" {
		t.Fatalf("replaced anyway: %v", cfg)
	}
}

func TestImportBadInput(t *testing.T) {
	st := openStore(t)
	im := newImporter(st)
	ctx := t.Context()
	many := make([]api.ImportConnector, api.MaxImportConnectors+1)
	for i := range many {
		many[i] = sink(fmt.Sprintf("c%d", i), "STOPPED")
	}
	noClass := sink("x", "STOPPED")
	noClass.Config = map[string]string{"topics": "a"}
	for what, req := range map[string]api.ImportRequest{
		"none":        {},
		"too many":    {Connectors: many},
		"slash":       {Connectors: []api.ImportConnector{sink("a/b", "STOPPED")}},
		"empty name":  {Connectors: []api.ImportConnector{sink("", "STOPPED")}},
		"dot-dot":     {Connectors: []api.ImportConnector{sink("..", "STOPPED")}},
		"long name":   {Connectors: []api.ImportConnector{sink(strings.Repeat("n", connectstore.MaxNameBytes+1), "STOPPED")}},
		"twice":       {Connectors: []api.ImportConnector{sink("a", "STOPPED"), sink("a", "STOPPED")}},
		"bad target":  {Connectors: []api.ImportConnector{sink("a", "RUNNING")}},
		"no class":    {Connectors: []api.ImportConnector{noClass}},
		"no config":   {Connectors: []api.ImportConnector{{Name: "a", Target: "STOPPED"}}},
		"huge config": {Connectors: []api.ImportConnector{{Name: "a", Target: "STOPPED", Config: map[string]string{"connector.class": "X", "big": strings.Repeat("x", store.MaxValueSize)}}}},
	} {
		if _, err := im.Import(ctx, req); kind(err) != ErrInvalid {
			t.Errorf("%s: %v", what, err)
		}
	}
	if left := keys(t, st, prefix); len(left) > 0 {
		t.Fatalf("refused imports left keys: %v", left)
	}
	opened := stage(t, im)
	if _, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{sink("other", "STOPPED")}}); kind(err) != ErrConflict || !strings.Contains(err.Error(), opened.ID) {
		t.Fatalf("second import: %v", err)
	}
	tooMany := api.ImportOffsets{Sink: make([]api.ImportSinkOffset, api.MaxImportOffsets+1)}
	for i := range tooMany.Sink {
		tooMany.Sink[i] = api.ImportSinkOffset{Connector: "snk", Topic: "t", Partition: int32(i)}
	}
	for what, offs := range map[string]api.ImportOffsets{
		"too many":                 tooMany,
		"unknown conn":             {Sink: []api.ImportSinkOffset{{Connector: "nope", Topic: "t"}}},
		"negative part":            {Sink: []api.ImportSinkOffset{{Connector: "snk", Topic: "t", Partition: -1}}},
		"negative offset":          {Sink: []api.ImportSinkOffset{{Connector: "snk", Topic: "t", Offset: -1}}},
		"no topic":                 {Sink: []api.ImportSinkOffset{{Connector: "snk"}}},
		"nested offset":            {Source: []api.ImportSourceOffset{{Connector: "src", Partition: map[string]any{"f": "a"}, Offset: map[string]any{"p": map[string]any{"x": 1}}}}},
		"array partition":          {Source: []api.ImportSourceOffset{{Connector: "src", Partition: map[string]any{"f": []any{1}}, Offset: map[string]any{"p": 1}}}},
		"null partition":           {Source: []api.ImportSourceOffset{{Connector: "src", Offset: map[string]any{"p": 1}}}},
		"null offset":              {Source: []api.ImportSourceOffset{{Connector: "src", Partition: map[string]any{"f": "a"}}}},
		"huge topic":               {Sink: []api.ImportSinkOffset{{Connector: "snk", Topic: strings.Repeat("é", 400)}}},
		"key of another":           {Source: []api.ImportSourceOffset{keyed(`["other",{"filename":"a"}]`)}},
		"key of another partition": {Source: []api.ImportSourceOffset{keyed(`["src",{"filename":"b"}]`)}},
		"key not JSON":             {Source: []api.ImportSourceOffset{keyed(`["src",{"filename":"a"}]]`)}},
		"huge key":                 {Source: []api.ImportSourceOffset{keyed(`["src",{"filename":"a"}]` + strings.Repeat(" ", api.MaxSourceOffsetKey))}},
	} {
		if _, err := im.ImportOffsets(ctx, opened.ID, offs); kind(err) != ErrInvalid {
			t.Errorf("offsets %s: %v", what, err)
		}
	}
	for _, id := range []string{"nope", "", "a/b"} {
		if _, err := im.ImportOffsets(ctx, id, api.ImportOffsets{}); kind(err) != ErrNotFound {
			t.Errorf("offsets of import %q: %v", id, err)
		}
		if _, err := im.Commit(ctx, id); kind(err) != ErrNotFound {
			t.Errorf("commit of import %q: %v", id, err)
		}
		if _, err := im.Abort(ctx, id); kind(err) != ErrNotFound {
			t.Errorf("abort of import %q: %v", id, err)
		}
	}
	// Refused offsets left the import as it was.
	if j, _ := im.Get(ctx, opened.ID); j.SourceOffsets != 2 || j.SinkOffsets != 2 {
		t.Fatalf("counts after refused requests: %+v", j)
	}
}

// TestImportMaxConnectors: the largest import commits in one batch.
func TestImportMaxConnectors(t *testing.T) {
	if testing.Short() {
		t.Skip("writes thousands of keys")
	}
	st := openStore(t)
	im := newImporter(st)
	ctx := t.Context()
	conns := make([]api.ImportConnector, api.MaxImportConnectors)
	for i := range conns {
		conns[i] = sink(fmt.Sprintf("c%04d", i), "STOPPED")
	}
	opened, err := im.Import(ctx, api.ImportRequest{Connectors: conns})
	if err != nil {
		t.Fatal(err)
	}
	offs := api.ImportOffsets{}
	for i := range api.MaxImportOffsets {
		offs.Sink = append(offs.Sink, api.ImportSinkOffset{Connector: conns[i%len(conns)].Name, Topic: "t", Partition: int32(i), Offset: int64(i)})
	}
	if _, err := im.ImportOffsets(ctx, opened.ID, offs); err != nil {
		t.Fatal(err)
	}
	done, err := im.Commit(ctx, opened.ID)
	if err != nil || done.State != api.ImportDone {
		t.Fatalf("%+v %v", done, err)
	}
	names, _ := connectstore.New(st).Connectors(ctx)
	if len(names) != api.MaxImportConnectors {
		t.Fatalf("%d connectors", len(names))
	}
}

func TestExportPages(t *testing.T) {
	st := openStore(t)
	im := newImporter(st)
	ctx := t.Context()
	opened := stage(t, im)
	if _, err := im.Commit(ctx, opened.ID); err != nil {
		t.Fatal(err)
	}
	cs := connectstore.New(st)
	var seen []string
	after := ""
	for page := 0; ; page++ {
		got, next, rev, err := cs.Export(ctx, after, 2)
		if err != nil || rev == 0 {
			t.Fatal(err)
		}
		for _, c := range got {
			seen = append(seen, c.Name)
			switch c.Name {
			case "src":
				if len(c.Source) != 2 || c.Target != "STARTED" || len(c.Tasks) != 1 {
					t.Errorf("src: %+v", c)
				}
			case "snk":
				if len(c.Sink) != 2 || c.Target != "STOPPED" || c.Config["topics"] != "orders" {
					t.Errorf("snk: %+v", c)
				}
			}
		}
		if next == "" {
			break
		}
		after = next
		if page > 3 {
			t.Fatal("pages do not end")
		}
	}
	if !slices.Equal(seen, []string{"paused", "snk", "src"}) {
		t.Fatalf("exported %v", seen)
	}
}

type fakeLeader struct{ leads atomic.Bool }

func (f *fakeLeader) IsLeader() bool { return f.leads.Load() }
func (f *fakeLeader) Term() uint64   { return 1 }

// Through a store sealed with a key (--config-encryption-key-file), the
// staged connectors and the imported configs and task configs are stored
// encrypted, and the import reads them back as they were.
func TestImportCommitSealed(t *testing.T) {
	raw := openStore(t)
	k, err := connectstore.ParseKeyring([]byte(strings.Repeat("ab", 32)))
	if err != nil {
		t.Fatal(err)
	}
	st := connectstore.Seal(raw, k)
	im := newImporter(st)
	ctx := t.Context()
	const secret = "kcd-canary-secret-import-sealed"
	src := fileSource("src")
	src.Config["connection.password"] = secret
	src.Tasks[0]["connection.password"] = secret
	opened, err := im.Import(ctx, api.ImportRequest{Connectors: []api.ImportConnector{src}})
	if err != nil {
		t.Fatal(err)
	}
	plain := func(when string) {
		t.Helper()
		kvs, _, err := raw.Scan(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			if strings.Contains(string(kv.Value), secret) {
				t.Errorf("%s: %s holds the secret in plain text", when, kv.Key)
			}
		}
	}
	plain("staged")
	if _, err := im.Commit(ctx, opened.ID); err != nil {
		t.Fatal(err)
	}
	plain("imported")
	cs := connectstore.New(st)
	cfg, _, err := cs.Config(ctx, "src")
	if err != nil || cfg["connection.password"] != secret {
		t.Fatalf("imported config: %v", err)
	}
	tc, err := cs.Tasks(ctx, "src")
	if err != nil || len(tc.Tasks) != 1 || tc.Tasks[0]["connection.password"] != secret {
		t.Fatalf("imported task configs: %v", err)
	}
}
