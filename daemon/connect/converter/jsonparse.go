package converter

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// This file is a small JSON reader that accepts what Kafka Connect's
// JsonConverter (Jackson's ObjectMapper.readTree, with leading zeros in
// numbers allowed) accepts, with Jackson's default limits, into a tree
// that keeps what the converter needs: number literals as text, object
// members in document order (a repeated name replaces the value in
// place), and the raw bytes of the envelope's schema for the schema cache.

type kind uint8

const (
	kMissing kind = iota // no content at all
	kNull
	kBool
	kNumber
	kString
	kArray
	kObject
	kRaw // the envelope's schema, not parsed yet
)

// Jackson's default StreamReadConstraints.
const (
	maxDepth     = 1000
	maxNumberLen = 1000
	maxStringLen = 20_000_000
	maxNameLen   = 50_000
)

type node struct {
	kind     kind
	b        bool   // kBool
	integral bool   // kNumber: no fraction and no exponent
	str      string // kString: the text; kNumber: the literal
	raw      []byte // kRaw
	elems    []node // kArray: elements; kObject: member values
	keys     []string
}

// get returns the value of member name of an object, or nil.
func (n *node) get(name string) *node {
	for i := range n.keys {
		if n.keys[i] == name {
			return &n.elems[i]
		}
	}
	return nil
}

func (k kind) String() string {
	return [...]string{"MISSING", "NULL", "BOOLEAN", "NUMBER", "STRING", "ARRAY", "OBJECT", "OBJECT"}[k]
}

// syntaxError is a JSON document Jackson would not read.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

type parser struct {
	data  []byte
	pos   int
	depth int
	// rawSchema leaves the top-level object's "schema" member unparsed
	// (kRaw), only checked.
	rawSchema bool
	// elems and keys stack the members of the arrays and objects being
	// read, which are copied out, sized, when each ends.
	elems []node
	keys  []string
}

// parseJSON reads the first JSON value of b, after an optional UTF-8 byte
// order mark; what follows it is ignored, as Jackson ignores it, except
// that a root-level number must end at white space.
func parseJSON(b []byte, rawSchema bool) (node, error) {
	p := parsers.Get().(*parser)
	defer p.release()
	p.data, p.pos, p.depth, p.rawSchema = b, 0, 0, rawSchema
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		p.pos = 3
	}
	p.ws()
	if p.pos == len(p.data) {
		return node{kind: kMissing}, nil
	}
	n, err := p.value(false)
	if err != nil {
		return node{}, err
	}
	if n.kind == kNumber && p.pos < len(p.data) && !isSpace(p.data[p.pos]) {
		return node{}, p.errorf("unexpected character %s: expected space separating root-level values", p.quote())
	}
	return n, nil
}

// parsers keep their member stacks from one document to the next.
var parsers = sync.Pool{New: func() any { return new(parser) }}

func (p *parser) release() {
	const keep = 1 << 12
	if cap(p.elems) > keep || cap(p.keys) > keep {
		return
	}
	clear(p.elems[:cap(p.elems)]) // let go of what the nodes refer to
	clear(p.keys[:cap(p.keys)])
	p.elems, p.keys, p.data = p.elems[:0], p.keys[:0], nil
	parsers.Put(p)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *parser) ws() {
	for p.pos < len(p.data) && isSpace(p.data[p.pos]) {
		p.pos++
	}
}

func (p *parser) errorf(format string, args ...any) error {
	return &syntaxError{msg: fmt.Sprintf(format, args...), off: p.pos}
}

func (p *parser) quote() string {
	if p.pos >= len(p.data) {
		return "end-of-input"
	}
	return strconv.QuoteRuneToASCII(rune(p.data[p.pos]))
}

// value reads one value; with skip it only checks it.
func (p *parser) value(skip bool) (node, error) {
	if p.pos >= len(p.data) {
		return node{}, p.errorf("unexpected end-of-input: expected a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(skip)
	case c == '[':
		return p.array(skip)
	case c == '"':
		s, err := p.string(skip, maxStringLen)
		return node{kind: kString, str: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(skip)
	case c == 't':
		return node{kind: kBool, b: true}, p.literal("true")
	case c == 'f':
		return node{kind: kBool}, p.literal("false")
	case c == 'n':
		return node{kind: kNull}, p.literal("null")
	default:
		return node{}, p.errorf("unexpected character %s: expected a value", p.quote())
	}
}

func (p *parser) literal(word string) error {
	end := p.pos + len(word)
	if end > len(p.data) || string(p.data[p.pos:end]) != word || (end < len(p.data) && isTokenChar(p.data[end])) {
		return p.errorf("unrecognized token: expected %s", word)
	}
	p.pos = end
	return nil
}

// isTokenChar tells whether c would continue a token that Jackson reads
// as one word ("truex" is not true followed by x).
func isTokenChar(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("document nesting depth (%d) exceeds the maximum allowed (%d)", p.depth, maxDepth)
	}
	p.pos++
	p.ws()
	return nil
}

func (p *parser) array(skip bool) (node, error) {
	if err := p.enter(); err != nil {
		return node{}, err
	}
	mark := len(p.elems)
	defer func() { p.elems = p.elems[:mark] }()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return node{kind: kArray}, nil
	}
	for {
		e, err := p.value(skip)
		if err != nil {
			return node{}, err
		}
		if !skip {
			p.elems = append(p.elems, e)
		}
		p.ws()
		if p.pos >= len(p.data) {
			return node{}, p.errorf("unexpected end-of-input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.ws()
		case ']':
			p.pos++
			p.depth--
			if skip {
				return node{kind: kArray}, nil
			}
			return node{kind: kArray, elems: slices.Clone(p.elems[mark:])}, nil
		default:
			return node{}, p.errorf("unexpected character %s: expected ',' or ']'", p.quote())
		}
	}
}

func (p *parser) object(skip bool) (node, error) {
	top := p.depth == 0
	if err := p.enter(); err != nil {
		return node{}, err
	}
	mark, keyMark := len(p.elems), len(p.keys)
	defer func() { p.elems, p.keys = p.elems[:mark], p.keys[:keyMark] }()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return node{kind: kObject}, nil
	}
	var index map[string]int // of members, for large objects
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return node{}, p.errorf("unexpected character %s: expected a field name", p.quote())
		}
		key, err := p.string(skip, maxNameLen)
		if err != nil {
			return node{}, err
		}
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return node{}, p.errorf("unexpected character %s: expected ':'", p.quote())
		}
		p.pos++
		p.ws()
		var v node
		if top && p.rawSchema && key == "schema" {
			start := p.pos
			if _, err := p.value(true); err != nil {
				return node{}, err
			}
			v = node{kind: kRaw, raw: p.data[start:p.pos]}
		} else if v, err = p.value(skip); err != nil {
			return node{}, err
		}
		if !skip {
			index = p.member(mark, keyMark, key, v, index)
		}
		p.ws()
		if p.pos >= len(p.data) {
			return node{}, p.errorf("unexpected end-of-input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.ws()
		case '}':
			p.pos++
			p.depth--
			if skip {
				return node{kind: kObject}, nil
			}
			return node{kind: kObject, keys: slices.Clone(p.keys[keyMark:]), elems: slices.Clone(p.elems[mark:])}, nil
		default:
			return node{}, p.errorf("unexpected character %s: expected ',' or '}'", p.quote())
		}
	}
}

// member adds a member to the object whose members start at the marks, or
// replaces the value of a repeated name where it first appeared, as
// Jackson's ObjectNode does. Past a few members it finds repeated names
// through index, which it creates and returns.
func (p *parser) member(mark, keyMark int, key string, v node, index map[string]int) map[string]int {
	const small = 16
	keys := p.keys[keyMark:]
	if index == nil && len(keys) >= small {
		index = make(map[string]int, 2*small)
		for i, k := range keys {
			index[k] = i
		}
	}
	if index != nil {
		if i, ok := index[key]; ok {
			p.elems[mark+i] = v
			return index
		}
		index[key] = len(keys)
	} else if i := slices.Index(keys, key); i >= 0 {
		p.elems[mark+i] = v
		return nil
	}
	p.keys = append(p.keys, key)
	p.elems = append(p.elems, v)
	return index
}
