package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dataDir is the node's data directory, locked for the node's lifetime so
// that two processes never share it.
type dataDir struct {
	path string
	lock *os.File
}

func openDataDir(path string) (*dataDir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", path, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(abs, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another kcd process", abs)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", abs, err)
	}
	return &dataDir{path: abs, lock: f}, nil
}

// sub returns the path of a folder inside the data dir.
func (d *dataDir) sub(name string) string { return filepath.Join(d.path, name) }

func (d *dataDir) close() error { return d.lock.Close() }
