package fsm_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kcd-project/kcd/daemon/store"
	"github.com/kcd-project/kcd/raft/fsm"
)

// A group entry applies like its commands in entries of their own: the same
// state byte for byte, one result per command, in order, each with its id.
func TestGroupAppliesLikeSeparateEntries(t *testing.T) {
	var log []fsm.Entry // the commands of a random log (no empty entries)
	for _, e := range randomLog(t, 5, 300) {
		if len(e.Data) > 0 {
			e.Index = uint64(len(log) + 1)
			log = append(log, e)
		}
	}
	dir := t.TempDir()
	sep := openFSM(t, filepath.Join(dir, "sep.db"), fsm.Options{})
	sepRes := mustApply(t, sep, log)

	// The same commands, in groups of 1 to 7 per entry.
	var grouped []fsm.Entry
	for i := 0; i < len(log); {
		n := min(1+i%7, len(log)-i)
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
