package fsm_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcd-project/kcd/raft/fsm"
)

// A state file that took commits without fsync is trusted again in the
// same boot (the page cache kept them), refused in a later boot until it is
// rebuilt, and trusted in any boot once a clean Close synced it.
func TestNoSyncTrustedOnlyInTheSameBoot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	boot := "boot-1"
	opts := fsm.Options{NoSync: true, BootID: func() string { return boot }}
	var b logBuilder
	b.t = t
	for i := range 50 {
		b.add(put("k", string(rune('a'+i%26))))
	}

	f, err := fsm.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, f, b.entries[:20])
	f.Abandon() // a crash of the process

	f, err = fsm.Open(path, opts)
	if err != nil {
		t.Fatalf("same boot, after a process crash: %v", err)
	}
	if got := f.AppliedIndex(); got != 20 {
		t.Fatalf("applied index after a process crash: %d, want 20", got)
	}
	mustApply(t, f, b.entries[20:40])
	f.Abandon()

	boot = "boot-2" // the machine restarted
	if _, err := fsm.Open(path, opts); !errors.Is(err, fsm.ErrUnsynced) {
		t.Fatalf("open in a later boot: %v, want ErrUnsynced", err)
	}
	// Whatever the options, until the file is rebuilt.
	if _, err := fsm.Open(path, fsm.Options{BootID: opts.BootID}); !errors.Is(err, fsm.ErrUnsynced) {
		t.Fatalf("open in a later boot without NoSync: %v, want ErrUnsynced", err)
	}

	if err := fsm.Discard(path); err != nil {
		t.Fatal(err)
	}
	f, err = fsm.Open(path, opts)
	if err != nil {
		t.Fatalf("open after Discard: %v", err)
	}
	if got := f.AppliedIndex(); got != 0 {
		t.Fatalf("applied index after Discard: %d, want 0", got)
	}
	mustApply(t, f, b.entries)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".unsynced"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker after a clean close: %v", err)
	}

	boot = "boot-3"
	f, err = fsm.Open(path, opts)
	if err != nil {
		t.Fatalf("open in a later boot after a clean close: %v", err)
	}
	defer f.Close()
	if got := f.AppliedIndex(); got != 50 {
		t.Fatalf("applied index: %d, want 50", got)
	}
}

// Without a boot id (not Linux) NoSync is ignored: no marker, every commit
// synced, and the file is trusted after any restart.
func TestNoSyncNeedsABootID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	f, err := fsm.Open(path, fsm.Options{NoSync: true, BootID: func() string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var b logBuilder
	b.t = t
	b.add(put("k", "v"))
	mustApply(t, f, b.entries)
	f.Abandon()
	if _, err := os.Stat(path + ".unsynced"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker without a boot id: %v", err)
	}
	f, err = fsm.Open(path, fsm.Options{BootID: func() string { return "another" }})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
