package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func appMsg(from, to, seq uint64, data []byte) *raftpb.Message {
	return &raftpb.Message{
		Type: raftpb.MsgApp.Enum(), From: new(from), To: new(to), Term: new(uint64(1)), Index: new(seq),
		Entries: []*raftpb.Entry{{Term: new(uint64(1)), Index: new(seq + 1), Data: data}},
	}
}

func TestFrameRoundTrip(t *testing.T) {
	var buf []byte
	var want []*raftpb.Message
	for i := range uint64(100) {
		m := appMsg(1, 2, i, bytes.Repeat([]byte{byte(i)}, int(i)*1000)) // some above reuseBufLimit
		want = append(want, m)
		var err error
		if buf, err = appendFrame(buf, m); err != nil {
			t.Fatal(err)
		}
	}
	fr := newFrameReader(bytes.NewReader(buf), 1<<20)
	for i, w := range want {
		got, err := fr.next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !proto.Equal(got, w) {
			t.Fatalf("frame %d: got %v, want %v", i, got, w)
		}
	}
	if _, err := fr.next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestFrameTooLarge(t *testing.T) {
	buf, err := appendFrame(nil, appMsg(1, 2, 1, make([]byte, 2000)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newFrameReader(bytes.NewReader(buf), 1000).next()
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("got %v, want ErrFrameTooLarge", err)
	}
}

func TestFrameTruncated(t *testing.T) {
	buf, err := appendFrame(nil, appMsg(1, 2, 1, []byte("hello")))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, frameHeaderLen, len(buf) - 1} {
		_, err := newFrameReader(bytes.NewReader(buf[:n]), 1<<20).next()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d of %d: got %v, want io.ErrUnexpectedEOF", n, len(buf), err)
		}
	}
}

func TestFrameSize(t *testing.T) {
	m := appMsg(1, 2, 7, []byte("payload"))
	buf, err := appendFrame(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := frameSize(m); got != len(buf) {
		t.Fatalf("frameSize = %d, encoded %d bytes", got, len(buf))
	}
}

func TestQueueBounds(t *testing.T) {
	q := newQueue(3, 100)
	m := appMsg(1, 2, 1, nil)
	for i := range 3 {
		if !q.push(m, 10) {
			t.Fatalf("push %d refused below the count bound", i)
		}
	}
	if q.push(m, 10) {
		t.Fatal("push beyond MaxQueueMsgs accepted")
	}
	batch, size := q.take(nil)
	if len(batch) != 3 || size != 30 {
		t.Fatalf("take = %d msgs %d bytes, want 3 and 30", len(batch), size)
	}
	// A taken batch still counts until it is released.
	if q.push(m, 10) {
		t.Fatal("push accepted while the taken batch is unreleased")
	}
	q.release(len(batch), size)
	if !q.push(m, 90) {
		t.Fatal("push within the byte bound refused")
	}
	if q.push(m, 11) {
		t.Fatal("push beyond MaxQueueBytes accepted")
	}
	if n, b := q.len(); n != 1 || b != 90 {
		t.Fatalf("len = %d, %d; want 1, 90", n, b)
	}
}
