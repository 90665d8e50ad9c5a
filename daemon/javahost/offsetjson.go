package javahost

import (
	"encoding/json"
	"unicode/utf8"
)

// maxCachedPartitions bounds a task's cache of decoded source partitions.
const maxCachedPartitions = 4096

// partitionCache keeps one decoded map per distinct source partition
// encoding: a task's records name few partitions, so they share one map,
// which the worker compares by pointer, and one string of the encoding.
// The maps are read-only.
type partitionCache map[string]cachedPartition

type cachedPartition struct {
	m    map[string]any
	json string // the host's bytes: Kafka Connect's JSON of the Java map, in its order
}

func (c partitionCache) decode(b []byte) (map[string]any, string, error) {
	if len(b) == 0 {
		return nil, "", nil
	}
	if p, ok := c[string(b)]; ok {
		return p.m, p.json, nil
	}
	m, err := decodeJSONMap(b)
	if err != nil {
		return nil, "", err
	}
	if len(c) >= maxCachedPartitions {
		clear(c)
	}
	p := cachedPartition{m: m, json: string(b)}
	c[p.json] = p
	return m, p.json, nil
}

// decodeFlat decodes a JSON object whose values are all numbers, strings
// without escapes, booleans or null — what source partitions and offsets
// almost always are — as encoding/json with UseNumber would, without its
// reflection. ok is false for anything else, which the caller decodes with
// encoding/json.
func decodeFlat(b []byte) (m map[string]any, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	m = map[string]any{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return m, skipSpace(b, i+1) == len(b)
	}
	for {
		k, j, ok := plainString(b, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return nil, false
		}
		var v any
		switch c := b[i]; {
		case c == '"':
			s, j, ok := plainString(b, i)
			if !ok {
				return nil, false
			}
			v, i = s, j
		case c == '-' || (c >= '0' && c <= '9'):
			j, ok := number(b, i)
			if !ok {
				return nil, false
			}
			v, i = json.Number(b[i:j]), j
		case hasWord(b, i, "true"):
			v, i = true, i+4
		case hasWord(b, i, "false"):
			v, i = false, i+5
		case hasWord(b, i, "null"):
			v, i = nil, i+4
		default:
			return nil, false
		}
		m[k] = v
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return m, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func hasWord(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}

// plainString reads a JSON string at b[i] with no escapes, no control
// characters and valid UTF-8; it returns the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			if !utf8.Valid(s) {
				return "", 0, false
			}
			return string(s), j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

// number reads a JSON number at b[i] (RFC 8259 grammar) and returns the
// index after it.
func number(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	return i, true
}
