package logstore

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	raftpb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// snapRef names a snapshot by index and term, as its file names do.
type snapRef struct{ index, term uint64 }

func refOf(m *raftpb.SnapshotMetadata) snapRef {
	return snapRef{index: m.GetIndex(), term: m.GetTerm()}
}

func (r snapRef) metaName() string { return pairName(r.index, r.term, extSnap) }
func (r snapRef) dataName() string { return pairName(r.index, r.term, extSnapData) }

// streamSnapData writes the data file of a snapshot whose payload is prefix
// and then the size bytes image writes, without holding them in memory: the
// header's CRC is filled in once the payload has passed through it.
func streamSnapData(d *os.File, ref snapRef, prefix []byte, size int64, image func(io.Writer) error) error {
	total := int64(len(prefix)) + size
	if total <= 0 || total > maxPayload {
		return fmt.Errorf("snapshot %d data: record payload of %d bytes: must be 1..%d", ref.index, total, maxPayload)
	}
	return writeFileAtomic(d, ref.dataName(), func(f *os.File) error {
		var h [headerSize]byte
		if _, err := f.Write(h[:]); err != nil {
			return err
		}
		typ := []byte{byte(recSnapData)}
		cw := &crcWriter{crc: crc32.Update(0, castagnoli, typ)}
		bw := bufio.NewWriterSize(io.MultiWriter(f, cw), 1<<20)
		if _, err := bw.Write(prefix); err != nil {
			return err
		}
		if err := image(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if cw.n != total {
			return fmt.Errorf("snapshot %d data: %d bytes written, %d announced", ref.index, cw.n, total)
		}
		binary.LittleEndian.PutUint32(h[0:4], uint32(total))
		h[4] = typ[0]
		binary.LittleEndian.PutUint32(h[5:9], cw.crc)
		_, err := f.WriteAt(h[:], 0)
		return err
	})
}

// crcWriter computes the record CRC of what passes through it.
type crcWriter struct {
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.crc = crc32.Update(c.crc, castagnoli, p)
	c.n += int64(len(p))
	return len(p), nil
}

// writeSnapData durably stores a snapshot's Data. It is written before the
// metadata file, so a metadata file never points at missing data.
func writeSnapData(d *os.File, ref snapRef, data []byte) error {
	h, err := recordHeader(recSnapData, data)
	if err != nil {
		return fmt.Errorf("snapshot %d data: %w", ref.index, err)
	}
	return writeFileAtomic(d, ref.dataName(), func(f *os.File) error {
		if _, err := f.Write(h); err != nil {
			return err
		}
		_, err := f.Write(data)
		return err
	})
}

// writeSnapMeta durably stores a snapshot's metadata; typ records whether it
// was made locally or received (see the package documentation).
func writeSnapMeta(d *os.File, typ recordType, m *raftpb.SnapshotMetadata) error {
	buf, err := appendRecord(nil, typ, m)
	if err != nil {
		return fmt.Errorf("snapshot %d metadata: %w", m.GetIndex(), err)
	}
	return writeFileAtomic(d, refOf(m).metaName(), func(f *os.File) error {
		_, err := f.Write(buf)
		return err
	})
}

// readSnapMeta loads and verifies a metadata file.
func readSnapMeta(dir string, ref snapRef) (m *raftpb.SnapshotMetadata, received bool, err error) {
	path := filepath.Join(dir, ref.metaName())
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read snapshot metadata: %w", err)
	}
	rec, ok, reason := decodeRecord(b, 0)
	switch {
	case !ok:
		return nil, false, corruptf(path, 0, "%s", reason)
	case rec.end != len(b):
		return nil, false, corruptf(path, int64(rec.end), "%d unexpected bytes after the record", len(b)-rec.end)
	case rec.typ != recSnapLocal && rec.typ != recSnapReceived:
		return nil, false, corruptf(path, 0, "record type %d is not snapshot metadata", rec.typ)
	}
	m = &raftpb.SnapshotMetadata{}
	if err := proto.Unmarshal(rec.payload, m); err != nil {
		return nil, false, corruptf(path, 0, "decode snapshot metadata: %v", err)
	}
	if refOf(m) != ref {
		return nil, false, corruptf(path, 0, "holds snapshot %d/%d, name says %d/%d", m.GetIndex(), m.GetTerm(), ref.index, ref.term)
	}
	raftpb.EnsureSnapshotMetadata(m)
	return m, rec.typ == recSnapReceived, nil
}

// readSnapData reads and verifies the data file of f. The whole payload is
// checked against its CRC before it is handed to raft, which would otherwise
// ship damaged state to a follower.
func readSnapData(f *os.File) ([]byte, error) {
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	rec, ok, reason := decodeRecord(b, 0)
	switch {
	case !ok:
		return nil, corruptf(f.Name(), 0, "%s", reason)
	case rec.typ != recSnapData || rec.end != len(b):
		return nil, corruptf(f.Name(), 0, "not a single snapshot data record")
	}
	return rec.payload, nil
}

// checkSnapDataHeader verifies at Open that a data file is complete (its
// header's length matches the file size) without reading the data, which may
// be large; the CRC is checked whenever the data is read.
func checkSnapDataHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open snapshot data: %w", err)
	}
	defer f.Close()
	var h [headerSize]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return corruptf(path, 0, "read header: %v", err)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	n := int64(binary.LittleEndian.Uint32(h[0:4]))
	if recordType(h[4]) != recSnapData || headerSize+n != st.Size() {
		return corruptf(path, 0, "header says %d data bytes, file has %d", n, st.Size()-headerSize)
	}
	return nil
}
