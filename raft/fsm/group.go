package fsm

import (
	"encoding/binary"
	"fmt"
)

// groupVersion is the first byte of an entry that carries several commands
// proposed together (a command starts with commandVersion instead): a
// uvarint count, then each command as a uvarint length and its encoding.
// Apply applies each as if it had an entry of its own at the group's index,
// in order, each with its own Result. One entry for many commands spares
// raft, the WAL and the transport their work per entry.
const groupVersion = 0x80

// AppendGroup appends to dst the entry data of a group of encoded commands
// (what EncodeCommand returned for each).
func AppendGroup(dst []byte, cmds [][]byte) []byte {
	dst = append(dst, groupVersion)
	dst = binary.AppendUvarint(dst, uint64(len(cmds)))
	for _, c := range cmds {
		dst = appendBytes(dst, c)
	}
	return dst
}

// GroupSize is the size of AppendGroup's encoding of cmds.
func GroupSize(cmds [][]byte) int {
	n := 1 + uvarintLen(uint64(len(cmds)))
	for _, c := range cmds {
		n += uvarintLen(uint64(len(c))) + len(c)
	}
	return n
}

func isGroup(data []byte) bool { return len(data) > 0 && data[0] == groupVersion }

// eachInGroup calls fn with each command of a group entry, in order. A
// malformed group is an error before fn is called at all, so that it is
// applied either whole or not at all.
func eachInGroup(data []byte, fn func(cmd []byte) error) error {
	d := decoder{buf: data, off: 1}
	n, err := d.count(1)
	if err != nil {
		return fmt.Errorf("%w: group: %w", errDecode, err)
	}
	start := d.off
	for i := 0; i < n; i++ {
		if _, err := d.raw(); err != nil {
			return fmt.Errorf("%w: group command %d: %w", errDecode, i, err)
		}
	}
	if d.off != len(data) {
		return fmt.Errorf("%w: group: %d trailing bytes", errDecode, len(data)-d.off)
	}
	d.off = start
	for range n {
		cmd, _ := d.raw()
		if err := fn(cmd); err != nil {
			return err
		}
	}
	return nil
}
