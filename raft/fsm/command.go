package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kcd-project/kcd/store"
)

// Kind says which store operation a Command carries.
type Kind uint8

// The kinds of Command. The values are part of the encoding: never renumber.
const (
	KindPut           Kind = 1
	KindDelete        Kind = 2
	KindCompareAndSet Kind = 3
	KindBatch         Kind = 4
	// KindCompact drops the watch history up to Rev (see FSM.Apply).
	KindCompact Kind = 5
	// KindLoad writes KVs with the revisions they carry, deletes Keys and
	// sets the revision to Rev, making no events (store.Loader.Load).
	KindLoad Kind = 6
	// KindClear deletes every key outside Prefixes and sets the revision
	// to 0 (store.Loader.Clear).
	KindClear Kind = 7
	// KindFreeze freezes the store (Frozen) or thaws it: while frozen,
	// writes to keys outside Prefixes fail with ErrFrozen.
	KindFreeze Kind = 8
)

// MaxPrefixes bounds the Prefixes of a KindClear or KindFreeze command.
const MaxPrefixes = 64

func (k Kind) String() string {
	switch k {
	case KindPut:
		return "put"
	case KindDelete:
		return "delete"
	case KindCompareAndSet:
		return "compare-and-set"
	case KindBatch:
		return "batch"
	case KindCompact:
		return "compact"
	case KindLoad:
		return "load"
	case KindClear:
		return "clear"
	case KindFreeze:
		return "freeze"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Command is one store operation as it travels through the Raft log. The
// proposer picks ID so that it can match the Result of the applied entry to
// the waiting caller; the FSM only echoes it.
//
// Which fields matter depends on Kind:
//
//	KindPut            Key, Value
//	KindDelete         Key
//	KindCompareAndSet  Key, ExpectModRev, Value
//	KindBatch          Conds, Ops
//	KindCompact        Rev
//	KindLoad           Rev, KVs, Keys (deleted)
//	KindClear          Prefixes (kept)
//	KindFreeze         Frozen, Prefixes (exempt)
type Command struct {
	ID           uint64
	Kind         Kind
	Key          string
	Value        []byte
	ExpectModRev int64
	Conds        []store.Cond
	Ops          []store.Op
	Rev          int64
	KVs          []store.KV
	Keys         []string
	Prefixes     []string
	Frozen       bool
}

// commandVersion is the first byte of every encoded command. A node that
// meets a version it does not know fails the entry (it is still applied as
// a no-op, identically on every node of the same version), which is why a
// new version may only be proposed once every member understands it.
const commandVersion = 1

// errDecode is wrapped by every decoding failure.
var errDecode = errors.New("fsm: malformed command")

// Validate checks c against the limits of package store. Apply runs it on
// every command, so an invalid command fails identically on every node; a
// proposer should run it too, so as not to spend a log entry on a request
// that can only fail. The error wraps store.ErrInvalid.
func (c *Command) Validate() error {
	switch c.Kind {
	case KindPut:
		return store.CheckPut(c.Key, c.Value)
	case KindDelete:
		return store.CheckKey(c.Key)
	case KindCompareAndSet:
		if c.ExpectModRev < 0 {
			return fmt.Errorf("%w: negative expected revision %d", store.ErrInvalid, c.ExpectModRev)
		}
		return store.CheckPut(c.Key, c.Value)
	case KindBatch:
		return store.CheckBatch(c.Conds, c.Ops)
	case KindCompact:
		if c.Rev < 0 {
			return fmt.Errorf("%w: negative compact revision %d", store.ErrInvalid, c.Rev)
		}
		return nil
	case KindLoad:
		return store.CheckLoad(c.Rev, c.KVs, c.Keys)
	case KindClear, KindFreeze:
		if len(c.Prefixes) > MaxPrefixes {
			return fmt.Errorf("%w: %d prefixes exceed %d", store.ErrInvalid, len(c.Prefixes), MaxPrefixes)
		}
		for i, p := range c.Prefixes {
			if len(p) > store.MaxKeySize {
				return fmt.Errorf("prefix %d: %w: %d bytes exceed %d", i, store.ErrInvalid, len(p), store.MaxKeySize)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown command kind %d", store.ErrInvalid, c.Kind)
}

// EncodeCommand returns the bytes to propose for c. The encoding is
// deterministic (one byte string per command) and compact:
//
//	version byte (1), kind byte, uvarint ID, then by kind
//	  put:     key, value
//	  delete:  key
//	  cas:     key, uvarint expectModRev, value
//	  batch:   uvarint #conds, (key, uvarint modRev)*, uvarint #ops, (op byte, key[, value if put])*
//	  compact: uvarint rev
//	  load:    uvarint rev, uvarint #kvs, (key, uvarint create, uvarint mod, value)*, uvarint #keys, key*
//	  clear:   uvarint #prefixes, prefix*
//	  freeze:  byte frozen (0 or 1), uvarint #prefixes, prefix*
//
// where key and value are a uvarint length and the bytes. Revisions are
// written as the uvarint of their two's complement, so a negative one
// survives the trip and is rejected by Validate, not lost in transit.
// EncodeCommand does not apply the store limits (Validate does); it only
// fails on what it cannot represent: an unknown Kind or op type.
func EncodeCommand(c Command) ([]byte, error) {
	return AppendCommand(nil, c)
}

// AppendCommand appends the encoding of c to dst (see EncodeCommand).
func AppendCommand(dst []byte, c Command) ([]byte, error) {
	dst = append(dst, commandVersion, byte(c.Kind))
	dst = binary.AppendUvarint(dst, c.ID)
	switch c.Kind {
	case KindPut:
		dst = appendString(dst, c.Key)
		dst = appendBytes(dst, c.Value)
	case KindDelete:
		dst = appendString(dst, c.Key)
	case KindCompareAndSet:
		dst = appendString(dst, c.Key)
		dst = binary.AppendUvarint(dst, uint64(c.ExpectModRev))
		dst = appendBytes(dst, c.Value)
	case KindBatch:
		dst = binary.AppendUvarint(dst, uint64(len(c.Conds)))
		for _, cd := range c.Conds {
			dst = appendString(dst, cd.Key)
			dst = binary.AppendUvarint(dst, uint64(cd.ModRevision))
		}
		dst = binary.AppendUvarint(dst, uint64(len(c.Ops)))
		for i, op := range c.Ops {
			switch op.Type {
			case store.OpPut:
				dst = append(dst, byte(store.OpPut))
				dst = appendString(dst, op.Key)
				dst = appendBytes(dst, op.Value)
			case store.OpDelete:
				dst = append(dst, byte(store.OpDelete))
				dst = appendString(dst, op.Key)
			default:
				return nil, fmt.Errorf("fsm: encode command: op %d: %w: unknown op type %d", i, store.ErrInvalid, op.Type)
			}
		}
	case KindCompact:
		dst = binary.AppendUvarint(dst, uint64(c.Rev))
	case KindLoad:
		dst = binary.AppendUvarint(dst, uint64(c.Rev))
		dst = binary.AppendUvarint(dst, uint64(len(c.KVs)))
		for _, kv := range c.KVs {
			dst = appendString(dst, kv.Key)
			dst = binary.AppendUvarint(dst, uint64(kv.CreateRevision))
			dst = binary.AppendUvarint(dst, uint64(kv.ModRevision))
			dst = appendBytes(dst, kv.Value)
		}
		dst = appendStrings(dst, c.Keys)
	case KindClear:
		dst = appendStrings(dst, c.Prefixes)
	case KindFreeze:
		var b byte
		if c.Frozen {
			b = 1
		}
		dst = append(dst, b)
		dst = appendStrings(dst, c.Prefixes)
	default:
		return nil, fmt.Errorf("fsm: encode command: %w: unknown command kind %d", store.ErrInvalid, c.Kind)
	}
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		dst = appendString(dst, s)
	}
	return dst
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// DecodeCommand parses what EncodeCommand produced. It never panics and
// never allocates more than a small multiple of len(data), whatever data
// holds; anything but a well-formed encoding (including trailing bytes and
// non-minimal varints) is an error, so that EncodeCommand(DecodeCommand(b))
// gives back b. The result does not alias data.
func DecodeCommand(data []byte) (Command, error) {
	d := decoder{buf: data}
	c, err := d.command()
	if err != nil {
		return Command{}, fmt.Errorf("%w: %w", errDecode, err)
	}
	return c, nil
}

type decoder struct {
	buf []byte
	off int
}

func (d *decoder) command() (Command, error) {
	var c Command
	v, err := d.byte()
	if err != nil {
		return c, err
	}
	if v != commandVersion {
		return c, fmt.Errorf("unsupported version %d", v)
	}
	k, err := d.byte()
	if err != nil {
		return c, err
	}
	c.Kind = Kind(k)
	if c.ID, err = d.uvarint(); err != nil {
		return c, err
	}
	switch c.Kind {
	case KindPut:
		if c.Key, err = d.string(); err != nil {
			return c, err
		}
		if c.Value, err = d.bytes(); err != nil {
			return c, err
		}
	case KindDelete:
		if c.Key, err = d.string(); err != nil {
			return c, err
		}
	case KindCompareAndSet:
		if c.Key, err = d.string(); err != nil {
			return c, err
		}
		if c.ExpectModRev, err = d.int64(); err != nil {
			return c, err
		}
		if c.Value, err = d.bytes(); err != nil {
			return c, err
		}
	case KindBatch:
		if err := d.batch(&c); err != nil {
			return c, err
		}
	case KindCompact:
		if c.Rev, err = d.int64(); err != nil {
			return c, err
		}
	case KindLoad:
		if err := d.load(&c); err != nil {
			return c, err
		}
	case KindClear:
		if c.Prefixes, err = d.strings(); err != nil {
			return c, fmt.Errorf("prefixes: %w", err)
		}
	case KindFreeze:
		b, err := d.byte()
		if err != nil {
			return c, err
		}
		if b > 1 {
			return c, fmt.Errorf("frozen flag %d", b)
		}
		c.Frozen = b == 1
		if c.Prefixes, err = d.strings(); err != nil {
			return c, fmt.Errorf("prefixes: %w", err)
		}
	default:
		return c, fmt.Errorf("unknown kind %d", k)
	}
	if d.off != len(d.buf) {
		return c, fmt.Errorf("%d trailing bytes", len(d.buf)-d.off)
	}
	return c, nil
}

func (d *decoder) batch(c *Command) error {
	// Each cond takes at least 2 bytes and each op at least 2, so a count
	// larger than what is left cannot be honest: refusing it bounds the
	// slices allocated here by the input's size.
	n, err := d.count(2)
	if err != nil {
		return fmt.Errorf("conditions: %w", err)
	}
	if n > 0 {
		c.Conds = make([]store.Cond, n)
	}
	for i := range c.Conds {
		if c.Conds[i].Key, err = d.string(); err != nil {
			return fmt.Errorf("condition %d: %w", i, err)
		}
		if c.Conds[i].ModRevision, err = d.int64(); err != nil {
			return fmt.Errorf("condition %d: %w", i, err)
		}
	}
	if n, err = d.count(2); err != nil {
		return fmt.Errorf("ops: %w", err)
	}
	if n > 0 {
		c.Ops = make([]store.Op, n)
	}
	for i := range c.Ops {
		t, err := d.byte()
		if err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
		op := &c.Ops[i]
		op.Type = store.OpType(t)
		if op.Key, err = d.string(); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
		switch op.Type {
		case store.OpPut:
			if op.Value, err = d.bytes(); err != nil {
				return fmt.Errorf("op %d: %w", i, err)
			}
		case store.OpDelete:
		default:
			return fmt.Errorf("op %d: unknown type %d", i, t)
		}
	}
	return nil
}

func (d *decoder) load(c *Command) error {
	var err error
	if c.Rev, err = d.int64(); err != nil {
		return err
	}
	// A kv takes at least 4 bytes (key length, two revisions, value
	// length): the count is bounded by the input, as in batch.
	n, err := d.count(4)
	if err != nil {
		return fmt.Errorf("kvs: %w", err)
	}
	if n > 0 {
		c.KVs = make([]store.KV, n)
	}
	for i := range c.KVs {
		kv := &c.KVs[i]
		if kv.Key, err = d.string(); err != nil {
			return fmt.Errorf("kv %d: %w", i, err)
		}
		if kv.CreateRevision, err = d.int64(); err != nil {
			return fmt.Errorf("kv %d: %w", i, err)
		}
		if kv.ModRevision, err = d.int64(); err != nil {
			return fmt.Errorf("kv %d: %w", i, err)
		}
		if kv.Value, err = d.bytes(); err != nil {
			return fmt.Errorf("kv %d: %w", i, err)
		}
	}
	if c.Keys, err = d.strings(); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}

// strings reads what appendStrings wrote.
func (d *decoder) strings() ([]string, error) {
	n, err := d.count(1)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	ss := make([]string, n)
	for i := range ss {
		if ss[i], err = d.string(); err != nil {
			return nil, fmt.Errorf("%d: %w", i, err)
		}
	}
	return ss, nil
}

func (d *decoder) byte() (byte, error) {
	if d.off >= len(d.buf) {
		return 0, errors.New("truncated")
	}
	b := d.buf[d.off]
	d.off++
	return b, nil
}

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		return 0, errors.New("bad varint")
	}
	// binary.Uvarint accepts padded forms such as 0x80 0x00; only the
	// minimal one is ours, which keeps the encoding one-to-one.
	if n != uvarintLen(v) {
		return 0, errors.New("non-minimal varint")
	}
	d.off += n
	return v, nil
}

func (d *decoder) int64() (int64, error) {
	v, err := d.uvarint()
	return int64(v), err
}

func (d *decoder) count(minSize int) (int, error) {
	v, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if v > uint64((len(d.buf)-d.off)/minSize) {
		return 0, fmt.Errorf("count %d exceeds the remaining input", v)
	}
	return int(v), nil
}

func (d *decoder) raw() ([]byte, error) {
	v, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if v > uint64(len(d.buf)-d.off) {
		return nil, fmt.Errorf("length %d exceeds the remaining input", v)
	}
	b := d.buf[d.off : d.off+int(v)]
	d.off += int(v)
	return b, nil
}

func (d *decoder) string() (string, error) {
	b, err := d.raw()
	return string(b), err
}

// bytes returns a copy, so that a Command never aliases the entry it came
// from (raft may reuse that memory once Apply returns).
func (d *decoder) bytes() ([]byte, error) {
	b, err := d.raw()
	if err != nil {
		return nil, err
	}
	return append([]byte{}, b...), nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
