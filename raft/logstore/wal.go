package logstore

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// slowSync is when an fdatasync is worth a warning: at this point it
// threatens heartbeats and, with a 500 ms election timeout, leadership.
const slowSync = 500 * time.Millisecond

// maxIdleBuf caps the encode buffer kept between writes, so one huge Save
// does not pin its size in memory for the life of the process.
const maxIdleBuf = 4 << 20

// segmentInfo describes one WAL segment file.
type segmentInfo struct {
	seq   uint64 // position in the sequence of segments, from 1
	first uint64 // the log's last index + 1 when the segment was started
	// resetIndex is the highest snapshot index of a reset record in the
	// segment (0: none). Such a segment confirms a received snapshot and
	// must outlive it; see removeObsolete.
	resetIndex uint64
}

func (s segmentInfo) name() string { return pairName(s.seq, s.first, extSegment) }

// wal appends records to the last segment. Callers serialise access.
type wal struct {
	d       *os.File // the directory
	segSize int64
	log     *slog.Logger

	segs []segmentInfo // live segments, oldest first; the last is being written
	f    *os.File      // the last segment
	size int64         // bytes of records in f; beyond it the file is zero
	buf  []byte        // encoded records not yet written to f

	// hs is the newest hard state encoded; every new segment starts with it.
	hs *raftpb.HardState
	// headerEnd is where that hard state header ends in the current
	// segment. A segment holding nothing beyond it is not rotated: a record
	// larger than SegmentSize would otherwise start new segments forever.
	headerEnd int64
}

func (w *wal) tail() *segmentInfo { return &w.segs[len(w.segs)-1] }

func (w *wal) path(s segmentInfo) string { return filepath.Join(w.d.Name(), s.name()) }

// openTail reopens the last segment for appending after recovery found its
// valid data ending at end. A torn tail beyond end is cut off first, so new
// records never follow garbage.
func (w *wal) openTail(end int64, torn bool) error {
	path := w.path(*w.tail())
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open wal segment: %w", err)
	}
	if torn {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return fmt.Errorf("truncate torn tail of %s: %w", path, err)
		}
		if err := fdatasync(f); err != nil {
			f.Close()
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := preallocate(f, w.segSize); err != nil {
		f.Close()
		return fmt.Errorf("preallocate %s: %w", path, err)
	}
	w.f, w.size, w.headerEnd = f, end, 0
	return nil
}

// create starts segment seq whose first index is first and makes it the tail.
func (w *wal) create(seq, first uint64) error {
	info := segmentInfo{seq: seq, first: first}
	path := w.path(info)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return fmt.Errorf("create wal segment: %w", err)
	}
	if err := preallocate(f, w.segSize); err != nil {
		f.Close()
		return fmt.Errorf("preallocate %s: %w", path, err)
	}
	if err := syncDir(w.d); err != nil {
		f.Close()
		return err
	}
	w.f, w.size = f, 0
	w.segs = append(w.segs, info)
	if w.hs != nil {
		if w.buf, err = appendRecord(w.buf, recHardState, w.hs); err != nil {
			return err
		}
	}
	w.headerEnd = int64(len(w.buf))
	w.log.Debug("started wal segment", "file", info.name())
	return nil
}

// add encodes one record. next is the log's last index + 1 before this
// record: the first index of the new segment if the record does not fit.
func (w *wal) add(typ recordType, m proto.Message, next uint64) error {
	start := len(w.buf)
	var err error
	if w.buf, err = appendRecord(w.buf, typ, m); err != nil {
		return err
	}
	if w.size+int64(len(w.buf)) > w.segSize && w.size+int64(start) > w.headerEnd {
		rec := slices.Clone(w.buf[start:])
		w.buf = w.buf[:start]
		if err := w.rotate(next); err != nil {
			return err
		}
		w.buf = append(w.buf, rec...)
	}
	switch typ {
	case recHardState:
		w.hs = m.(*raftpb.HardState)
	case recReset:
		w.tail().resetIndex = max(w.tail().resetIndex, m.(*raftpb.SnapshotMetadata).GetIndex())
	}
	return nil
}

// rotate finishes the tail segment and starts the next one.
func (w *wal) rotate(first uint64) error {
	if err := w.flush(); err != nil {
		return err
	}
	// Trim the preallocated zeros: only the last segment may end in zeros,
	// which lets recovery treat a short finished segment as damage.
	if err := w.f.Truncate(w.size); err != nil {
		return fmt.Errorf("trim %s: %w", w.f.Name(), err)
	}
	if err := w.sync(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.f.Name(), err)
	}
	return w.create(w.tail().seq+1, first)
}

// flush writes the encoded records to the tail segment.
func (w *wal) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.size); err != nil {
		return fmt.Errorf("write %s: %w", w.f.Name(), err)
	}
	w.size += int64(len(w.buf))
	if cap(w.buf) > maxIdleBuf {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return nil
}

// commit writes everything added so far and makes it durable.
func (w *wal) commit() error {
	if err := w.flush(); err != nil {
		return err
	}
	return w.sync()
}

func (w *wal) sync() error {
	start := time.Now()
	if err := fdatasync(w.f); err != nil {
		return fmt.Errorf("fdatasync %s: %w", w.f.Name(), err)
	}
	if d := time.Since(start); d > slowSync {
		w.log.Warn("slow fdatasync", "file", filepath.Base(w.f.Name()), "took", d)
	}
	return nil
}

// removeObsolete deletes the oldest segments whose live entries are all at or
// below bound. Segment k qualifies when segment k+1 starts at or below
// bound+1: anything k holds above that was superseded by a later truncation.
// The tail is never removed, and neither is a segment holding the reset
// record of the current snapshot (index snapIndex), which is what makes a
// received snapshot valid on the next Open. Only a prefix is removed, so the
// sequence numbers of the remaining segments stay contiguous.
func (w *wal) removeObsolete(bound, snapIndex uint64) error {
	n := 0
	for n < len(w.segs)-1 && w.segs[n+1].first-1 <= bound && w.segs[n].resetIndex < snapIndex {
		n++
	}
	if n == 0 {
		return nil
	}
	names := make([]string, n)
	for i, s := range w.segs[:n] {
		names[i] = s.name()
	}
	if err := removeFiles(w.d, names...); err != nil {
		return err
	}
	w.segs = slices.Delete(w.segs, 0, n)
	w.log.Debug("removed wal segments", "count", n, "upto", names[n-1])
	return nil
}

func (w *wal) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", w.path(*w.tail()), err)
	}
	return nil
}
