package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"
)

// ErrDamaged is wrapped by the errors that report a state file whose bytes
// cannot be what kcd wrote: a damaged page, an impossible record.
var ErrDamaged = errors.New("fsm: state file is damaged")

// damaged is the error of a damaged file at path.
func damaged(path string, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrDamaged, path, fmt.Sprintf(format, args...))
}

// recoverDamage turns a panic of bbolt (its assertions on pages it reads,
// an index out of range on a damaged element) into an error naming the
// file. Deferred by every call into bbolt that reads pages.
func recoverDamage(path string, err *error) {
	if r := recover(); r != nil {
		*err = damaged(path, "bbolt failed reading it: %v", r)
	}
}

// The parts of bbolt's file format (version 2) checkFile reads. bbolt
// writes its structures in the machine's byte order.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16
	elementSize     = 16 // branch and leaf elements alike
	metaSize        = 64
	metaSumSize     = 56 // the meta's bytes its checksum covers
	bucketHeader    = 16 // root page id, sequence
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	metaPageFlag    = 0x04
	freelistFlag    = 0x10
	bucketLeafFlag  = 0x01
	noFreelist      = ^uint64(0)
	maxCheckedDepth = 64
)

var ne = binary.NativeEndian

// boltMeta is what checkFile needs of a meta page.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64 // high water mark: pages at or above it are not in use
	txid     uint64
}

// checkFile walks every page of the bbolt file at path that is in use,
// with bounds checked, before bbolt opens it. bbolt trusts its pages: a
// damaged one makes it panic (its page assertions), or read outside the
// file, whenever it is read; at Open, bbolt reads them to find the free
// pages (NoFreelistSync) in a goroutine of its own, where no recover can
// catch a panic. A missing or empty file passes: bbolt creates it. Values
// are not checked (bbolt keeps no checksum of them); the members' state
// hashes catch a changed value.
func checkFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fsm: open %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("fsm: open %s: %w", path, err)
	}
	if info.Size() == 0 {
		return nil
	}
	c := &fileCheck{f: f, path: path, size: info.Size(), seen: map[uint64]bool{}}
	return c.run()
}

type fileCheck struct {
	f    *os.File
	path string
	size int64
	m    boltMeta
	seen map[uint64]bool
	buf  []byte
}

func (c *fileCheck) run() error {
	var metas []boltMeta
	var reasons []string
	m0, err := c.readMeta(0, 0)
	if err == nil {
		metas = append(metas, m0)
	} else {
		reasons = append(reasons, err.Error())
	}
	pageSize := int64(os.Getpagesize())
	if err == nil {
		pageSize = int64(m0.pageSize)
	}
	if m1, err := c.readMeta(1, pageSize); err == nil {
		metas = append(metas, m1)
	} else {
		reasons = append(reasons, err.Error())
	}
	if len(metas) == 0 {
		// bbolt refuses such a file with an error of its own, but a
		// clearer one helps.
		return damaged(c.path, "no valid meta page (%s)", strings.Join(reasons, "; "))
	}
	c.m = metas[0]
	if len(metas) == 2 && metas[1].txid > metas[0].txid {
		c.m = metas[1]
	}
	if int64(c.m.pgid)*int64(c.m.pageSize) > c.size {
		return damaged(c.path, "the file holds %d bytes, its meta page says %d pages of %d", c.size, c.m.pgid, c.m.pageSize)
	}
	if c.m.freelist != noFreelist {
		if _, _, err := c.readPage(c.m.freelist, freelistFlag); err != nil {
			return err
		}
	}
	return c.bucket(c.m.root, nil, 0)
}

// readMeta reads and validates meta page id at offset off.
func (c *fileCheck) readMeta(id uint64, off int64) (boltMeta, error) {
	var b [pageHeaderSize + metaSize]byte
	if _, err := c.f.ReadAt(b[:], off); err != nil {
		return boltMeta{}, fmt.Errorf("meta page %d: %v", id, err)
	}
	if flags := ne.Uint16(b[8:]); flags != metaPageFlag {
		return boltMeta{}, fmt.Errorf("meta page %d: page flags %#x", id, flags)
	}
	mb := b[pageHeaderSize:]
	if ne.Uint32(mb[0:]) != boltMagic || ne.Uint32(mb[4:]) != boltVersion {
		return boltMeta{}, fmt.Errorf("meta page %d: not a bbolt version 2 meta", id)
	}
	h := fnv.New64a()
	h.Write(mb[:metaSumSize])
	if h.Sum64() != ne.Uint64(mb[metaSumSize:]) {
		return boltMeta{}, fmt.Errorf("meta page %d: checksum mismatch", id)
	}
	m := boltMeta{
		pageSize: ne.Uint32(mb[8:]),
		root:     ne.Uint64(mb[16:]),
		freelist: ne.Uint64(mb[32:]),
		pgid:     ne.Uint64(mb[40:]),
		txid:     ne.Uint64(mb[48:]),
	}
	if m.pageSize < 1024 || m.pageSize > 1<<20 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("meta page %d: page size %d", id, m.pageSize)
	}
	return m, nil
}

// readPage reads page id, whose flags must be want, with its overflow
// pages, and returns its bytes (valid until the next read) and its count
// of elements.
func (c *fileCheck) readPage(id uint64, want uint16) ([]byte, int, error) {
	if id < 2 || id >= c.m.pgid {
		return nil, 0, damaged(c.path, "a reference to page %d, outside the pages in use [2, %d)", id, c.m.pgid)
	}
	if c.seen[id] {
		return nil, 0, damaged(c.path, "page %d is referenced twice", id)
	}
	c.seen[id] = true
	ps := int64(c.m.pageSize)
	var hdr [pageHeaderSize]byte
	if _, err := c.f.ReadAt(hdr[:], int64(id)*ps); err != nil {
		return nil, 0, damaged(c.path, "page %d: %v", id, err)
	}
	if got := ne.Uint64(hdr[0:]); got != id {
		return nil, 0, damaged(c.path, "page %d says it is page %d", id, got)
	}
	flags, count, overflow := ne.Uint16(hdr[8:]), int(ne.Uint16(hdr[10:])), uint64(ne.Uint32(hdr[12:]))
	if flags != want && !(want == branchPageFlag|leafPageFlag && (flags == branchPageFlag || flags == leafPageFlag)) {
		return nil, 0, damaged(c.path, "page %d has type flags %#x, want %#x", id, flags, want)
	}
	if id+overflow >= c.m.pgid {
		return nil, 0, damaged(c.path, "page %d overflows by %d pages past the pages in use (%d)", id, overflow, c.m.pgid)
	}
	n := int64(overflow+1) * ps
	if cap(c.buf) < int(n) {
		c.buf = make([]byte, n)
	}
	buf := c.buf[:n]
	if _, err := c.f.ReadAt(buf, int64(id)*ps); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, damaged(c.path, "page %d: %v", id, err)
	}
	return buf, count, nil
}

// bucket checks the tree of the bucket whose root page is root, or, for an
// inline bucket (root 0), the page held in its value.
func (c *fileCheck) bucket(root uint64, inline []byte, depth int) error {
	if depth > maxCheckedDepth {
		return damaged(c.path, "buckets nested deeper than %d", maxCheckedDepth)
	}
	if root == 0 {
		if len(inline) < pageHeaderSize {
			return damaged(c.path, "an inline bucket of %d bytes", len(inline))
		}
		if flags := ne.Uint16(inline[8:]); flags != leafPageFlag {
			return damaged(c.path, "an inline bucket page with flags %#x", flags)
		}
		return c.elements(0, leafPageFlag, append([]byte(nil), inline...), int(ne.Uint16(inline[10:])), depth)
	}
	return c.page(root, depth)
}

// page checks page id of a bucket's tree and what hangs below it.
func (c *fileCheck) page(id uint64, depth int) error {
	if depth > maxCheckedDepth {
		return damaged(c.path, "a tree deeper than %d pages at page %d", maxCheckedDepth, id)
	}
	buf, count, err := c.readPage(id, branchPageFlag|leafPageFlag)
	if err != nil {
		return err
	}
	// A copy: the children are read into the same buffer.
	p := append([]byte(nil), buf...)
	return c.elements(id, ne.Uint16(p[8:]), p, count, depth)
}

// elements checks the elements of page p (id 0: inline): every key and
// value inside the page, keys in order, and the pages and buckets they
// point to.
func (c *fileCheck) elements(id uint64, flags uint16, p []byte, count, depth int) error {
	if pageHeaderSize+count*elementSize > len(p) {
		return damaged(c.path, "page %d claims %d elements, more than it holds", id, count)
	}
	var prev []byte
	for i := range count {
		e := p[pageHeaderSize+i*elementSize:]
		off := pageHeaderSize + i*elementSize
		var pos, ksize, vsize uint64
		if flags == branchPageFlag {
			pos, ksize = uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
		} else {
			pos, ksize, vsize = uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		}
		start := uint64(off) + pos
		if start+ksize+vsize > uint64(len(p)) {
			return damaged(c.path, "page %d element %d lies outside the page", id, i)
		}
		key := p[start : start+ksize]
		if i > 0 && bytes.Compare(prev, key) >= 0 {
			return damaged(c.path, "page %d element %d: keys out of order", id, i)
		}
		prev = key
		if flags == branchPageFlag {
			if err := c.page(ne.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		if ne.Uint32(e[0:])&bucketLeafFlag == 0 {
			continue
		}
		v := p[start+ksize : start+ksize+vsize]
		if len(v) < bucketHeader {
			return damaged(c.path, "page %d element %d: a bucket header of %d bytes", id, i, len(v))
		}
		if err := c.bucket(ne.Uint64(v[0:]), v[bucketHeader:], depth+1); err != nil {
			return err
		}
	}
	return nil
}
