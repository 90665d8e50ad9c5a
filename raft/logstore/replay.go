package logstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// readChunk bounds the buffers used to read segments.
const readChunk = 1 << 20

// walState is what replaying the WAL segments yields.
type walState struct {
	hs   *raftpb.HardState
	ents []*raftpb.Entry // contiguous, ents[0] has index base+1
	base uint64
	// baseFromReset is true when base is a received snapshot's index.
	// Otherwise base only says where the oldest surviving segment started,
	// and a later truncation may legitimately reach below it.
	baseFromReset bool
	resets        map[snapRef]bool // reset records seen
	lastReset     *raftpb.SnapshotMetadata

	segs []segmentInfo
	// tailEnd is where the valid records of the last segment end; tailTorn
	// says that non-zero bytes follow, left by a write that never completed.
	tailEnd  int64
	tailSize int64
	tailTorn bool
}

func (st *walState) lastIndex() uint64 { return st.base + uint64(len(st.ents)) }

// readWAL replays segs (sorted by sequence number) from dir.
func readWAL(dir string, segs []segmentInfo) (*walState, error) {
	st := &walState{segs: segs, resets: map[snapRef]bool{}}
	if len(segs) == 0 {
		return st, nil
	}
	st.base = segs[0].first - 1
	for i := range segs {
		seg := &segs[i]
		path := filepath.Join(dir, seg.name())
		if i > 0 {
			prev := segs[i-1]
			if seg.seq != prev.seq+1 {
				return nil, corruptf(path, -1, "segment %d is missing", prev.seq+1)
			}
			if last := st.lastIndex(); seg.first != last+1 {
				return nil, corruptf(path, -1, "segment starts at index %d but the log before it ends at %d", seg.first, last)
			}
		}
		isTail := i == len(segs)-1
		end, size, torn, err := scanSegment(path, isTail, func(rec record) error {
			return st.apply(path, seg, rec)
		})
		if err != nil {
			return nil, err
		}
		if isTail {
			st.tailEnd, st.tailSize, st.tailTorn = end, size, torn
		}
	}
	return st, nil
}

// scanSegment calls fn for each record of a segment and returns where its
// valid data ends. The file is streamed, so memory stays at one record plus
// a read buffer however large the segment; fn must not keep rec.payload.
// Only the tail segment may end in zeros or in a torn write (torn is then
// true); anything else is corruption.
func scanSegment(path string, isTail bool, fn func(record) error) (end, size int64, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false, fmt.Errorf("open wal segment: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, 0, false, fmt.Errorf("stat wal segment: %w", err)
	}
	size = info.Size()
	noReadahead(f)
	r := bufio.NewReaderSize(f, int(min(size, readChunk)))
	var hdr [headerSize]byte
	var payload []byte
	off := int64(0)
	for off < size {
		if size-off < headerSize {
			break
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return 0, 0, false, fmt.Errorf("read %s: %w", path, err)
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
		if n == 0 || n > maxPayload || off+headerSize+n > size {
			break // the end marker, or damage: both are looked at below
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return 0, 0, false, fmt.Errorf("read %s: %w", path, err)
		}
		typ := recordType(hdr[4])
		if binary.LittleEndian.Uint32(hdr[5:9]) != recordCRC(hdr[4:5], payload) {
			break
		}
		if !typ.valid() {
			return 0, 0, false, corruptf(path, off, "unknown record type %d", typ)
		}
		rec := record{typ: typ, payload: payload, off: int(off), end: int(off + headerSize + n)}
		if err := fn(rec); err != nil {
			return 0, 0, false, err
		}
		off = int64(rec.end)
	}
	if off == size {
		return off, size, false, nil
	}
	torn, err = checkEnd(f, path, off, size, isTail)
	return off, size, torn, err
}

// checkEnd decides what the bytes from off, where no intact record starts,
// to the end of the segment are.
func checkEnd(f *os.File, path string, off, size int64, isTail bool) (torn bool, err error) {
	zero, err := zeroFrom(f, off, size)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if zero {
		if isTail {
			return false, nil // unused preallocated space
		}
		return false, corruptf(path, off, "%d zero bytes at the end of a finished segment", size-off)
	}
	// Rare: read the rest to see whether anything valid follows.
	rest := make([]byte, size-off)
	if _, err := f.ReadAt(rest, off); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	_, _, reason := decodeRecord(rest, 0)
	if !isTail {
		return false, corruptf(path, off, "%s", reason)
	}
	if p := findValidRecord(rest, 1); p >= 0 {
		return false, corruptf(path, off, "%s, and a valid record follows at offset %d", reason, off+int64(p))
	}
	return true, nil
}

// zeroFrom reports whether the file is all zero from off to size, reading it
// in chunks rather than all at once. Holes read as zeros and are skipped
// unread; on Linux so are the preallocated (unwritten) extents of a segment
// while none of their pages is cached: reading the 64 MiB of a fresh tail
// segment took most of an Open. Only data is read, up to the next hole, so
// that the scan itself caches no pages of such extents.
func zeroFrom(f *os.File, off, size int64) (bool, error) {
	var buf []byte
	for off < size {
		end := size
		if data, hole, ok := dataRun(f, off); ok {
			if data >= size {
				return true, nil
			}
			off, end = max(off, data), min(size, max(hole, data+1))
		}
		if buf == nil {
			buf = make([]byte, min(size-off, readChunk))
		}
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if indexNonZero(buf[:n]) >= 0 {
			return false, nil
		}
		if err != nil && !(errors.Is(err, io.EOF) && off+int64(n) == size) {
			return false, err
		}
		off += int64(n)
	}
	return true, nil
}

// apply replays one record.
func (st *walState) apply(path string, seg *segmentInfo, rec record) error {
	bad := func(format string, args ...any) error {
		return corruptf(path, int64(rec.off), format, args...)
	}
	switch rec.typ {
	case recEntry:
		e := &raftpb.Entry{}
		if err := proto.Unmarshal(rec.payload, e); err != nil {
			return bad("decode entry: %v", err)
		}
		return st.addEntry(e, bad)
	case recHardState:
		hs := &raftpb.HardState{}
		if err := proto.Unmarshal(rec.payload, hs); err != nil {
			return bad("decode hard state: %v", err)
		}
		st.hs = hs
	case recReset:
		m := &raftpb.SnapshotMetadata{}
		if err := proto.Unmarshal(rec.payload, m); err != nil {
			return bad("decode snapshot reset: %v", err)
		}
		if m.GetIndex() == 0 || (st.lastReset != nil && m.GetIndex() <= st.lastReset.GetIndex()) {
			return bad("snapshot reset to index %d does not advance", m.GetIndex())
		}
		st.ents, st.base, st.baseFromReset = nil, m.GetIndex(), true
		st.resets[refOf(m)] = true
		st.lastReset = m
		seg.resetIndex = max(seg.resetIndex, m.GetIndex())
	default:
		return bad("record type %d does not belong in a wal segment", rec.typ)
	}
	return nil
}

// addEntry appends e, first cutting off any suffix it conflicts with.
func (st *walState) addEntry(e *raftpb.Entry, bad func(string, ...any) error) error {
	idx := e.GetIndex()
	switch last := st.lastIndex(); {
	case idx == 0:
		return bad("entry without an index")
	case idx > last+1:
		return bad("entry %d leaves a gap after %d", idx, last)
	case idx <= st.base:
		if st.baseFromReset {
			return bad("entry %d is at or below snapshot %d", idx, st.base)
		}
		// The entries this truncates lived in segments already removed.
		st.ents, st.base = st.ents[:0], idx-1
	default:
		st.ents = st.ents[:idx-st.base-1]
	}
	st.ents = append(st.ents, e)
	return nil
}
