package logstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"google.golang.org/protobuf/proto"
)

// recordType is the byte after the length in every record header.
type recordType uint8

const (
	recEntry     recordType = 1 // WAL: raftpb.Entry
	recHardState recordType = 2 // WAL: raftpb.HardState
	recReset     recordType = 3 // WAL: raftpb.SnapshotMetadata of a received snapshot that replaced the log

	recSnapLocal    recordType = 4 // .snap file: raftpb.SnapshotMetadata, made by CreateSnapshot
	recSnapReceived recordType = 5 // .snap file: raftpb.SnapshotMetadata, received through Save
	recSnapData     recordType = 6 // .snapdata file: the snapshot's Data, raw
)

func (t recordType) valid() bool { return t >= recEntry && t <= recSnapData }

const (
	headerSize = 9 // length(4) type(1) crc(4)
	// maxPayload matches protobuf's 2 GiB message limit: nothing larger can
	// be sent to a peer anyway.
	maxPayload = math.MaxInt32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var zeroHeader [headerSize]byte

// recordCRC checksums the type byte, passed as the one-byte slice of the
// header holding it (so nothing is allocated), and the payload.
func recordCRC(typ, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, typ), castagnoli, payload)
}

// appendRecord encodes m as one record at the end of buf. It marshals straight
// into buf so that a Save of many entries allocates nothing once buf has grown.
func appendRecord(buf []byte, typ recordType, m proto.Message) ([]byte, error) {
	start := len(buf)
	buf = append(buf, zeroHeader[:]...)
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return buf[:start], fmt.Errorf("marshal %T: %w", m, err)
	}
	payload := buf[start+headerSize:]
	if len(payload) == 0 {
		// An empty payload would look like the all-zero end marker's length.
		return buf[:start], fmt.Errorf("marshal %T: empty message", m)
	}
	putHeader(buf[start:], typ, payload)
	return buf, nil
}

// recordHeader returns the header for a record whose payload is written
// separately, so large snapshot data is never copied into a second buffer.
func recordHeader(typ recordType, payload []byte) ([]byte, error) {
	if len(payload) == 0 || len(payload) > maxPayload {
		return nil, fmt.Errorf("record payload of %d bytes: must be 1..%d", len(payload), maxPayload)
	}
	h := make([]byte, headerSize)
	putHeader(h, typ, payload)
	return h, nil
}

func putHeader(h []byte, typ recordType, payload []byte) {
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	h[4] = byte(typ)
	binary.LittleEndian.PutUint32(h[5:9], recordCRC(h[4:5], payload))
}

// record is one decoded record; payload aliases the buffer it was read from.
type record struct {
	typ     recordType
	payload []byte
	off     int // offset of the header
	end     int // offset just after the payload
}

// decodeRecord parses the record at off. ok is false when there is no intact
// record there; reason then says why. A record whose CRC matches but whose
// type is unknown is returned with ok true: it was written as such, so the
// caller must treat it as impossible rather than torn.
func decodeRecord(b []byte, off int) (rec record, ok bool, reason string) {
	rest := b[off:]
	if len(rest) < headerSize {
		return rec, false, fmt.Sprintf("%d bytes are too short for a record header", len(rest))
	}
	n := int64(binary.LittleEndian.Uint32(rest[0:4]))
	typ := recordType(rest[4])
	switch {
	case n == 0:
		return rec, false, "zero record length"
	case n > maxPayload:
		return rec, false, fmt.Sprintf("record length %d exceeds the maximum", n)
	case headerSize+n > int64(len(rest)):
		return rec, false, fmt.Sprintf("record length %d runs past the end of the file", n)
	}
	payload := rest[headerSize : headerSize+n]
	if want, got := binary.LittleEndian.Uint32(rest[5:9]), recordCRC(rest[4:5], payload); want != got {
		return rec, false, fmt.Sprintf("crc mismatch (stored %08x, computed %08x)", want, got)
	}
	return record{typ: typ, payload: payload, off: off, end: off + headerSize + int(n)}, true, ""
}

// findValidRecord returns the offset of the first intact record of a known
// type at or after from, or -1. It is only used after a bad record, to tell a
// torn tail (nothing valid follows) from damage to acknowledged data.
func findValidRecord(b []byte, from int) int {
	for p := from; p+headerSize <= len(b); p++ {
		if binary.LittleEndian.Uint32(b[p:p+4]) == 0 {
			// Skip zero runs (the preallocated tail) quickly: no record can
			// start until a length byte is non-zero.
			nz := indexNonZero(b[p+4:])
			if nz < 0 {
				return -1
			}
			p += nz // the loop's p++ moves on by one more
			continue
		}
		if rec, ok, _ := decodeRecord(b, p); ok && rec.typ.valid() {
			return p
		}
	}
	return -1
}

var zeroChunk [4096]byte

// indexNonZero returns the index of the first non-zero byte in b, or -1.
// It compares whole chunks first (bytes.Equal is vectorised) because it
// runs over the preallocated zeros of a 64 MiB segment on every Open.
func indexNonZero(b []byte) int {
	for off := 0; off < len(b); off += len(zeroChunk) {
		chunk := b[off:min(off+len(zeroChunk), len(b))]
		if bytes.Equal(chunk, zeroChunk[:len(chunk)]) {
			continue
		}
		for i, c := range chunk {
			if c != 0 {
				return off + i
			}
		}
	}
	return -1
}
