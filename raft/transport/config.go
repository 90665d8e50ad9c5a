package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxQueueMsgs    = 4096
	DefaultMaxQueueBytes   = 64 << 20
	DefaultMaxFrameBytes   = 64 << 20
	DefaultDialTimeout     = 200 * time.Millisecond
	DefaultOpenTimeout     = time.Second
	DefaultWriteTimeout    = 5 * time.Second
	DefaultSnapshotTimeout = time.Minute
)

// Reconnect backoff: short enough that a restarted peer is heard again well
// inside one election timeout (500 ms in kcd), long enough not to spin.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = time.Second
)

// Config configures an HTTP transport. Only ID, ClusterID and Receiver are
// required.
type Config struct {
	// ID is the local member's raft id.
	ID uint64
	// ClusterID travels with every request; a peer of another cluster is
	// refused (412) in both directions.
	ClusterID string
	// Receiver gets incoming messages and delivery reports.
	Receiver Receiver

	// ClientTLS is used to dial https:// peers; ServerTLS is what
	// ConfigureServer installs on the peer listener. When ServerTLS is set
	// the handler refuses cleartext requests. Nil means cleartext HTTP/2
	// (h2c) for http:// peers.
	ClientTLS *tls.Config
	ServerTLS *tls.Config

	// Logger defaults to discarding.
	Logger *slog.Logger

	// MaxQueueMsgs and MaxQueueBytes bound what is held per peer, the batch
	// on the wire included; beyond them messages are dropped and reported
	// unreachable.
	MaxQueueMsgs  int
	MaxQueueBytes int
	// MaxFrameBytes bounds one encoded message, in both directions. A
	// snapshot travels as one message, so it also bounds the snapshot size.
	MaxFrameBytes int

	// DialTimeout bounds connecting to a peer; OpenTimeout bounds opening a
	// stream (dial, TLS and the peer's answer). WriteTimeout is how long one
	// batch may take to be accepted by the connection before the stream is
	// considered dead; it never limits a healthy stream's lifetime.
	// SnapshotTimeout bounds one snapshot request.
	DialTimeout     time.Duration
	OpenTimeout     time.Duration
	WriteTimeout    time.Duration
	SnapshotTimeout time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.ID == 0 {
		return c, errors.New("transport: config needs the local member id")
	}
	if c.ClusterID == "" {
		return c, errors.New("transport: config needs a cluster id")
	}
	if c.Receiver == nil {
		return c, errors.New("transport: config needs a receiver")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&c.MaxQueueMsgs, DefaultMaxQueueMsgs)
	setDefault(&c.MaxQueueBytes, DefaultMaxQueueBytes)
	setDefault(&c.MaxFrameBytes, DefaultMaxFrameBytes)
	setDefault(&c.DialTimeout, DefaultDialTimeout)
	setDefault(&c.OpenTimeout, DefaultOpenTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.SnapshotTimeout, DefaultSnapshotTimeout)
	if c.MaxFrameBytes > maxFrameLimit {
		return c, fmt.Errorf("transport: MaxFrameBytes %d is above the wire format's limit %d", c.MaxFrameBytes, maxFrameLimit)
	}
	if c.MaxQueueBytes < c.MaxFrameBytes {
		// A message that fits a frame must also fit an empty queue, or the
		// largest messages could never be sent.
		return c, fmt.Errorf("transport: MaxQueueBytes %d is below MaxFrameBytes %d", c.MaxQueueBytes, c.MaxFrameBytes)
	}
	return c, nil
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
