package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Wire format, the same on a stream and in a snapshot request: a sequence of
// frames, each a 4-byte big-endian length followed by that many bytes of a
// proto.Marshal'd raftpb.Message.
const (
	frameHeaderLen = 4
	// maxFrameLimit keeps a configured frame bound far from the uint32
	// length's range and from absurd allocations.
	maxFrameLimit = 1 << 30
	// reuseBufLimit: the reader keeps a buffer this large between frames;
	// bigger frames (snapshots, large appends) get a buffer of their own so
	// that one big message does not pin its size for the stream's lifetime.
	reuseBufLimit = 64 << 10
)

// ErrFrameTooLarge is returned for a message whose encoding exceeds the
// frame bound.
var ErrFrameTooLarge = errors.New("raft message exceeds the frame size limit")

// frameSize is what m occupies on the wire.
func frameSize(m *raftpb.Message) int { return frameHeaderLen + proto.Size(m) }

// appendFrame appends m to buf as one frame.
func appendFrame(buf []byte, m *raftpb.Message) ([]byte, error) {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return buf[:start], fmt.Errorf("encode %s for %d: %w", m.GetType(), m.GetTo(), err)
	}
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-frameHeaderLen))
	return buf, nil
}

// frameReader decodes frames from a stream, refusing any above max.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	hdr [frameHeaderLen]byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next message, or io.EOF at a clean end of stream.
func (fr *frameReader) next() (*raftpb.Message, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	n := int(binary.BigEndian.Uint32(fr.hdr[:]))
	if n > fr.max {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, fr.max)
	}
	var b []byte
	if n <= reuseBufLimit {
		if cap(fr.buf) < n {
			fr.buf = make([]byte, reuseBufLimit)
		}
		b = fr.buf[:n]
		if _, err := io.ReadFull(fr.r, b); err != nil {
			return nil, fmt.Errorf("read frame of %d bytes: %w", n, noEOF(err))
		}
	} else {
		var err error
		if b, err = readGrowing(fr.r, n); err != nil {
			return nil, fmt.Errorf("read frame of %d bytes: %w", n, noEOF(err))
		}
	}
	m := new(raftpb.Message)
	// Unmarshal copies bytes fields, so reusing b for the next frame is safe.
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("decode raft message: %w", err)
	}
	return m, nil
}

// readGrowing reads n bytes into a buffer that grows, by doubling up to n,
// as they arrive: a peer that announces a large frame and sends less makes
// the reader allocate about what it sent, not what it announced (found by
// FuzzFrameReader). A frame that arrives whole costs at most 1.5 times its
// size while the last doubling copies.
func readGrowing(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, 0, min(n, reuseBufLimit*2))
	for len(b) < n {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(n, 2*cap(b)))
			copy(nb, b)
			b = nb
		}
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err != nil && len(b) < n {
			return nil, err
		}
	}
	return b, nil
}

// noEOF turns an EOF inside a frame into the truncation it is.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
