//go:build linux

package logstore

import (
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes file data and the metadata needed to read it back (the
// size), but not timestamps: one journal commit less than fsync.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// preallocate reserves size bytes so appends neither change the file size
// nor hit ENOSPC in the middle of a write. Filesystems without fallocate
// simply grow the file as it is written.
func preallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	return err
}

// lockDir takes an exclusive advisory lock on the open directory, so a second
// kcd pointed at the same data directory fails instead of interleaving writes.
// The lock goes away with the file descriptor, also when the process dies.
func lockDir(d *os.File) error {
	err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("directory %s is in use by another store", d.Name())
	}
	return err
}

// dataRun returns where the first data at or after off starts and where the
// hole after it starts (SEEK_DATA, SEEK_HOLE); data is math.MaxInt64 when
// only holes follow. What lies outside data runs reads as zeros. ok is
// false when the file system cannot tell.
func dataRun(f *os.File, off int64) (data, hole int64, ok bool) {
	fd := int(f.Fd())
	data, err := unix.Seek(fd, off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return math.MaxInt64, math.MaxInt64, true
	}
	if err != nil {
		return 0, 0, false
	}
	if hole, err = unix.Seek(fd, data, unix.SEEK_HOLE); err != nil {
		return 0, 0, false
	}
	return data, hole, true
}

// noReadahead turns readahead off for f: a read near the end of a
// segment's data would otherwise cache pages of the preallocated space
// after it, which SEEK_DATA then counts as data.
func noReadahead(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
}
