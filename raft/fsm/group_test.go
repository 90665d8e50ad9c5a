package fsm_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

// A group entry applies like its commands in entries of their own: the same
// keys, values and revisions, one result per command, in order, each with
// its id.
func TestGroupAppliesLikeSeparateEntries(t *testing.T) {
	log, grouped := commandsAndGroups(t, 5, 300, 7)
	dir := t.TempDir()
	sep := openFSM(t, filepath.Join(dir, "sep.db"), fsm.Options{})
	sepRes := mustApply(t, sep, log)
	grp := openFSM(t, filepath.Join(dir, "grp.db"), fsm.Options{})
	grpRes := mustApply(t, grp, grouped)

	if len(grpRes) != len(sepRes) {
		t.Fatalf("%d results from groups, %d from separate entries", len(grpRes), len(sepRes))
	}
	for i := range sepRes {
		a, b := sepRes[i], grpRes[i]
		if a.ID != b.ID || a.Rev != b.Rev || a.OK != b.OK || a.Deleted != b.Deleted || (a.Err == nil) != (b.Err == nil) {
			t.Fatalf("result %d: separate %+v, grouped %+v", i, a, b)
		}
	}
	sepKV, sepRev, _ := sep.Scan("", 0)
	grpKV, grpRev, _ := grp.Scan("", 0)
	if sepRev != grpRev || fmt.Sprint(sepKV) != fmt.Sprint(grpKV) {
		t.Fatalf("state differs: revision %d vs %d", sepRev, grpRev)
	}
}

// A command repeated inside a group, or in a later group, is applied once.
func TestGroupDeduplicates(t *testing.T) {
	f := openFSM(t, "", fsm.Options{})
	a := mustEncode(t, fsm.Command{ID: 1, Kind: fsm.KindPut, Key: "k", Value: []byte("a")})
	b := mustEncode(t, fsm.Command{ID: 2, Kind: fsm.KindPut, Key: "k", Value: []byte("b")})
	res := mustApply(t, f, []fsm.Entry{
		{Index: 1, Term: 1, Data: fsm.AppendGroup(nil, [][]byte{a, b, a})},
		{Index: 2, Term: 1, Data: fsm.AppendGroup(nil, [][]byte{b, a})},
	})
	if len(res) != 5 {
		t.Fatalf("%d results, want 5", len(res))
	}
	kv, _, _ := f.Get("k")
	if string(kv.Value) != "b" || kv.ModRevision != 2 {
		t.Fatalf("k = %q at revision %d, want b at 2", kv.Value, kv.ModRevision)
	}
	for i, want := range []int64{1, 2, 1, 2, 1} {
		if res[i].Rev != want {
			t.Errorf("result %d at revision %d, want %d (the first result of its id)", i, res[i].Rev, want)
		}
	}
}

// A malformed group changes nothing, even where its first commands are
// well formed, and is reported like a malformed command.
func TestMalformedGroupChangesNothing(t *testing.T) {
	f := openFSM(t, "", fsm.Options{})
	a := mustEncode(t, fsm.Command{ID: 1, Kind: fsm.KindPut, Key: "k", Value: []byte("a")})
	good := fsm.AppendGroup(nil, [][]byte{a, a})
	for i, data := range [][]byte{
		good[:len(good)-1],                    // cut short
		append(good[:len(good):len(good)], 0), // trailing byte
		{0x80, 0xff, 0xff, 0xff, 0x0f},        // a count larger than the input
	} {
		res := mustApply(t, f, []fsm.Entry{{Index: uint64(i + 1), Term: 1, Data: data}})
		if len(res) != 1 || !errors.Is(res[0].Err, store.ErrInvalid) {
			t.Fatalf("malformed group %d: results %+v, want one invalid", i, res)
		}
		if _, found, _ := f.Get("k"); found {
			t.Fatalf("malformed group %d applied a command", i)
		}
	}
}

// commandsAndGroups returns the commands of a random log (no empty
// entries), an entry each, and the same commands in groups of 1 to max per
// entry.
func commandsAndGroups(t *testing.T, seed uint64, n, max int) (log, grouped []fsm.Entry) {
	t.Helper()
	for _, e := range randomLog(t, seed, n) {
		if len(e.Data) > 0 {
			e.Index = uint64(len(log) + 1)
			log = append(log, e)
		}
	}
	for i := 0; i < len(log); {
		n := min(1+i%max, len(log)-i)
		cmds := make([][]byte, 0, n)
		for _, e := range log[i : i+n] {
			cmds = append(cmds, e.Data)
		}
		data := fsm.AppendGroup(nil, cmds)
		if len(data) != fsm.GroupSize(cmds) {
			t.Fatalf("GroupSize %d, encoded %d bytes", fsm.GroupSize(cmds), len(data))
		}
		grouped = append(grouped, fsm.Entry{Index: uint64(len(grouped) + 1), Term: 1, Data: data})
		i += n
	}
	return log, grouped
}

// history returns, as text, the events a watch from afterRev delivers up
// to a marker put applied at index, which it applies.
func history(t *testing.T, f *fsm.FSM, afterRev int64, index uint64) (string, error) {
	t.Helper()
	w, err := f.Watch(t.Context(), "", afterRev)
	if err != nil {
		return "", err
	}
	defer w.Close()
	data, err := fsm.EncodeCommand(put("marker", fmt.Sprint(afterRev)))
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, f, []fsm.Entry{{Index: index, Term: 1, Data: data}})
	var b strings.Builder
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch from %d ended: %v", afterRev, w.Err())
			}
			if ev.KV.Key == "marker" {
				return b.String(), nil
			}
			fmt.Fprintf(&b, "%d %d %s=%q (%d)\n", ev.KV.ModRevision, ev.Type, ev.KV.Key, ev.KV.Value, ev.KV.CreateRevision)
		case <-timeout:
			t.Fatalf("watch from %d: no marker after 10s", afterRev)
		}
	}
}

// History kept per entry of a group reads back, from any revision, as the
// history of the same commands in entries of their own does, and is
// trimmed alike: a watch may start anywhere inside a group's revisions.
func TestGroupHistoryLikeSeparateEntries(t *testing.T) {
	log, grouped := commandsAndGroups(t, 11, 600, 9)
	dir := t.TempDir()
	opts := fsm.Options{HistoryRetain: 60}
	sep := openFSM(t, filepath.Join(dir, "sep.db"), opts)
	mustApply(t, sep, log)
	grp := openFSM(t, filepath.Join(dir, "grp.db"), opts)
	mustApply(t, grp, grouped)
	rev, _ := sep.Revision()
	if grev, _ := grp.Revision(); grev != rev || rev < 200 {
		t.Fatalf("revision %d after separate entries, %d after groups", rev, grev)
	}
	sepNext, grpNext := uint64(len(log)+1), uint64(len(grouped)+1)
	compactedSeen := false
	for after := rev - 70; after <= rev; after++ {
		// Each watch adds a marker revision to both; the ones before the
		// first marker are the commands'.
		want, wantErr := history(t, sep, after, sepNext)
		got, gotErr := history(t, grp, after, grpNext)
		if wantErr == nil {
			sepNext++
		}
		if gotErr == nil {
			grpNext++
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("watch from %d: %v after separate entries, %v after groups", after, wantErr, gotErr)
		}
		if wantErr != nil {
			if !errors.Is(wantErr, store.ErrCompacted) {
				t.Fatalf("watch from %d: %v", after, wantErr)
			}
			compactedSeen = true
			continue
		}
		if got != want {
			t.Fatalf("watch from %d after groups:\n%s\nafter separate entries:\n%s", after, got, want)
		}
	}
	if !compactedSeen {
		t.Error("no watch started before the retained history: trimming untested")
	}
	sep.Close()
	grp.Close()
	if s, g := historyRecords(t, filepath.Join(dir, "sep.db")), historyRecords(t, filepath.Join(dir, "grp.db")); g >= s || s > 61 {
		t.Errorf("%d history records for groups, %d for separate entries: want fewer, and at most 61", g, s)
	}
}
