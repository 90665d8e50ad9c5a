package logstore

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	extSegment  = ".wal"
	extSnap     = ".snap"
	extSnapData = ".snapdata"
	extTemp     = ".tmp"

	filePerm = 0o600
	dirPerm  = 0o700
)

// pairName formats the two hex numbers every file name is made of, padded so
// that lexical order is numeric order.
func pairName(a, b uint64, ext string) string {
	return fmt.Sprintf("%016x-%016x%s", a, b, ext)
}

func parsePairName(name, ext string) (a, b uint64, ok bool) {
	base, found := strings.CutSuffix(name, ext)
	if !found || len(base) != 33 || base[16] != '-' {
		return 0, 0, false
	}
	a, errA := strconv.ParseUint(base[:16], 16, 64)
	b, errB := strconv.ParseUint(base[17:], 16, 64)
	return a, b, errA == nil && errB == nil
}

// dirListing is what Open finds in the directory.
type dirListing struct {
	segments []segmentInfo // by sequence number
	snaps    []snapRef     // newest first
	data     map[snapRef]bool
	temps    []string
}

func listDir(dir string) (dirListing, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return dirListing{}, fmt.Errorf("list %s: %w", dir, err)
	}
	l := dirListing{data: map[snapRef]bool{}}
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(name, extTemp) {
			l.temps = append(l.temps, name)
		} else if seq, first, ok := parsePairName(name, extSegment); ok {
			l.segments = append(l.segments, segmentInfo{seq: seq, first: first})
		} else if idx, term, ok := parsePairName(name, extSnap); ok {
			l.snaps = append(l.snaps, snapRef{index: idx, term: term})
		} else if idx, term, ok := parsePairName(name, extSnapData); ok {
			l.data[snapRef{index: idx, term: term}] = true
		}
	}
	slices.SortFunc(l.segments, func(a, b segmentInfo) int { return cmp.Compare(a.seq, b.seq) })
	slices.SortFunc(l.snaps, func(a, b snapRef) int {
		return cmp.Or(cmp.Compare(b.index, a.index), cmp.Compare(b.term, a.term))
	})
	return l, nil
}

// writeFileAtomic makes name appear in dir with exactly the bytes write
// produces, or not at all: temporary file, fsync, rename, directory fsync.
// The temporary name is unique, so concurrent writers cannot collide, and a
// crash leaves only a *.tmp file that the next Open removes.
func writeFileAtomic(d *os.File, name string, write func(f *os.File) error) (err error) {
	tmp, err := os.CreateTemp(d.Name(), name+".*"+extTemp) // CreateTemp uses mode 0600
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	final := filepath.Join(d.Name(), name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("rename %s: %w", tmp.Name(), err)
	}
	return syncDir(d)
}

// removeFiles deletes names from dir and makes the deletion durable.
func removeFiles(d *os.File, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	for _, name := range names {
		if err := os.Remove(filepath.Join(d.Name(), name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove %s: %w", name, err)
		}
	}
	return syncDir(d)
}

// syncDir makes creations, renames and deletions in the directory durable;
// fsyncing a file does not persist its directory entry.
func syncDir(d *os.File) error {
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", d.Name(), err)
	}
	return nil
}

// mkdirDurable creates dir (0700) if needed and syncs its parent so the new
// directory entry itself survives a crash.
func mkdirDurable(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	parent, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("open parent of %s: %w", dir, err)
	}
	defer parent.Close()
	return syncDir(parent)
}
