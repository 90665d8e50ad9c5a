package transport

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// FuzzFrameReader reads any byte stream a peer could send as frames: it
// never panics, what it decodes re-encodes to a frame that decodes the
// same, a frame above the limit is refused, and what it allocates follows
// what the peer sent, not what a frame header claims.
func FuzzFrameReader(f *testing.F) {
	var stream []byte
	for _, m := range []*raftpb.Message{
		appMsg(1, 2, 7, []byte("payload")),
		{Type: raftpb.MsgHeartbeat.Enum(), From: new(uint64(3)), To: new(uint64(1)), Term: new(uint64(9)), Commit: new(uint64(4))},
		{Type: raftpb.MsgSnap.Enum(), From: new(uint64(1)), To: new(uint64(2)), Snapshot: &raftpb.Snapshot{Data: []byte("state"),
			Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(10)), Term: new(uint64(2)), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}},
		{Type: raftpb.MsgVote.Enum(), From: new(uint64(2)), To: new(uint64(1)), LogTerm: new(uint64(1)), Reject: new(true)},
	} {
		var err error
		if stream, err = appendFrame(stream, m); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(stream)
	f.Add(stream[:len(stream)-3])
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 2, 0x08, 0x80})
	const limit = DefaultMaxFrameBytes
	f.Fuzz(func(t *testing.T, stream []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fr := newFrameReader(bytes.NewReader(stream), limit)
		var got []*raftpb.Message
		var err error
		for {
			var m *raftpb.Message
			if m, err = fr.next(); err != nil {
				break
			}
			got = append(got, m)
		}
		runtime.ReadMemStats(&after)
		// The read buffers (2×64 KiB, and 128 KiB to start a large
		// frame in), and the frames and messages in proportion to the
		// stream.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<10+16*uint64(len(stream)) {
			t.Fatalf("%d bytes allocated reading a stream of %d bytes", alloc, len(stream))
		}
		if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrFrameTooLarge) && err.Error()[:6] != "decode" {
			t.Fatalf("error %v", err)
		}
		for _, m := range got {
			b, err := appendFrame(nil, m)
			if err != nil {
				t.Fatalf("%v decoded, but does not encode: %v", m, err)
			}
			again, err := newFrameReader(bytes.NewReader(b), limit).next()
			if err != nil || !proto.Equal(m, again) {
				t.Fatalf("%v re-encoded reads back as %v, %v", m, again, err)
			}
		}
	})
}
