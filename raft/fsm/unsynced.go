package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrUnsynced is returned by Open when the state file took commits without
// fsync (Options.NoSync) and the machine has restarted since: the operating
// system may have lost any of those writes, in any order, so the file can be
// old or damaged and must not be read. The node rebuilds it from its newest
// snapshot and its log (Discard, then Open and Restore).
var ErrUnsynced = errors.New("fsm: the state file took unsynced commits before the machine restarted")

// unsyncedPath is the marker of a state file that may hold commits not yet
// on disk. It holds the boot id of the machine that made them: within that
// boot the page cache holds every commit, whatever happens to the process.
func unsyncedPath(path string) string { return path + ".unsynced" }

// checkUnsynced returns ErrUnsynced when path carries a marker written in
// another boot than the current one (or one that cannot be read).
func checkUnsynced(path, boot string) error {
	b, err := os.ReadFile(unsyncedPath(path))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("fsm: open %s: %w", path, err)
	}
	if got := string(bytes.TrimSpace(b)); boot == "" || got != boot {
		return fmt.Errorf("%w (made in boot %q, now %q)", ErrUnsynced, got, boot)
	}
	return nil
}

// markUnsynced durably records, before the first commit without fsync, that
// the file may hold such commits from boot.
func markUnsynced(path, boot string) error {
	marker := unsyncedPath(path)
	if b, err := os.ReadFile(marker); err == nil && string(bytes.TrimSpace(b)) == boot {
		return nil
	}
	if err := writeFileSync(marker, bytes.NewReader([]byte(boot+"\n"))); err != nil {
		return fmt.Errorf("fsm: mark %s unsynced: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// clearUnsynced removes the marker once the file has been synced.
func clearUnsynced(path string) error {
	if err := os.Remove(unsyncedPath(path)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return syncDir(filepath.Dir(path))
}

// Discard deletes the state file at path and its marker, for a rebuild
// after Open returned ErrUnsynced.
func Discard(path string) error {
	for _, p := range []string{path, restorePath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("fsm: discard %s: %w", path, err)
		}
	}
	// The marker goes last: were the state file to survive a crash here,
	// the marker still says it must not be trusted.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("fsm: discard %s: %w", path, err)
	}
	if err := clearUnsynced(path); err != nil {
		return fmt.Errorf("fsm: discard %s: %w", path, err)
	}
	return nil
}
